package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/ui"
)

// TestToolsDrawRuleThresholds: with a tool_retry_rate rule loaded (10%,
// fetch_url overridden to 50%) and nothing firing, the tools page draws
// the thresholds from the rules: SendAgentRun's two tools, web_search at
// the rule's 10% and fetch_url at its override's 50%, one dashed line each
// on the retry chart.
func TestToolsDrawRuleThresholds(t *testing.T) {
	rules, err := alerts.ParseRules([]byte(`
rules:
  - name: Retries
    kind: tool_retry_rate
    threshold: 0.10
    overrides: [{tool: fetch_url, threshold: 0.50}]
  - name: ModelSlow
    kind: model_latency_p95
    threshold: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		reader := query.NewReader(o.Store)
		o.Server.UI = ui.Handler(ui.WithRuns(reader, api.RequestProject))
		ev, err := alerts.NewEvaluator(alerts.Config{Rules: rules, Source: reader})
		if err != nil {
			t.Fatal(err)
		}
		o.API.Alerts = ev
	})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: time.Now().Add(-time.Hour).Truncate(time.Millisecond)})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/tools?since=24h")
	waitFor(t, ctx, `!!document.querySelector('#tools-table')`)
	got := run(t, ctx, "thresholds", chromedp.Evaluate[[]string](`[...document.querySelectorAll('.panel')[0].querySelectorAll('line.threshold title')].map(t => t.textContent).sort()`))
	if len(got) != 2 || got[0] != "alert threshold 10.0%" || got[1] != "alert threshold 50.0%" {
		t.Errorf("retry chart thresholds %q, want 10.0%% and 50.0%%", got)
	}
	// Every model call of the run takes more than 1 ms: each model's p95 is
	// marked above the model rule's threshold.
	rows := run(t, ctx, "model rows", chromedp.Evaluate[int](`document.querySelectorAll('#models-table tbody tr').length`))
	marked := run(t, ctx, "marked p95", chromedp.Evaluate[int](`document.querySelectorAll('#models-table tbody .pill.error').length`))
	if rows == 0 || marked != rows {
		t.Errorf("%d of %d models marked above the 1 ms threshold, want all", marked, rows)
	}
}

package ui_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/ui"
)

// TestAlertsLeadSomewhere: the alerts page lists the loaded rules with
// threshold, window, severity and state, a firing alert shows its time in
// state and a link to all matching runs (which lists the run), the history
// lists its episode, and every page's navigation carries the number firing. The run is SendAgentRun's,
// $0.007465 (see runCostUSD): over the $0.005 budget, under $0.05.
func TestAlertsLeadSomewhere(t *testing.T) {
	ruleSet := tallytest.BudgetRules(t)
	var ev *alerts.Evaluator
	tally := tallytest.Start(t, func(o *tallytest.Config) {
		reader := query.NewReader(o.Store)
		o.Server.UI = ui.Handler(ui.WithRuns(reader, api.RequestProject))
		var err error
		if ev, err = alerts.NewEvaluator(alerts.Config{Rules: ruleSet, Source: reader}); err != nil {
			t.Fatal(err)
		}
		o.API.Alerts = ev
	})
	id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: time.Now().Add(-time.Hour).Truncate(time.Millisecond)})
	if err := ev.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/alerts")
	waitFor(t, ctx, `!!document.querySelector('#alert-rules') && !!document.querySelector('#alerts-firing')`)

	type ruleRow struct {
		Name  string   `json:"name"`
		Cells []string `json:"cells"`
	}
	rows := run(t, ctx, "rules", chromedp.Evaluate[[]ruleRow](`[...document.querySelectorAll('#alert-rules tbody tr')].map(r => ({name: r.dataset.rule, cells: [...r.querySelectorAll('td')].map(td => td.textContent.trim())}))`))
	if len(rows) != 2 || rows[0].Name != "budget_low" || rows[1].Name != "budget_high" {
		t.Fatalf("rules table %+v, want budget_low then budget_high", rows)
	}
	low := strings.Join(rows[0].Cells, " | ")
	for _, w := range []string{"A run spent more than half a cent.", "$0.005", "2h", "page", "1 firing", "runbook"} {
		if !strings.Contains(low, w) {
			t.Errorf("budget_low row %q lacks %q", low, w)
		}
	}
	if high := strings.Join(rows[1].Cells, " | "); !strings.Contains(high, "$0.05") || !strings.Contains(high, "ok") {
		t.Errorf("budget_high row %q: want $0.05 and ok", high)
	}
	if badge := run(t, ctx, "nav badge", chromedp.Text(chromedp.CSS("#nav-firing"))); badge != "1" {
		t.Errorf("nav badge %q, want 1", badge)
	}
	// The history lists the episode under way: budget_low, still firing, at
	// the run's $0.007465 (shown $0.00747) over the $0.005 budget.
	hist := run(t, ctx, "history", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#alert-history tbody tr')].map(r => r.textContent)`))
	if len(hist) != 1 || !strings.Contains(hist[0], "budget_low") || !strings.Contains(hist[0], "still firing") ||
		!strings.Contains(hist[0], "$0.00747") || !strings.Contains(hist[0], "$0.005") {
		t.Errorf("history rows %q: want budget_low still firing at $0.00747 over $0.005", hist)
	}
	// The firing alert links its example run and all matching runs.
	firing := run(t, ctx, "firing row", chromedp.Text(chromedp.CSS("#alerts-firing tbody tr")))
	if !strings.Contains(firing, id[:8]) || !strings.Contains(firing, "all matching runs") {
		t.Errorf("firing row %q: want run %s and the all-runs link", firing, id[:8])
	}
	run(t, ctx, "all matching runs", chromedp.Click(chromedp.CSS("#alerts-firing a.all-runs")))
	waitFor(t, ctx, `location.pathname === '/runs' && !!document.querySelector('#runs table')`)
	ids := run(t, ctx, "listed runs", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.traceId)`))
	if len(ids) != 1 || ids[0] != id {
		t.Errorf("all matching runs lists %v, want [%s]", ids, id)
	}
	// The badge is on every page.
	if badge := run(t, ctx, "nav badge on runs", chromedp.Text(chromedp.CSS("#nav-firing"))); badge != "1" {
		t.Errorf("nav badge on the runs page %q, want 1", badge)
	}
}

package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/conformance"
	"github.com/tallyhq/tally/internal/tallytest"
)

// TestCostConfidenceShown sends a call traced by OpenTelemetry's openai-v2
// instrumentation, which never reports cached tokens (conformance scenario
// otel-py-openai-v2-openai-chat-cached: $0.00925, an upper bound), and an
// OpenLLMetry Anthropic call it bills exactly ($0.00927), and checks what
// a user sees: the run list marks the first cost "≤" and not the second;
// the run page says why, naming the instrumentation; the span's derivation
// names the rule; the costs page says half the spend is exact
// (0.00927 / (0.00925 + 0.00927) = 50.05%).
func TestCostConfidenceShown(t *testing.T) {
	tally := startTally(t)
	bound := tallytest.SendScenario(t, tally.URL, "otel-py-openai-v2-openai-chat-cached")
	exact := tallytest.SendScenario(t, tally.URL, "openllmetry-py-anthropic-cache")
	ctx := newBrowser(t)
	window := "since=" + conformance.Start.Add(-time.Hour).Format("2006-01-02T15:04:05Z") + "&until=" + conformance.Start.Add(time.Hour).Format("2006-01-02T15:04:05Z")

	open(t, ctx, tally.URL+"/runs?"+window)
	waitFor(t, ctx, `document.querySelectorAll('#runs tbody tr').length === 2`)
	marks := run(t, ctx, "marks", chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#runs tbody tr')].map(r => [r.dataset.traceId, r.querySelector('[data-confidence]')?.textContent || '']))`))
	if marks[bound.TraceID()] != "≤" || marks[exact.TraceID()] != "" {
		t.Errorf("cost marks %v, want ≤ on %s and none on %s", marks, bound.TraceID(), exact.TraceID())
	}

	open(t, ctx, tally.URL+"/runs/"+bound.TraceID())
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	why := run(t, ctx, "why", chromedp.Text(chromedp.CSS("#run-confidence")))
	for _, want := range []string{"upper bound", "opentelemetry-instrumentation-openai-v2", "cached_tokens"} {
		if !strings.Contains(why, want) {
			t.Errorf("the run page's confidence note lacks %q:\n%s", want, why)
		}
	}
	run(t, ctx, "select the call", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-type="inference"] .name`)))
	waitFor(t, ctx, `!!document.querySelector('#explain-confidence')`)
	if got := run(t, ctx, "explain", chromedp.Text(chromedp.CSS("#explain-confidence"))); !strings.Contains(got, "upper_bound") || !strings.Contains(got, "otel-openai-v2-no-cache-read") {
		t.Errorf("the derivation's confidence %q, want upper_bound by rule otel-openai-v2-no-cache-read", got)
	}

	open(t, ctx, tally.URL+"/costs?"+window)
	waitFor(t, ctx, `!!document.querySelector('#cost-exact')`)
	if got := run(t, ctx, "exact share", chromedp.Text(chromedp.CSS("#cost-exact"))); got != "50.1%" {
		t.Errorf("exact spend %q, want 50.1%% (0.00927 of 0.01852)", got)
	}
}

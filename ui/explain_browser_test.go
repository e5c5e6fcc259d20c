package ui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestRunPageExplainsDerivation sends an OpenLLMetry Anthropic call with
// prompt caching (conformance scenario openllmetry-py-anthropic-cache) and
// checks what a user sees in the span's "How these numbers were derived"
// section: the reading, that the span counts, and Anthropic's bill line by
// line — 40 × $3 + 8,000 × $0.30 + 1,000 × $3.75 + 200 × $15 per million.
func TestRunPageExplainsDerivation(t *testing.T) {
	tally := startTally(t)
	sc := tallytest.SendScenario(t, tally.URL, "openllmetry-py-anthropic-cache")
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs/"+sc.TraceID())
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	run(t, ctx, "select the call", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-type="inference"] .name`)))
	waitFor(t, ctx, `!!document.querySelector('#explain-cost')`)
	text := run(t, ctx, "explanation", chromedp.Text(chromedp.CSS("#detail-explain")))
	for _, want := range []string{
		"openllmetry-anthropic",
		"counted: its own usage of one call",
		"input includes cache: 9040 stands",
		"uncached input 40 × $3/M = $0.00012",
		"cache read 8000 × $0.3/M = $0.0024",
		"cache write 1000 × $3.75/M = $0.00375",
		"output (reasoning included) 200 × $15/M = $0.003",
		"total $0.00927",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
}

package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/server"
	"github.com/tallyhq/tally/ui"
)

// TestRunPageSafetySignals: tallytest.SendSafetyRun's run under its policy
// raises a duplicate side effect (the second charge) and an unsafe retry
// (the second refund). The run page lists both in its safety review and
// badges exactly those two rows; the first refund's detail shows its
// effect class and terminal status.
func TestRunPageSafetySignals(t *testing.T) {
	policy, err := safety.ParsePolicy(tallytest.SafetyPolicy)
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t, func(o *server.Options) {
		o.Reader = query.NewReader(o.Store, query.WithToolEffects(policy))
		o.UI = ui.Handler(ui.WithRuns(o.Reader, api.RequestProject))
	})
	id, spans := tallytest.SendSafetyRun(t, tally.URL, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs/"+id)
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	review := run(t, ctx, "review", chromedp.Text(chromedp.CSS("#run-signals")))
	if !strings.Contains(review, "duplicate_side_effect") || !strings.Contains(review, "unsafe_retry") {
		t.Errorf("safety review %q: want both signals", review)
	}
	badged := run(t, ctx, "badges", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#wf-rows .wf-row .mark.sig')].map(m => m.closest('.wf-row').dataset.spanId + ':' + m.dataset.signal)`))
	want := []string{spans["charge2"] + ":duplicate_side_effect", spans["refund2"] + ":unsafe_retry"}
	if strings.Join(badged, ",") != strings.Join(want, ",") {
		t.Errorf("badged rows %v, want %v", badged, want)
	}
	run(t, ctx, "select refund1", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-span-id="`+spans["refund1"]+`"] .name`)))
	waitFor(t, ctx, `!!document.getElementById('detail-name')`)
	detail := run(t, ctx, "detail", chromedp.Text(chromedp.CSS("#detail")))
	if !strings.Contains(detail, "non_idempotent") || !strings.Contains(detail, "ambiguous") {
		t.Errorf("refund detail lacks effect non_idempotent / status ambiguous:\n%.400s", detail)
	}
}

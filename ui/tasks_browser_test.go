package ui_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestTasksPage: ten runs of one task (the real OTel Go SDK), seven
// recorded passed and three failed through the API. The Tasks page shows,
// by hand: pass rate 70.0% (7/10); pass^3 = C(7,3)/C(10,3) = 35/120 =
// 29.2%; pass^5 = C(7,5)/C(10,5) = 21/252 = 8.33%; pass@3 = 1 − 1/120 =
// 99.2%; and the newest failed run among the links.
func TestTasksPage(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond).UTC()
	var last string
	for i := range 10 {
		id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base.Add(time.Duration(i) * time.Minute)})
		body := fmt.Sprintf(`{"name":"resolved","passed":%v}`, i < 7)
		resp, err := http.Post(tally.URL+"/api/v1/runs/"+id+"/outcomes", "application/json", strings.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("post outcome: %v %v", err, resp)
		}
		resp.Body.Close()
		last = id
	}
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/tasks")
	waitFor(t, ctx, `!!document.querySelector('#tasks-table tbody tr[data-task="triage_ticket"]')`)
	cell := func(sel string) string {
		return run(t, ctx, sel, chromedp.Text(chromedp.CSS(`#tasks-table tr[data-task="triage_ticket"] `+sel)))
	}
	if got := cell("[data-pass-rate]"); got != "70.0%" {
		t.Errorf("pass rate %q, want 70.0%%", got)
	}
	if got := cell(`[data-pass-hat="3"]`); got != "29.2%" {
		t.Errorf("pass^3 %q, want 29.2%%", got)
	}
	if got := cell(`[data-pass-hat="5"]`); got != "8.33%" {
		t.Errorf("pass^5 %q, want 8.33%%", got)
	}
	row := cell("")
	if !strings.Contains(row, "99.2%") || !strings.Contains(row, last[:8]) {
		t.Errorf("row %q: want pass@3 99.2%% and failed run %s", row, last[:8])
	}
	// The run page shows the run's outcome: the failed newest run.
	open(t, ctx, tally.URL+"/runs/"+last)
	waitFor(t, ctx, `!!document.querySelector('#run-outcomes [data-outcome="resolved"]')`)
	if got := run(t, ctx, "outcome", chromedp.Text(chromedp.CSS(`#run-outcomes [data-outcome="resolved"]`))); got != "resolved: failed" {
		t.Errorf("run outcome %q, want resolved: failed", got)
	}
	open(t, ctx, tally.URL+"/tasks")
	// The page's range is 7 days by default, as the API's and the CLI's.
	if sel := run(t, ctx, "range", chromedp.Evaluate[string](`document.getElementById('f-since').value`)); sel != "7d" {
		t.Errorf("default range %q, want 7d", sel)
	}
}

package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestRunsListLive: with Live on (here every 2 s, live=2), a run sent after
// the page opened appears at the top without a reload, marked new; with it
// off, the list stays as drawn.
func TestRunsListLive(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	first := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs?since=1h&live=2")
	waitFor(t, ctx, `document.querySelectorAll('#runs-table tbody tr').length === 1`)
	if on := run(t, ctx, "live box", chromedp.Evaluate[bool](`document.getElementById('live').checked`)); !on {
		t.Fatal("live=2 in the URL did not turn Live on")
	}
	run(t, ctx, "mark the page", chromedp.Evaluate[bool](`window.tallyNoReload = true`))
	second := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base.Add(time.Minute)})
	waitFor(t, ctx, `document.querySelectorAll('#runs-table tbody tr').length === 2`)
	ids := run(t, ctx, "rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#runs-table tbody tr')].map(r => r.dataset.traceId + (r.dataset.new ? ' new' : ''))`))
	if len(ids) != 2 || ids[0] != second+" new" || ids[1] != first {
		t.Errorf("rows after the refresh %v, want [%s new, %s]", ids, second, first)
	}
	if !run(t, ctx, "same page", chromedp.Evaluate[bool](`window.tallyNoReload === true`)) {
		t.Error("the page reloaded instead of refreshing the list")
	}

	// Off: a third run does not appear (the list is redrawn only by Live).
	run(t, ctx, "live off", chromedp.Click(chromedp.CSS("#live")))
	if url := run(t, ctx, "url", chromedp.Evaluate[string](`location.search`)); url != "?since=1h" {
		t.Errorf("URL with Live off %q, want ?since=1h", url)
	}
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base.Add(2 * time.Minute)})
	time.Sleep(5 * time.Second) // two and a half refresh periods
	if n := run(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('#runs-table tbody tr').length`)); n != 2 {
		t.Errorf("%d rows with Live off, want the 2 drawn", n)
	}
}

// TestRunsLiveOffCancelsRefresh is issue #36's defect: a refresh already
// in flight when Live was turned off still redrew the list (on a loaded
// machine TestRunsListLive saw 3 rows with Live off). Here the page's
// fetches of the run list start 1.5 s late, Live goes off while one is
// pending, and a second run is stored before it starts: the cancelled
// refresh must draw nothing.
func TestRunsLiveOffCancelsRefresh(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Millisecond)
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base})
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs?since=1h&live=2")
	waitFor(t, ctx, `document.querySelectorAll('#runs-table tbody tr').length === 1`)
	run(t, ctx, "slow run-list fetches", chromedp.Evaluate[bool](`(() => {
		window.slowRuns = { started: 0, settled: 0 };
		const realFetch = window.fetch;
		window.fetch = (url, opts) => {
			if (!String(url).startsWith('/api/v1/runs?')) return realFetch(url, opts);
			window.slowRuns.started++;
			return new Promise((res) => setTimeout(res, 1500)).then(() => realFetch(url, opts))
				.finally(() => setTimeout(() => { window.slowRuns.settled++; }, 50));
		};
		return true;
	})()`))
	waitFor(t, ctx, `window.slowRuns.started >= 1`)
	run(t, ctx, "live off", chromedp.Click(chromedp.CSS("#live")))
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base.Add(time.Minute)})
	waitFor(t, ctx, `window.slowRuns.settled >= window.slowRuns.started`)
	if n := run(t, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('#runs-table tbody tr').length`)); n != 1 {
		t.Errorf("%d rows after Live was turned off mid-refresh, want the 1 drawn", n)
	}
}

package ui_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestComparePage: version 1.0 of a task passes 9 of 10 runs (by status),
// 1.1 3 of 10 (the real OTel Go SDK). The compare page lists both versions
// and, by default, sets the newest against the one before it: pass rate
// 90.0% → 30.0%, −60.0 points (−66.7%), worse beyond noise (Fisher p =
// 2490/125970 = 0.0198); cost per run unchanged, within noise. The A and
// B cards show their versions' whole configuration, wrapped.
func TestComparePage(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	tallytest.SendVersionRegression(t, tally.URL, base)
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/tasks?since=2h")
	run(t, ctx, "compare link", chromedp.Click(chromedp.CSS(`#tasks-table tr[data-task="cmp_task"] a[href^="/compare"]`)))
	waitFor(t, ctx, `location.pathname === '/compare' && !!document.querySelector('#compare-table')`)
	if n := run(t, ctx, "versions", chromedp.Evaluate[int](`document.querySelectorAll('#versions-table tbody tr').length`)); n != 2 {
		t.Errorf("%d versions listed, want 2", n)
	}
	row := run(t, ctx, "pass rate row", chromedp.Text(chromedp.CSS(`#compare-table tr[data-metric="pass_rate"]`)))
	for _, w := range []string{"90.0%", "30.0%", "-60.0 pts (-66.7%)", "0.0198", "Fisher's exact", "worse"} {
		if !strings.Contains(row, w) {
			t.Errorf("pass rate row %q lacks %q", row, w)
		}
	}
	if v := run(t, ctx, "cost verdict", chromedp.Text(chromedp.CSS(`#compare-table tr[data-metric="cost_per_run"] [data-verdict]`))); v != "within noise" {
		t.Errorf("cost per run verdict %q, want within noise", v)
	}
	sides := run(t, ctx, "sides", chromedp.Text(chromedp.CSS("#compare-sides")))
	if !strings.Contains(sides, "planner@1.0") || !strings.Contains(sides, "planner@1.1") {
		t.Errorf("sides %q: want both agent versions", sides)
	}
	// The A and B cards show all their text, side by side in the test's
	// window and one above the other in a narrow one: no element of a card
	// is wider than its box (clipped, or running out of it), and nothing
	// sticks out of the card.
	for _, width := range []int64{1280, 480} {
		run(t, ctx, fmt.Sprintf("%d px", width), chromedp.EmulateViewport(width, 900))
		for _, c := range cardOverflow(t, ctx) {
			t.Errorf("at %d px, compare card text overflows: %s", width, c)
		}
	}
}

// cardOverflow lists the elements of the compare page's A and B cards
// whose content is wider than they are or that reach out of their card.
func cardOverflow(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return run(t, ctx, "card overflow", chromedp.Evaluate[[]string](`(() => {
  const cards = [...document.querySelectorAll('#compare-sides .stat')];
  if (cards.length !== 2) return ['want 2 cards, found ' + cards.length];
  return cards.flatMap((card, i) => {
    const box = card.getBoundingClientRect();
    return [card, ...card.querySelectorAll(':not(br)')].filter((el) => {
      const r = el.getBoundingClientRect();
      return el.scrollWidth > el.clientWidth || r.left < box.left - 0.5 || r.right > box.right + 0.5;
    }).map((el) => 'card ' + 'AB'[i] + ' ' + el.tagName.toLowerCase() + ': scrollWidth ' + el.scrollWidth + ', clientWidth ' + el.clientWidth +
      ', right ' + el.getBoundingClientRect().right.toFixed(1) + ' of ' + box.right.toFixed(1) + ': ' + JSON.stringify(el.textContent.slice(0, 60)));
  });
})()`))
}

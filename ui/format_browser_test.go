package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestMoneyFormat: the page's usd() writes the figures the CLI's fmtUSD
// writes (cmd/tally TestFmtUSD has the same table).
func TestMoneyFormat(t *testing.T) {
	tally := startTally(t)
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs")
	got := run(t, ctx, "usd", chromedp.Evaluate[[]string](`[0, 0.0031, 0.007465, 0.5, 12.345, 1234.4, 1234567, -0.25].map(tallyFormat.usd)`))
	want := []string{"$0", "$0.0031", "$0.00747", "$0.5", "$12.35", "$1,234", "$1,234,567", "-$0.25"}
	if len(got) != len(want) {
		t.Fatalf("usd() gave %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("usd #%d = %q, want %q", i, got[i], want[i])
		}
	}
}

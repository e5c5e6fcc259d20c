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

// TestNumberFormats: the page's fmtMs and num write what the CLI's
// fmtDuration and fmtTokens write (cmd/tally TestFmtDurationAndTokens has
// the same tables).
func TestNumberFormats(t *testing.T) {
	tally := startTally(t)
	ctx := newBrowser(t)
	open(t, ctx, tally.URL+"/runs")
	durs := run(t, ctx, "fmtMs", chromedp.Evaluate[[]string](`[0, 0.42, 8.46, 87.4, 999.4, 1234, 12345, 185000, 3725000].map(tallyFormat.fmtMs)`))
	wantDurs := []string{"0", "0.42 ms", "8.5 ms", "87 ms", "999 ms", "1.23 s", "12.3 s", "3 min 05 s", "1 h 02 min"}
	toks := run(t, ctx, "num", chromedp.Evaluate[[]string](`[0, 950, 12345, 4100000].map(tallyFormat.num)`))
	wantToks := []string{"0", "950", "12,345", "4,100,000"}
	for _, c := range []struct{ got, want []string }{{durs, wantDurs}, {toks, wantToks}} {
		if len(c.got) != len(c.want) {
			t.Fatalf("got %q, want %q", c.got, c.want)
		}
		for i := range c.want {
			if c.got[i] != c.want[i] {
				t.Errorf("#%d = %q, want %q", i, c.got[i], c.want[i])
			}
		}
	}
}

package ui_test

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/tools/demo"
)

// TestNarrowWindowShowsSelectedSpan: at 800 px the span detail sits below
// the waterfall (here a demo run of 200 spans, taller than the window);
// selecting a span scrolls the detail into view.
func TestNarrowWindowShowsSelectedSpan(t *testing.T) {
	tally := startTally(t)
	sum, err := demo.Send(context.Background(), demo.Config{Endpoint: tally.URL, Runs: 1, Seed: 11, Spans: 200})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	ctx := newBrowser(t)
	run(t, ctx, "800 px", chromedp.EmulateViewport(800, 600))
	open(t, ctx, tally.URL+"/runs/"+sum.TraceIDs[0])
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	run(t, ctx, "select the root", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-depth="0"] .name`)))
	waitFor(t, ctx, `!!document.getElementById('detail-name')`)
	// The detail is stacked below the tree and its top is on screen.
	stacked := run(t, ctx, "stacked", chromedp.Evaluate[bool](`document.getElementById('detail').getBoundingClientRect().top >= document.querySelector('.waterfall').getBoundingClientRect().bottom - 1`))
	top := run(t, ctx, "detail top", chromedp.Evaluate[float64](`document.getElementById('detail').getBoundingClientRect().top`))
	if !stacked || top <= -1 || top >= 600 {
		t.Errorf("at 800 px: detail stacked %v, its top at %.0f px; want stacked and within the 600 px window", stacked, top)
	}
}

// TestDarkModeFollowsSystem: with the system in dark mode the page is dark
// (#0d1117 behind #e6edf3 text); in light mode it is white.
func TestDarkModeFollowsSystem(t *testing.T) {
	tally := startTally(t)
	for _, c := range []struct {
		scheme, bg, fg string
	}{
		{"dark", "rgb(13, 17, 23)", "rgb(230, 237, 243)"},
		{"light", "rgb(255, 255, 255)", "rgb(27, 31, 36)"},
	} {
		ctx := newBrowser(t)
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: c.scheme}}}); err != nil {
			t.Fatalf("emulate %s: %v", c.scheme, err)
		}
		open(t, ctx, tally.URL+"/runs")
		colors := run(t, ctx, "colors", chromedp.Evaluate[[]string](`[getComputedStyle(document.documentElement).backgroundColor, getComputedStyle(document.documentElement).color]`))
		if len(colors) != 2 || colors[0] != c.bg || colors[1] != c.fg {
			t.Errorf("%s mode: background, text %v; want %s, %s", c.scheme, colors, c.bg, c.fg)
		}
	}
}

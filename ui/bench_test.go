package ui_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/tools/demo"
)

// BenchmarkRunPageFirstRender measures, in headless Chromium, the time from
// navigation start to the waterfall of a 2,000-span run being drawn: the page
// script sets body[data-rendered] to performance.now() (milliseconds since
// navigation start) one frame after the rows are in the DOM. It includes the
// HTML shell, the script, the run API call (ClickHouse query and JSON) and
// drawing. Reported as ms/first-render; not asserted.
func BenchmarkRunPageFirstRender(b *testing.B) {
	tally := startTally(b)
	sum, err := demo.Send(context.Background(), demo.Config{Endpoint: tally.URL, Runs: 1, Seed: 11, Spans: 2000})
	if err != nil {
		b.Fatalf("demo: %v", err)
	}
	url := tally.URL + "/runs/" + sum.TraceIDs[0]
	ctx := newBrowser(b)
	open(b, ctx, url) // warm the browser and ClickHouse caches
	var total float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		open(b, ctx, url)
		v := run(b, ctx, "first render", chromedp.Poll[string](`document.body.dataset.rendered`))
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatalf("data-rendered %q: %v", v, err)
		}
		total += ms
	}
	b.ReportMetric(total/float64(b.N), "ms/first-render")
	rows := run(b, ctx, "rows", chromedp.Evaluate[int](`document.querySelectorAll('#wf-rows .wf-row').length`))
	b.ReportMetric(float64(rows), "rows-in-dom")
}

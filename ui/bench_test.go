package ui_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/tools/demo"
)

// BenchmarkRunPageFirstRender measures, in headless Chromium, the time from
// navigation start to the waterfall of a run being drawn: the page
// script sets body[data-rendered] to performance.now() (milliseconds since
// navigation start) one frame after the rows are in the DOM. It includes the
// HTML shell, the script, the run API call (ClickHouse query and JSON) and
// drawing. Reported as ms/first-render; not asserted.
//
// It opens the run page of one demo run of 2,000, 5,000 and 50,000 spans
// and reports the first complete render (ms, from navigation), the rows in
// the DOM and the bytes of the API answer the page waits for (its first
// part: at most RUN_PART spans, 2,000). make bench reports the same figures
// for the loaded runs (tools/bench/firstpaint.go).
func BenchmarkRunPageFirstRender(b *testing.B) {
	for _, spans := range []int{2000, 5000, 50000} {
		b.Run(fmt.Sprintf("spans=%d", spans), func(b *testing.B) {
			tally := startTally(b)
			sum, err := demo.Send(context.Background(), demo.Config{Endpoint: tally.URL, Runs: 1, Seed: 11, Spans: spans})
			if err != nil {
				b.Fatalf("demo: %v", err)
			}
			url := tally.URL + "/runs/" + sum.TraceIDs[0]
			resp, err := http.Get(tally.URL + "/api/v1/runs/" + sum.TraceIDs[0] + "?max_nodes=2000")
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
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
			b.ReportMetric(float64(n), "api-bytes")
		})
	}
}

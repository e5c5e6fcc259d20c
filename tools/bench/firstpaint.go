package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumBinary is where Debian's chromium package (make deps) installs
// the browser the first-paint figures drive.
const chromiumBinary = "/usr/bin/chromium"

// uiPart is the max_nodes the run page asks for first (RUN_PART in
// ui/static): the part figures measure the answer the page waits for.
const uiPart = 2000

// bigRunFigures measures, for each large run of at least 5,000 spans, the
// answer the run page waits for (GET /api/v1/runs/{id}?max_nodes=2000:
// latency and bytes) and the page's first complete render in headless
// Chromium (body[data-rendered], milliseconds from navigation start: the
// HTML, the script, that answer and drawing), median of cfg.PaintSamples.
func bigRunFigures(ctx context.Context, cfg Config, res *Results, base string, client *http.Client, bySize map[int][]string) error {
	var sizes []int
	for n := range bySize {
		if n >= 5000 {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		id := bySize[n][0]
		path := fmt.Sprintf("/api/v1/runs/%s?max_nodes=%d", id, uiPart)
		d, size, err := latencies(ctx, client, base+path, max(1, cfg.TreeSamples/4))
		if err != nil {
			return fmt.Errorf("first part of a run of %d spans: %w", n, err)
		}
		p50 := ms(percentile(d, 50))
		cfg.logf("run of %d spans, first part of %d: p50 %.1f ms, %d bytes", n, uiPart, p50, size)
		res.add(Figure{ID: fmt.Sprintf("tree.%d.first_part", n), Name: fmt.Sprintf("run of %d spans, the run page's first part (%d spans), p50", n, uiPart),
			Value: p50, Unit: "ms", Available: true, Goal: "p50 ≤ 300", Met: atMost(p50, 300),
			Inputs: map[string]any{"run_spans": n, "endpoint": "GET /api/v1/runs/{trace_id}?max_nodes=2000", "requests": len(d), "clients": 1},
			Detail: map[string]any{"response_bytes": size, "max_ms": ms(d[len(d)-1])}})

		id0, name := fmt.Sprintf("ui.first_paint.%d", n), fmt.Sprintf("run page of %d spans, first complete render in Chromium", n)
		inputs := map[string]any{"run_spans": n, "samples": cfg.PaintSamples, "window": "1280x900", "page": "/runs/{trace_id}"}
		if _, err := os.Stat(chromiumBinary); err != nil {
			res.unavailable(id0, name, "ms", "", "no "+chromiumBinary+": make deps installs Debian's chromium", inputs)
			cfg.logf("%s: no Chromium", name)
			continue
		}
		paints, rows, err := firstPaints(ctx, base+"/runs/"+id, cfg.PaintSamples)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		med := paints[len(paints)/2]
		cfg.logf("%s: median %.0f ms (%v), %d rows in the DOM", name, med, paints, rows)
		res.add(Figure{ID: id0, Name: name, Value: med, Unit: "ms", Available: true, Inputs: inputs,
			Detail: map[string]any{"min_ms": paints[0], "max_ms": paints[len(paints)-1], "rows_in_dom": rows, "first_part_bytes": size}})
	}
	return nil
}

// firstPaints opens url in a fresh headless Chromium once to warm it, then
// samples times, and returns the sorted render times (ms) and the rows in
// the DOM after the last.
func firstPaints(ctx context.Context, url string, samples int) ([]float64, int, error) {
	dir, err := os.MkdirTemp("", "tallybench-chromium-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromiumBinary), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true), chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
		// Its singleton socket's directory, left behind when it is stopped.
		chromedp.Env("TMPDIR="+dir))
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// Start the browser on bctx: the first Run allocates it, bound to the
	// context it is given, and each sample's timeout context would end it.
	if _, err := chromedp.Run(bctx, chromedp.Navigate("about:blank")); err != nil {
		return nil, 0, fmt.Errorf("start chromium: %w", err)
	}
	var out []float64
	for i := -1; i < max(samples, 1); i++ {
		tctx, done := context.WithTimeout(bctx, 2*time.Minute)
		_, err := chromedp.Run(tctx, chromedp.Steps(chromedp.Navigate("about:blank"), chromedp.Navigate(url)))
		var v string
		if err == nil {
			v, err = chromedp.Run(tctx, chromedp.Poll[string](`document.body && document.body.dataset.rendered`))
		}
		done()
		if err != nil {
			return nil, 0, err
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("data-rendered %q: %w", v, err)
		}
		if i >= 0 {
			out = append(out, f)
		}
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll('#wf-rows .wf-row').length`))
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(out)
	return out, rows, nil
}

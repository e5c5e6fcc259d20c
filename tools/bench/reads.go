package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/keyindex"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/settle"
	"github.com/tallyhq/tally/tools/bench/loader"
)

// loadFigures fills the read benchmarks' database with cfg.Spans spans
// through the loader and reports its rate.
func loadFigures(ctx context.Context, cfg Config, tg *target, res *Results) (loader.Stats, error) {
	store, err := tg.open(ctx, cfg.DBPrefix+"load")
	if err != nil {
		return loader.Stats{}, err
	}
	defer store.Close()
	days := cmp.Or(cfg.Days, loader.DefaultDays)
	lc := loader.Config{Spans: cfg.Spans, Days: days, RunSize: 20, LargeRuns: cfg.LargeRuns, Seed: cfg.Seed,
		Content: cfg.LoadContent, Inserters: 2}
	cfg.logf("load: %d spans over %d days (runs of ~20 spans, large runs %v)", cfg.Spans, days, cfg.LargeRuns)
	// The loader's garbage is short-lived batches; collecting less often
	// leaves the CPU to ClickHouse.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	st, err := loader.Load(ctx, store, lc)
	if err != nil {
		return st, err
	}
	cfg.logf("load: %d spans, %d content rows, %d runs in %s (%.0f spans/s)", st.Spans, st.Contents, st.Runs,
		st.Elapsed.Round(time.Millisecond), st.SpansPerSecond)
	res.add(Figure{ID: tg.id("loader.spans_per_s"), Name: tg.name("loader (direct, 2 INSERT streams), spans/s"),
		Value: st.SpansPerSecond, Unit: "spans/s", Available: true,
		Inputs: map[string]any{"spans": st.Spans, "content_rows": st.Contents, "runs": st.Runs, "batch_rows": loader.DefaultBatchRows,
			"inserters": 2, "days": days},
		Detail: map[string]any{"elapsed_s": st.Elapsed.Seconds(), "batches": st.Batches}})
	return st, nil
}

// storageFigures merges the database's tables (OPTIMIZE … FINAL) and
// reports figure 6: bytes on disk per span, spans and content tables.
func storageFigures(ctx context.Context, cfg Config, tg *target, res *Results, db, id, name string) error {
	store, err := tg.open(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	began := time.Now()
	tables := []string{schema.TableSpans, schema.TableContent, schema.TableSpanFacts}
	for _, table := range tables {
		if err := store.Conn().Exec(ctx, "OPTIMIZE TABLE "+store.Table(table)+" FINAL"); err != nil {
			return fmt.Errorf("optimize %s: %w", table, err)
		}
	}
	optimized := time.Since(began)
	rows, bytes := map[string]uint64{}, map[string]uint64{}
	for _, table := range tables {
		var r, b uint64
		if err := store.Conn().QueryRow(ctx, "SELECT sum(rows), sum(bytes_on_disk) FROM system.parts WHERE active AND database = ? AND table = ?",
			db, table).Scan(&r, &b); err != nil {
			return fmt.Errorf("size of %s: %w", table, err)
		}
		rows[table], bytes[table] = r, b
	}
	spans := rows[schema.TableSpans]
	if spans == 0 {
		return fmt.Errorf("storage: no spans in %s", db)
	}
	all := bytes[schema.TableSpans] + bytes[schema.TableContent] + bytes[schema.TableSpanFacts]
	total := float64(all) / float64(spans)
	res.add(Figure{ID: tg.id(id), Name: tg.name(name), Value: total, Unit: "bytes/span", Available: true,
		Inputs: map[string]any{"spans": spans, "content_rows": rows[schema.TableContent], "after": "OPTIMIZE TABLE … FINAL"},
		Detail: map[string]any{"spans_table_bytes_per_span": float64(bytes[schema.TableSpans]) / float64(spans),
			"content_table_bytes_per_span":    float64(bytes[schema.TableContent]) / float64(spans),
			"span_facts_table_bytes_per_span": float64(bytes[schema.TableSpanFacts]) / float64(spans),
			"bytes_on_disk":                   all, "optimize_s": optimized.Seconds()}})
	return nil
}

// latencies GETs url n times after one warm-up request and returns the
// sorted durations of reading each whole answer, and the body size.
func latencies(ctx context.Context, client *http.Client, url string, n int) ([]time.Duration, int, error) {
	var out []time.Duration
	size := 0
	for i := -1; i < n; i++ {
		began := time.Now()
		resp, body, err := getJSON(ctx, client, url)
		took := time.Since(began)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = answerError(url, resp, body)
		}
		if err != nil {
			return nil, 0, err
		}
		if i >= 0 {
			out = append(out, took)
		}
		size = len(body)
	}
	slices.Sort(out)
	return out, size, nil
}

// failedRead records a read that answered with an error (a statement over
// its time or memory limit, at a scale the limits were not sized for) as a
// figure without a value, its reason the error, so that the run goes on to
// the other reads: at 100M spans one read past its limit is a finding, not
// the end of an hour's load.
func failedRead(cfg Config, res *Results, id, name, goal string, err error, inputs map[string]any) {
	msg := err.Error()
	cfg.logf("%s: failed: %s", name, msg)
	res.unavailable(id, name, "ms", goal, "failed: "+msg, inputs)
}

// getJSON GETs url and reads the whole answer: an error when the request
// fails or the answer is not JSON, any status otherwise.
func getJSON(ctx context.Context, client *http.Client, url string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return nil, nil, answerError(url, resp, body)
	}
	return resp, body, nil
}

// answerError is an answer's httpError.
func answerError(url string, resp *http.Response, body []byte) error {
	return &httpError{url: url, status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(body[:min(len(body), 300)])}
}

// searchRunCount is how many runs a search's first page lists.
func searchRunCount(ctx context.Context, client *http.Client, url string) (int, error) {
	resp, body, err := getJSON(ctx, client, url)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = answerError(url, resp, body)
	}
	if err != nil {
		return 0, err
	}
	var page struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	return len(page.Runs), nil
}

// readRetrying GETs url n times, each until it is answered 200: a 503
// (the server's bound on concurrent run reads, whose wait a queue of
// clients reading a large run outlasts) is retried after its Retry-After,
// as a client should.
func readRetrying(ctx context.Context, client *http.Client, url string, n int) error {
	for range n {
		for {
			resp, body, err := getJSON(ctx, client, url)
			if err != nil {
				return err
			}
			if resp.StatusCode == http.StatusOK {
				break
			}
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				return answerError(url, resp, body)
			}
			wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(max(wait, 1)) * time.Second):
			}
		}
	}
	return nil
}

// httpError is a non-JSON or non-200 answer.
type httpError struct {
	url, contentType, body string
	status                 int
}

func (e *httpError) Error() string {
	return fmt.Sprintf("GET %s: %d (%s): %s", e.url, e.status, e.contentType, e.body)
}

// missing says whether the answer means the route does not exist in this
// build (404, 501 "not configured", or a non-JSON page, e.g. the UI's
// catch-all).
func (e *httpError) missing() bool {
	return e.status == http.StatusNotFound || e.status == http.StatusNotImplemented ||
		!strings.HasPrefix(e.contentType, "application/json")
}

// percentile is the nearest-rank p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

// readFigures measures figures 3 and 4 against a tally serve over the
// loaded database: run trees of the large runs, cost rollups over 30 days
// and tool percentiles over the last hour.
func readFigures(ctx context.Context, cfg Config, tg *target, res *Results, st loader.Stats) error {
	db := cfg.DBPrefix + "load"
	// Compute the cost rollup the way tally's background job does, before
	// tally starts, so that cost reports read rolled-up hours (as they do
	// on a server that has been running) rather than 30 days of raw spans.
	store, err := tg.open(ctx, db)
	if err != nil {
		return err
	}
	cfg.logf("rollup: computing the cost rollup of %d spans", st.Spans)
	began := time.Now()
	rs, err := rollup.New(store, rollup.Config{}).RefreshRange(ctx, st.Since.Add(-time.Hour), time.Now())
	if err != nil {
		store.Close()
		return fmt.Errorf("cost rollup: %w", err)
	}
	rollupTook := time.Since(began)
	cfg.logf("rollup: %d hours, %d rows in %s", rs.HoursRecomputed, rs.RowsWritten, rollupTook.Round(time.Millisecond))
	// The search keys index too, as tally's job keeps it.
	began = time.Now()
	ks, err := keyindex.New(store, keyindex.Config{}).RefreshRange(ctx, st.Since.Add(-time.Hour), time.Now())
	store.Close()
	if err != nil {
		return fmt.Errorf("search keys index: %w", err)
	}
	cfg.logf("search keys index: %d hours in %d computations in %s", ks.HoursIndexed, ks.Computations, time.Since(began).Round(time.Millisecond))
	if err := settleFigures(ctx, cfg, tg, res, db, st); err != nil {
		return err
	}
	// The runs are settled: the read pass measures the reads alone, with
	// no settler starting its full check beside them (its steady cost is
	// the settle figures'). TALLY_SETTLE_RUNNER, not the flag, so that an
	// older build (--tally) starts too.
	readCfg := cfg
	readCfg.TallyEnv = append(slices.Clip(cfg.TallyEnv), "TALLY_SETTLE_RUNNER=off")
	t, err := readCfg.startTally(ctx, tg, db, "reads", false)
	if err != nil {
		return err
	}
	defer t.Stop() //nolint:errcheck // measured figures are kept either way
	client := &http.Client{Timeout: 2 * time.Minute}

	// Cost by agent and model over 30 days and tool p95 over the last
	// hour, from the hourly rollup (issue #39's goal: p99 ≤ 100 ms).
	rollups := []struct{ id, name, path, window string }{
		{"rollup.cost_by_agent.p99", "cost by agent over 30 days, p99", "/api/v1/costs?by=agent&since=30d", "30d"},
		{"rollup.cost_by_model.p99", "cost by model over 30 days, p99", "/api/v1/costs?by=model&since=30d", "30d"},
		{"rollup.tool_p95.p99", "tool p95 per tool over the last hour, p99", "/api/v1/tools?since=1h", "1h"},
	}
	for _, r := range rollups {
		inputs := map[string]any{"spans_stored": st.Spans, "window": r.window, "endpoint": "GET " + r.path,
			"requests": cfg.RollupSamples, "clients": 1}
		d, size, err := latencies(ctx, client, t.URL+r.path, cfg.RollupSamples)
		if he, ok := err.(*httpError); ok && he.missing() {
			res.unavailable(tg.id(r.id), tg.name(r.name), "ms", "p99 ≤ 100", "not available in this build ("+strings.SplitN(r.path, "?", 2)[0]+" answers "+fmt.Sprint(he.status)+")", inputs)
			cfg.logf("%s: not available in this build", r.name)
			continue
		}
		if err != nil {
			failedRead(cfg, res, tg.id(r.id), tg.name(r.name), "p99 ≤ 100", err, inputs)
			continue
		}
		p50, p99 := ms(percentile(d, 50)), ms(percentile(d, 99))
		cfg.logf("%s: p50 %.1f ms, p99 %.1f ms", r.name, p50, p99)
		res.add(Figure{ID: tg.id(r.id), Name: tg.name(r.name), Value: p99, Unit: "ms", Goal: "p99 ≤ 100", Met: atMost(p99, 100),
			Available: true, Inputs: inputs, Detail: map[string]any{"p50_ms": p50, "response_bytes": size,
				"rollup_hours_recomputed_before": rs.HoursRecomputed, "rollup_refresh_s": rollupTook.Seconds()}})
	}
	// Consistency, versions, the safety review and caps read every run of
	// the range, with their outcomes, configurations or reviews; the
	// conversations add up every run of the range by conversation; the run
	// list one page of the range's runs under each order. All from the run
	// table (issue #39's goal: p99 ≤ 300 ms).
	pages := []struct{ id, name, path, window string }{
		{"tasks.7d.p99", "consistency per task over 7 days, p99", "/api/v1/tasks?since=7d", "7d"},
		{"versions.7d.p99", "versions per task over 7 days, p99", "/api/v1/versions?since=7d", "7d"},
		{"signals.24h.p99", "safety review of 24 hours: signals by kind and tool, p99", "/api/v1/signals?since=24h", "24h"},
		{"signals.7d.p99", "safety review of 7 days: signals by kind and tool, p99", "/api/v1/signals?since=7d", "7d"},
		{"caps.7d.p99", "caps from data per task over 7 days, p99", "/api/v1/caps?since=7d", "7d"},
		{"conversations.7d.p99", "conversations over 7 days, first page of 50, p99", "/api/v1/conversations?since=7d", "7d"},
		{"conversations.30d.p99", "conversations over 30 days, first page of 50, p99", "/api/v1/conversations?since=30d", "30d"},
	}
	for _, sort := range []string{"start", "cost", "duration", "tokens", "errors", "retries"} {
		for _, w := range []string{"7d", "30d"} {
			pages = append(pages, struct{ id, name, path, window string }{"runs." + sort + "." + w + ".p99",
				"run list by " + sort + " over " + w + ", first page of 50, p99", "/api/v1/runs?since=" + w + "&sort=" + sort, w})
		}
	}
	for _, r := range pages {
		pageFigure(ctx, cfg, tg, res, client, t.URL, r.id, r.name, r.path, map[string]any{"spans_stored": st.Spans, "window": r.window})
	}
	if err := searchFigures(ctx, cfg, tg, res, st, client, t.URL); err != nil {
		return err
	}
	bySize := map[int][]string{}
	for _, r := range st.Large {
		bySize[r.Spans] = append(bySize[r.Spans], r.TraceID)
	}
	// Issue #39's goals for a run's tree read whole.
	goals := map[int]float64{500: 25, 5000: 100}
	sizes := make([]int, 0, len(bySize))
	for n := range bySize {
		sizes = append(sizes, n)
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		ids := bySize[n]
		samples := cfg.TreeSamples
		switch {
		case n >= 50000:
			samples = max(1, samples/8)
		case n >= 5000:
			samples = max(1, samples/2)
		}
		var all []time.Duration
		size := 0
		for i, id := range ids {
			k := samples / len(ids)
			if i < samples%len(ids) {
				k++
			}
			if k == 0 {
				continue
			}
			d, b, err := latencies(ctx, client, t.URL+"/api/v1/runs/"+id, k)
			if err != nil {
				return fmt.Errorf("run tree of %d spans: %w", n, err)
			}
			all, size = append(all, d...), b
		}
		slices.Sort(all)
		p50, p99 := ms(percentile(all, 50)), ms(percentile(all, 99))
		cfg.logf("run tree %d spans: p50 %.1f ms, p99 %.1f ms (%d requests)", n, p50, p99, len(all))
		inputs := map[string]any{"run_spans": n, "spans_stored": st.Spans, "requests": len(all), "distinct_runs": len(ids),
			"endpoint": "GET /api/v1/runs/{trace_id}", "clients": 1}
		goal, met := "", (*bool)(nil)
		if g, ok := goals[n]; ok {
			goal, met = fmt.Sprintf("p99 ≤ %g", g), atMost(p99, g)
		}
		res.add(Figure{ID: tg.id(fmt.Sprintf("tree.%d.p99", n)), Name: tg.name(fmt.Sprintf("run tree of %d spans, p99", n)),
			Value: p99, Unit: "ms", Goal: goal, Met: met, Available: true, Inputs: inputs,
			Detail: map[string]any{"p50_ms": p50, "max_ms": ms(all[len(all)-1]), "response_bytes": size}})
		res.add(Figure{ID: tg.id(fmt.Sprintf("tree.%d.p50", n)), Name: tg.name(fmt.Sprintf("run tree of %d spans, p50", n)),
			Value: p50, Unit: "ms", Available: true, Inputs: inputs})
	}
	if len(sizes) > 0 && sizes[len(sizes)-1] >= 5000 {
		n := sizes[len(sizes)-1]
		if err := bigReadMemory(ctx, cfg, tg, res, t, client, n, bySize[n][0]); err != nil {
			return err
		}
	}
	if tg.kind == storeServer {
		// First render in Chromium (the embedded store's part is the run
		// tree above).
		if err := bigRunFigures(ctx, cfg, res, t.URL, client, bySize); err != nil {
			return err
		}
	}
	// Last: the runs sent stay in flight (the settler is off) and would
	// weigh on every read after.
	return inFlightFigures(ctx, cfg, res, tg, client, t.URL, st.Spans)
}

// pageFigure measures one page of runs (path, under base): its p99 over
// max(3, RollupSamples/5) requests against issue #39's 300 ms, with
// inputs (and the endpoint, requests and clients) as the figure's inputs.
func pageFigure(ctx context.Context, cfg Config, tg *target, res *Results, client *http.Client, base, id, name, path string, inputs map[string]any) {
	samples := max(3, cfg.RollupSamples/5)
	inputs["endpoint"], inputs["requests"], inputs["clients"] = "GET "+path, samples, 1
	d, size, err := latencies(ctx, client, base+path, samples)
	if he, ok := err.(*httpError); ok && he.missing() {
		res.unavailable(tg.id(id), tg.name(name), "ms", "p99 ≤ 300", "not available in this build", inputs)
		return
	}
	if err != nil {
		failedRead(cfg, res, tg.id(id), tg.name(name), "p99 ≤ 300", err, inputs)
		return
	}
	p50, p99 := ms(percentile(d, 50)), ms(percentile(d, 99))
	cfg.logf("%s: p50 %.1f ms, p99 %.1f ms", name, p50, p99)
	res.add(Figure{ID: tg.id(id), Name: tg.name(name), Value: p99, Unit: "ms", Goal: "p99 ≤ 300", Met: atMost(p99, 300),
		Available: true, Inputs: inputs, Detail: map[string]any{"p50_ms": p50, "max_ms": ms(d[len(d)-1]), "response_bytes": size}})
}

// settleFigures settles every loaded run into the run table the way
// tally migrate (and serve's settler) does, before tally starts, and
// reports its rate and its CPU: this process's CPU time over the pass is
// the settler's Go side (the span decode, the summary, the review), the
// ClickHouse server's the reads it makes.
func settleFigures(ctx context.Context, cfg Config, tg *target, res *Results, db string, st loader.Stats) error {
	store, err := tg.open(ctx, db)
	if err != nil {
		return err
	}
	defer store.Close()
	reader := query.NewReader(store)
	s := settle.New(reader.SettleSource, store, settle.Config{})
	// Every loaded span is written: the runs are complete, so the pass
	// takes them all as quiet.
	now := time.Now().Add(settle.DefaultQuiet + time.Minute)
	cfg.logf("settle: settling the runs of %d spans", st.Spans)
	cpuBefore := cfg.cpuNow(0)
	began := time.Now()
	stats, err := s.Check(ctx, st.Since.Add(-time.Hour), now, now, nil)
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	if _, err := s.Cycle(ctx, now); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	took := time.Since(began)
	cpu := cfg.cpuNow(0).since(cpuBefore)
	if stats.Settled == 0 {
		return fmt.Errorf("settle: no run settled of %d spans", st.Spans)
	}
	perRun := float64(cpu.self.Microseconds()) / float64(stats.Settled)
	cfg.logf("settle: %d runs in %s (%.0f runs/s, %.0f µs of settler CPU a run)", stats.Settled, took.Round(time.Millisecond),
		float64(stats.Settled)/took.Seconds(), perRun)
	inputs := map[string]any{"spans_stored": st.Spans, "runs": st.Runs, "loads": stats.Loads, "max_load_runs": 250, "max_load_spans": 50000}
	res.add(Figure{ID: tg.id("settle.runs_per_s"), Name: tg.name("settling (backfill of the loaded runs), runs/s"),
		Value: float64(stats.Settled) / took.Seconds(), Unit: "runs/s", Available: true, Inputs: inputs,
		Detail: map[string]any{"runs_settled": stats.Settled, "elapsed_s": took.Seconds(),
			"spans_per_s": float64(st.Spans) / took.Seconds(), "clickhouse_cpu_s": cpu.clickhouse.Seconds(), "settler_cpu_s": cpu.self.Seconds()}})
	res.add(Figure{ID: tg.id("settle.cpu_us_per_run"), Name: tg.name("settler CPU a run (Go side: load, summary, review), µs"),
		Value: perRun, Unit: "µs", Available: cpu.known, Inputs: inputs,
		Detail: map[string]any{"clickhouse_cpu_us_per_run": float64(cpu.clickhouse.Microseconds()) / float64(stats.Settled)}})
	// The run rollup of the settled runs, as tally's job computes it at
	// start (its full check), so that the window reports read rolled-up
	// hours as on a server that has been running.
	cfg.logf("run rollup: computing the run rollup of %d runs", stats.Settled)
	began = time.Now()
	rr, err := rollup.NewRunRollup(store, rollup.RunRollupConfig{}).RefreshRange(ctx, st.Since.Add(-time.Hour), time.Now())
	if err != nil {
		return fmt.Errorf("run rollup: %w", err)
	}
	took = time.Since(began)
	cfg.logf("run rollup: %d hours, %d rows in %s", rr.HoursRecomputed, rr.RowsWritten, took.Round(time.Millisecond))
	res.add(Figure{ID: tg.id("run_rollup.ms_per_hour"), Name: tg.name("run rollup: computing one hour of runs (backfill), ms"),
		Value: float64(took.Milliseconds()) / float64(max(rr.HoursRecomputed, 1)), Unit: "ms", Available: rr.HoursRecomputed > 0,
		Inputs: map[string]any{"runs": stats.Settled, "hours": rr.HoursRecomputed},
		Detail: map[string]any{"rows_written": rr.RowsWritten, "elapsed_s": took.Seconds()}})
	return nil
}

// bigReaders is how many clients read the 50,000-span run at once in
// bigReadMemory: issue #41 measured 355–386 MB with six.
const bigReaders = 6

// bigReadMemory is tally's resident memory while bigReaders clients each
// read the largest run (50,000 spans in the default bench) twice (the
// server admits --max-concurrent-run-reads of them at a time, the rest
// wait): the peak of VmRSS sampled every 10 ms, beside the RSS before.
func bigReadMemory(ctx context.Context, cfg Config, tg *target, res *Results, t *Tally, client *http.Client, n int, id string) error {
	before, err := t.RSS()
	if err != nil {
		return err
	}
	sampled := sampleRSS(t, 10*time.Millisecond)
	errs := make(chan error, bigReaders)
	for range bigReaders {
		go func() {
			errs <- readRetrying(ctx, client, t.URL+"/api/v1/runs/"+id, 2)
		}()
	}
	var first error
	for range bigReaders {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	split := sampled()
	peak := max(split.Total, before)
	if first != nil {
		return fmt.Errorf("%d concurrent reads of the run of %d spans: %w", bigReaders, n, first)
	}
	cfg.logf("%d concurrent reads of the run of %d spans: peak RSS %.0f MiB (%.0f MiB before)", bigReaders, n, mib(peak), mib(before))
	res.add(Figure{ID: tg.id(fmt.Sprintf("tree.%d.readers_rss", n)), Name: tg.name(fmt.Sprintf("peak RSS while %d clients read the run of %d spans", bigReaders, n)),
		Value: mib(peak), Unit: "MiB", Available: true,
		Inputs: map[string]any{"run_spans": n, "clients": bigReaders, "requests_per_client": 2, "endpoint": "GET /api/v1/runs/{trace_id}"},
		Detail: splitDetail(map[string]any{"rss_before_mib": mib(before)}, split)})
	return nil
}

// searchFigures times TraceQL searches (issue #35) over the loaded spans:
// attribute, numeric, intrinsic, structural and content queries, metrics
// queries over 24 hours and 30 days, and autocomplete. The demo runs'
// data decides the values: server.address on every model call, max_tokens
// 4096, the ticket topic "refund for duplicate charge …" in messages and
// tool arguments; the loader's rare phrase (loader.Needle) in a few runs.
func searchFigures(ctx context.Context, cfg Config, tg *target, res *Results, st loader.Stats, client *http.Client, base string) error {
	type search struct {
		id, name, query, window, step string
		goal                          float64
		path                          string // instead of a query: an autocomplete endpoint
	}
	searches := []search{
		{id: "search.attr_eq.24h.p99", name: "search: attribute equality over 24 hours, p99", query: `{ span.server.address = "api.openai.com" }`, window: "24h", goal: 300},
		{id: "search.numeric.24h.p99", name: "search: numeric range of an attribute over 24 hours, p99", query: `{ span.gen_ai.request.max_tokens >= 4096 && cache_read_tokens = 0 }`, window: "24h", goal: 300},
		{id: "search.intrinsic.24h.p99", name: "search: a failed tool over 24 hours, p99", query: `{ tool = "fetch_url" && status = error }`, window: "24h", goal: 300},
		{id: "search.desc.24h.p99", name: "search: structural, >> over 24 hours, p99", query: `{ operation = "invoke_agent" } >> { tool = "fetch_url" && status = error }`, window: "24h", goal: 300},
		{id: "search.then.24h.p99", name: "search: structural, then over 24 hours, p99", query: `{ tool = "fetch_url" && status = error } then { tool = "fetch_url" && status = ok }`, window: "24h", goal: 300},
		{id: "search.content.7d.p99", name: "search: full text of content over 7 days, p99", query: `{ content contains "duplicate charge" }`, window: "7d", goal: 1000},
		// A phrase in the content of one run in 50,000 (loader.Needle): the
		// window is read through, where a frequent phrase fills its page
		// from the newest runs.
		{id: "search.content_rare.7d.p99", name: "search: full text of a rare phrase over 7 days, p99", query: `{ content contains "Chargeback Dispute CB-77310" }`, window: "7d", goal: 1000},
		{id: "search.count_by.24h.p99", name: "search metrics: count by model per hour over 24 hours, p99", query: `{ } | count_over_time() by (model)`, window: "24h", step: "1h"},
		{id: "search.count_by.30d.p99", name: "search metrics: count by model per day over 30 days, p99", query: `{ } | count_over_time() by (model)`, window: "30d", step: "1d"},
		{id: "search.p95_by.24h.p99", name: "search metrics: p95 of tool durations by tool over 24 hours, p99", query: `{ tool != nil } | quantile_over_time(duration, .95) by (tool)`, window: "24h", step: "5m"},
		{id: "search.keys.24h.p99", name: "search autocomplete: attribute keys of 24 hours, p99", path: "/api/v1/search/keys?since=24h", window: "24h", goal: 50},
		{id: "search.values.24h.p99", name: "search autocomplete: top values of an attribute over 24 hours, p99", path: "/api/v1/search/values?since=24h&key=span.server.address", window: "24h", goal: 50},
	}
	for _, s := range searches {
		path := s.path
		if path == "" {
			v := url.Values{"q": {s.query}, "since": {s.window}}
			if s.step != "" {
				v.Set("step", s.step)
			}
			path = "/api/v1/search?" + v.Encode()
		}
		samples := max(3, cfg.RollupSamples/2)
		goal := ""
		if s.goal > 0 {
			goal = fmt.Sprintf("p99 ≤ %g", s.goal)
		}
		inputs := map[string]any{"spans_stored": st.Spans, "window": s.window, "query": s.query, "endpoint": "GET " + strings.SplitN(path, "?", 2)[0],
			"requests": samples, "clients": 1}
		d, size, err := latencies(ctx, client, base+path, samples)
		if he, ok := err.(*httpError); ok && he.missing() {
			res.unavailable(tg.id(s.id), tg.name(s.name), "ms", goal, "not available in this build", inputs)
			continue
		}
		if err != nil {
			failedRead(cfg, res, tg.id(s.id), tg.name(s.name), goal, err, inputs)
			continue
		}
		p50, p99 := ms(percentile(d, 50)), ms(percentile(d, 99))
		cfg.logf("%s: p50 %.1f ms, p99 %.1f ms", s.name, p50, p99)
		f := Figure{ID: tg.id(s.id), Name: tg.name(s.name), Value: p99, Unit: "ms", Goal: goal, Available: true, Inputs: inputs,
			Detail: map[string]any{"p50_ms": p50, "max_ms": ms(d[len(d)-1]), "response_bytes": size}}
		if strings.Contains(s.query, "CB-77310") {
			// The runs found, beside the needle runs that start in the window.
			found, err := searchRunCount(ctx, client, base+path)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			since := time.Now().Add(-7 * 24 * time.Hour)
			planted := 0
			for _, r := range st.Needles {
				if r.Start.After(since) {
					planted++
				}
			}
			f.Detail["runs_found"], f.Detail["needle_runs_in_window"] = found, planted
			cfg.logf("%s: %d runs found, %d needle runs start in the window", s.name, found, planted)
		}
		if s.goal > 0 {
			f.Met = atMost(p99, s.goal)
		}
		res.add(f)
	}
	return nil
}

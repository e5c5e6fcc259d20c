package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/procmem"
	"github.com/tallyhq/tally/tools/loadgen"
)

// queryableTimeout bounds the wait for acknowledged spans to be counted.
const queryableTimeout = 2 * time.Minute

// ingestFigures measures figures 1 and 5: end-to-end ingest through
// /v1/traces of a tally serve subprocess against the direct bulk-insert
// rate of the same rows, the acknowledgement latency, and tally's peak RSS
// at that load and under twice the concurrency and rate.
//
// On the embedded store the suite cannot read the store while tally has it
// open: queryable then means inserted (tally's written-spans counter
// reaches the acknowledged count, and its durable log is empty), and the
// deduplicated count is taken once tally has stopped.
func ingestFigures(ctx context.Context, cfg Config, tg *target, res *Results) error {
	db := cfg.DBPrefix + "ingest"
	store, err := tg.open(ctx, db) // creates the schema
	if err != nil {
		return err
	}
	if tg.kind == storeEmbedded {
		store.Close()
		store = nil
	} else {
		defer store.Close()
	}
	queryable := func(t *Tally, want, wantHere uint64) (uint64, time.Duration, error) {
		if store != nil {
			return waitQueryable(ctx, store, want)
		}
		return t.waitWritten(ctx, wantHere)
	}
	// finalCount is the deduplicated count of the store after tally stopped
	// (embedded), or what queryable counted (server).
	finalCount := func(counted uint64) (uint64, error) {
		if store != nil {
			return counted, nil
		}
		s, err := tg.open(ctx, db)
		if err != nil {
			return 0, err
		}
		defer s.Close()
		return countFinal(ctx, s)
	}
	profiling := cfg.ProfileDir != ""
	// The peak RSS goals: tally alone on a server store; with the engine
	// in its process (its code, its memory) on the embedded store.
	rssGoal := 300.0
	if tg.kind == storeEmbedded {
		rssGoal = 512
	}

	// Sustained load.
	t, err := cfg.startTally(ctx, tg, db, "ingest", profiling)
	if err != nil {
		return err
	}
	var profiles sync.WaitGroup
	if profiling {
		secs := max(1, int((cfg.IngestDuration - 2*time.Second).Seconds()))
		profiles.Add(1)
		go func() {
			defer profiles.Done()
			if err := fetch(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", t.DebugURL, secs),
				filepath.Join(cfg.ProfileDir, "cpu.pprof")); err != nil {
				cfg.logf("cpu profile: %v", err)
			}
		}()
	}
	cfg.logf("ingest: %d-span requests, concurrency %d, %s", cfg.RequestSpans, cfg.Concurrency, cfg.IngestDuration)
	sampler, gaugePeaks := sampleRSS(t, 100*time.Millisecond), sampleGauges(ctx, t, time.Second)
	cpuBefore := cfg.cpuNow(t.PID)
	eventsBefore := serverEvents(ctx, store)
	lg, err := loadgen.Run(ctx, loadgen.Config{Endpoint: t.URL, RequestSpans: cfg.RequestSpans,
		Concurrency: cfg.Concurrency, Duration: cfg.IngestDuration, Seed: cfg.Seed})
	sampledPeak, peaks := sampler(), gaugePeaks()
	profiles.Wait()
	if err != nil {
		t.Stop() //nolint:errcheck // already failing
		return fmt.Errorf("loadgen: %w", err)
	}
	cfg.logf("%s", lg)
	if profiling {
		if err := fetch(ctx, t.DebugURL+"/debug/pprof/heap", filepath.Join(cfg.ProfileDir, "heap.pprof")); err != nil {
			cfg.logf("heap profile: %v", err)
		}
	}
	peak, err := t.PeakRSS()
	if err != nil {
		t.Stop() //nolint:errcheck // already failing
		return err
	}
	stored, wait, err := queryable(t, uint64(lg.SpansAcknowledged), uint64(lg.SpansAcknowledged))
	if err != nil {
		t.Stop() //nolint:errcheck // already failing
		return err
	}
	cpu := cfg.cpuNow(t.PID).since(cpuBefore)
	events := serverEvents(ctx, store).since(eventsBefore)
	// What the settler did meanwhile (a build without it has no figures).
	settled, settledErr := t.metrics(ctx, "tally_settle_runs_total", "tally_settle_busy_seconds_total")
	if err := t.Stop(); err != nil {
		return err
	}
	if stored, err = finalCount(stored); err != nil {
		return err
	}
	if stored < uint64(lg.SpansAcknowledged) {
		return fmt.Errorf("ingest: %d spans acknowledged, %d stored (deduplicated)", lg.SpansAcknowledged, stored)
	}
	if lg.SpansAcknowledged == 0 {
		return fmt.Errorf("ingest: no span acknowledged: %s", lg.FirstError)
	}
	e2eElapsed := lg.Elapsed + wait
	e2eRate := float64(lg.SpansAcknowledged) / e2eElapsed.Seconds()

	// The same rows, inserted straight into ClickHouse.
	cfg.logf("ingest: direct bulk insert of the same rows")
	from := store
	if from == nil {
		if from, err = tg.open(ctx, db); err != nil {
			return err
		}
	}
	rows, err := readBaseline(ctx, cfg, from)
	if from != store {
		from.Close()
	}
	if err != nil {
		return err
	}
	direct, err := directInsertRate(ctx, cfg, tg, rows, "direct", cfg.BaselineBatch)
	var atStream directResult
	if err == nil && cfg.BaselineStreamBatch > 0 {
		cfg.logf("ingest: direct bulk insert in batches of tally's streams (%d rows)", cfg.BaselineStreamBatch)
		atStream, err = directInsertRate(ctx, cfg, tg, rows, "direct_stream", cfg.BaselineStreamBatch)
	}
	if err != nil {
		return err
	}

	inputs := map[string]any{"request_spans": cfg.RequestSpans, "request_bytes": lg.BodyBytes,
		"concurrency": cfg.Concurrency, "duration_s": cfg.IngestDuration.Seconds(), "gzip": false}
	ratio := e2eRate / direct.rate
	detail := map[string]any{"end_to_end_spans_per_s": e2eRate, "direct_spans_per_s": direct.rate,
		"direct_rows": direct.rows, "direct_content_rows": direct.contents, "direct_batch_rows": cfg.BaselineBatch,
		"direct_passes_spans_per_s": fmt.Sprint(direct.passes), "direct_streams": 1}
	if atStream.rate > 0 {
		// The same ratio against inserts as large as tally's streams: the
		// part size, not tally, may be what the headline gains.
		detail["direct_stream_batch_rows"] = cfg.BaselineStreamBatch
		detail["direct_stream_spans_per_s"] = atStream.rate
		detail["direct_stream_passes_spans_per_s"] = fmt.Sprint(atStream.passes)
		detail["efficiency_vs_direct_stream"] = math.Round(e2eRate/atStream.rate*1000) / 1000
	}
	// Whether the cores were saturated and how much the host took of them,
	// on both paths: a run's rates depend on it.
	cpu.addHost(detail, "")
	direct.cpu.addHost(detail, "direct_")
	if settledErr == nil {
		detail["settle_runs"] = settled["tally_settle_runs_total"]
		detail["settle_busy_s"] = settled["tally_settle_busy_seconds_total"]
		if cpu.known && cpu.tally > 0 {
			// The settler is one goroutine: its CPU is at most its passes'
			// wall time.
			detail["settle_cpu_share_at_most"] = math.Round(settled["tally_settle_busy_seconds_total"]/cpu.tally.Seconds()*1000) / 1000
		}
	}
	if tg.kind == storeServer {
		// On the embedded store the engine's CPU is tally's, and the
		// server's process has nothing to do with the pass.
		events.add(detail, "")
		direct.events.add(detail, "direct_")
		e2e := cpu.addPerSpan(detail, "", lg.SpansAcknowledged, "tally", "loadgen")
		d := direct.cpu.addPerSpan(detail, "direct_", 3*direct.rows, "", "client")
		if e2e > 0 && d > 0 {
			// The efficiency the cores allow if both paths are bound by
			// CPU alone: a span's CPU on the direct path over the
			// end-to-end path's.
			detail["cpu_bound_efficiency"] = math.Round(d/e2e*1000) / 1000
		}
	}
	res.add(Figure{ID: tg.id("ingest.efficiency"), Name: tg.name("ingest efficiency (end-to-end ÷ direct bulk insert)"),
		Value: ratio, Unit: "×", Goal: "≥ 0.75", Met: atLeast(ratio, 0.75), Available: true, Inputs: inputs,
		Detail: detail})
	res.add(Figure{ID: tg.id("ingest.spans_per_s"), Name: tg.name("ingest, acknowledged and queryable spans/s"),
		Value: e2eRate, Unit: "spans/s", Available: true, Inputs: inputs,
		Detail: map[string]any{"spans_acknowledged": lg.SpansAcknowledged, "spans_stored_final": stored,
			"requests": lg.Sent, "acknowledged": lg.Acknowledged, "rejected_4xx": lg.Rejected, "failed_5xx": lg.Failed,
			"load_s": lg.Elapsed.Seconds(), "wait_until_queryable_s": wait.Seconds(),
			"acknowledged_spans_per_s": lg.SpansPerSecond}})
	res.add(Figure{ID: tg.id("ingest.ack_latency_p50"), Name: tg.name("ack latency p50 per request"),
		Value: ms(lg.LatencyP50), Unit: "ms", Available: true, Inputs: inputs,
		Detail: map[string]any{"p90_ms": ms(lg.LatencyP90), "max_ms": ms(lg.LatencyMax)}})
	res.add(Figure{ID: tg.id("ingest.ack_latency_p99"), Name: tg.name("ack latency p99 per request"),
		Value: ms(lg.LatencyP99), Unit: "ms", Available: true, Inputs: inputs})
	res.add(Figure{ID: tg.id("memory.sustained_peak_rss"), Name: tg.name("tally serve peak RSS at maximum sustained ingest"),
		Value: mib(peak), Unit: "MiB", Goal: fmt.Sprintf("≤ %.0f", rssGoal), Met: atMost(mib(peak), rssGoal), Available: true, Inputs: inputs,
		Detail: splitDetail(withEntries(peaks, map[string]any{"source": "VmHWM"}), sampledPeak)})

	// Twice the concurrency and the rate.
	rate := 2 * float64(lg.Acknowledged) / lg.Elapsed.Seconds()
	over := map[string]any{"request_spans": cfg.RequestSpans, "concurrency": 2 * cfg.Concurrency,
		"rate_requests_per_s": rate, "duration_s": cfg.OverloadDuration.Seconds()}
	t, err = cfg.startTally(ctx, tg, db, "overload", profiling)
	if err != nil {
		return err
	}
	cfg.logf("overload: concurrency %d, %.1f requests/s, %s", 2*cfg.Concurrency, rate, cfg.OverloadDuration)
	sampler, gaugePeaks = sampleRSS(t, 100*time.Millisecond), sampleGauges(ctx, t, time.Second)
	if t.DebugURL != "" {
		// The heap while the overload is at its height, not after.
		profiles.Add(1)
		go func() {
			defer profiles.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(cfg.OverloadDuration * 2 / 3):
			}
			if err := fetch(ctx, t.DebugURL+"/debug/pprof/heap", filepath.Join(cfg.ProfileDir, "heap-overload-mid.pprof")); err != nil {
				cfg.logf("heap profile: %v", err)
			}
		}()
	}
	ol, err := loadgen.Run(ctx, loadgen.Config{Endpoint: t.URL, RequestSpans: cfg.RequestSpans,
		Concurrency: 2 * cfg.Concurrency, Rate: rate, Duration: cfg.OverloadDuration, Seed: cfg.Seed + 1})
	sampledPeak, peaks = sampler(), gaugePeaks()
	profiles.Wait()
	if err != nil {
		t.Stop() //nolint:errcheck // already failing
		return fmt.Errorf("loadgen (overload): %w", err)
	}
	cfg.logf("%s", ol)
	if t.DebugURL != "" {
		if err := fetch(ctx, t.DebugURL+"/debug/pprof/heap", filepath.Join(cfg.ProfileDir, "heap-overload.pprof")); err != nil {
			cfg.logf("heap profile: %v", err)
		}
	}
	peak, err = t.PeakRSS()
	if err != nil {
		t.Stop() //nolint:errcheck // already failing
		return err
	}
	total := uint64(lg.SpansAcknowledged + ol.SpansAcknowledged)
	storedAll, _, qerr := queryable(t, total, uint64(ol.SpansAcknowledged))
	if err := t.Stop(); err != nil {
		return err
	}
	if qerr == nil {
		if storedAll, err = finalCount(storedAll); err != nil {
			return err
		}
		qerr = func() error {
			if storedAll < total {
				return fmt.Errorf("%d spans acknowledged, %d stored", total, storedAll)
			}
			return nil
		}()
	}
	res.add(Figure{ID: tg.id("memory.overload_peak_rss"), Name: tg.name("tally serve peak RSS under 2× overload"),
		Value: mib(peak), Unit: "MiB", Goal: fmt.Sprintf("≤ %.0f", rssGoal), Met: atMost(mib(peak), rssGoal), Available: true, Inputs: over,
		Detail: splitDetail(withEntries(peaks, map[string]any{"source": "VmHWM",
			"requests": ol.Sent, "acknowledged": ol.Acknowledged, "refused_429_503": ol.Statuses[429] + ol.Statuses[503],
			"failed_network": ol.Statuses[0], "acknowledged_spans_per_s": ol.SpansPerSecond,
			"ack_p99_ms": ms(ol.LatencyP99), "acknowledged_all_stored": qerr == nil, "spans_stored_final": storedAll,
			"spans_acknowledged_both_runs": total}), sampledPeak)})
	return nil
}

// directResult is the direct bulk-insert baseline.
type directResult struct {
	rate     float64 // median spans/s over the passes
	passes   []int   // spans/s of each pass
	rows     int
	contents int
	cpu      cpuUse // the three passes': this process (the client) and the server
	events   eventCounts
}

// eventCounts are ClickHouse's counters of what the server did
// (system.events), to tell its work for the inserts (parts written, merged)
// from the reads tally and the suite run meanwhile; nil when unread.
type eventCounts map[string]uint64

// serverEventNames are the counters eventCounts keeps (all on 18.16), each
// with the key it is reported under.
var serverEventNames = map[string]string{"SelectQuery": "select_query", "InsertQuery": "insert_query",
	"InsertedRows": "inserted_rows", "MergedRows": "merged_rows", "SelectedRows": "selected_rows"}

// serverEvents reads the counters through store; nil when it cannot (the
// embedded store between tally runs has no store open).
func serverEvents(ctx context.Context, store *schema.Store) eventCounts {
	if store == nil {
		return nil
	}
	rows, err := store.Conn().Query(ctx, "SELECT event, toUInt64(value) FROM system.events WHERE event IN ('"+
		strings.Join(slices.Collect(maps.Keys(serverEventNames)), "', '")+"')")
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := eventCounts{}
	for rows.Next() {
		var name string
		var v uint64
		if rows.Scan(&name, &v) != nil {
			return nil
		}
		out[name] = v
	}
	if rows.Err() != nil {
		return nil
	}
	return out
}

// since is what the counters counted between b and c.
func (c eventCounts) since(b eventCounts) eventCounts {
	if c == nil || b == nil {
		return nil
	}
	out := eventCounts{}
	for name := range serverEventNames {
		out[name] = c[name] - b[name]
	}
	return out
}

// add puts the counts in detail as prefix+"clickhouse_"+<its key>.
func (c eventCounts) add(detail map[string]any, prefix string) {
	for name, v := range c {
		detail[prefix+"clickhouse_"+serverEventNames[name]] = v
	}
}

// cpuUse is the CPU time tally, the ClickHouse server and this process (the
// load generator, or the direct insert's client) used over a measurement:
// with every process on the same cores, the split says where a span's CPU
// goes and what rate the cores allow each path.
type cpuUse struct {
	tally, clickhouse, self time.Duration
	known                   bool // every process asked for was read
	// The machine's idle, stolen and total CPU time (all cores): whether
	// the cores were saturated, and how much of them the hypervisor gave
	// to other machines, which makes one run's rates differ from the next.
	idle, steal, total time.Duration
	hostKnown          bool
}

// cpuNow reads the CPU time used so far by tally (pid; 0 for none), the
// ClickHouse server (Config.CHPID) and this process.
func (cfg Config) cpuNow(tallyPID int) cpuUse {
	var u cpuUse
	tallyOK := true
	if tallyPID > 0 {
		u.tally, tallyOK = procCPU(tallyPID)
	}
	var serverOK, selfOK bool
	u.clickhouse, serverOK = procCPU(cfg.CHPID)
	u.self, selfOK = procCPU(os.Getpid())
	u.known = tallyOK && serverOK && selfOK
	u.idle, u.steal, u.total, u.hostKnown = hostCPU()
	return u
}

// since is the CPU used between b and u.
func (u cpuUse) since(b cpuUse) cpuUse {
	return cpuUse{tally: u.tally - b.tally, clickhouse: u.clickhouse - b.clickhouse, self: u.self - b.self,
		known: u.known && b.known, idle: u.idle - b.idle, steal: u.steal - b.steal, total: u.total - b.total,
		hostKnown: u.hostKnown && b.hostKnown}
}

// addHost adds the machine's idle and stolen shares of its CPU time over
// the measurement to detail, as prefix+"host_idle_share" and
// prefix+"host_steal_share".
func (u cpuUse) addHost(detail map[string]any, prefix string) {
	if !u.hostKnown || u.total <= 0 {
		return
	}
	share := func(d time.Duration) float64 { return math.Round(float64(d)/float64(u.total)*1000) / 1000 }
	detail[prefix+"host_idle_share"] = share(u.idle)
	detail[prefix+"host_steal_share"] = share(u.steal)
}

// addPerSpan adds the split in microseconds per span over spans to detail,
// each key prefix+<process>_cpu_us_per_span and the sum prefix+cpu_us_per_span,
// naming tally's share (when tallyName is not "") and this process's; it
// returns the sum, 0 (and adds nothing) when a process's CPU could not be read.
func (u cpuUse) addPerSpan(detail map[string]any, prefix string, spans int, tallyName, selfName string) float64 {
	if !u.known || spans <= 0 {
		return 0
	}
	us := func(d time.Duration) float64 { return math.Round(float64(d.Microseconds())/float64(spans)*100) / 100 }
	detail[prefix+"clickhouse_cpu_us_per_span"] = us(u.clickhouse)
	detail[prefix+selfName+"_cpu_us_per_span"] = us(u.self)
	total := u.clickhouse + u.self
	if tallyName != "" {
		detail[prefix+tallyName+"_cpu_us_per_span"] = us(u.tally)
		total += u.tally
	}
	detail[prefix+"cpu_us_per_span"] = us(total)
	return us(total)
}

// baselineRows are the rows the direct inserts write: read once, inserted
// by every pass.
type baselineRows struct {
	spans    []schema.Span
	contents []schema.Content
}

// readBaseline reads up to cfg.BaselineRows span rows that ingest stored,
// and the same share of content rows.
func readBaseline(ctx context.Context, cfg Config, from *schema.Store) (baselineRows, error) {
	var rows baselineRows
	q := "SELECT " + schema.SpanColumnNames() + " FROM " + from.Table(schema.TableSpans) + " LIMIT ?"
	if err := from.Conn().Select(ctx, &rows.spans, q, cfg.BaselineRows); err != nil {
		return rows, fmt.Errorf("read spans for the direct insert: %w", err)
	}
	var nSpans, nContent uint64
	if err := from.Conn().QueryRow(ctx, "SELECT (SELECT count() FROM "+from.Table(schema.TableSpans)+"), (SELECT count() FROM "+
		from.Table(schema.TableContent)+")").Scan(&nSpans, &nContent); err != nil {
		return rows, fmt.Errorf("count rows: %w", err)
	}
	if nSpans > 0 && nContent > 0 {
		want := int(float64(len(rows.spans)) * float64(nContent) / float64(nSpans))
		q := "SELECT " + schema.ContentColumnNames() + " FROM " + from.Table(schema.TableContent) + " LIMIT ?"
		if err := from.Conn().Select(ctx, &rows.contents, q, want); err != nil {
			return rows, fmt.Errorf("read content for the direct insert: %w", err)
		}
	}
	if len(rows.spans) == 0 {
		return rows, fmt.Errorf("no spans to insert directly")
	}
	return rows, nil
}

// directInsertRate inserts rows with Store.InsertSpans / InsertContents
// into database db (after cfg.DBPrefix) of their own, one stream, in
// batches of batch rows, content first like the writer. Three passes; the
// median counts.
func directInsertRate(ctx context.Context, cfg Config, tg *target, rows baselineRows, db string, batch int) (directResult, error) {
	spans, contents := rows.spans, rows.contents
	to, err := tg.open(ctx, cfg.DBPrefix+db)
	if err != nil {
		return directResult{}, err
	}
	defer to.Close()
	out := directResult{rows: len(spans), contents: len(contents)}
	var rates []float64
	cpuBefore := cfg.cpuNow(0)
	eventsBefore := serverEvents(ctx, to)
	for pass := range 3 {
		for i := range spans {
			spans[i].Version = uint64(pass + 1)
		}
		began := time.Now()
		cs := batch * len(contents) / len(spans)
		for i, c := 0, 0; i < len(spans); i, c = i+batch, c+cs {
			if c < len(contents) {
				if err := to.InsertContents(ctx, contents[c:min(c+cs, len(contents))]); err != nil {
					return directResult{}, err
				}
			}
			if err := to.InsertSpans(ctx, spans[i:min(i+batch, len(spans))]); err != nil {
				return directResult{}, err
			}
		}
		r := float64(len(spans)) / time.Since(began).Seconds()
		rates = append(rates, r)
		out.passes = append(out.passes, int(r))
	}
	out.cpu = cfg.cpuNow(0).since(cpuBefore)
	out.events = serverEvents(ctx, to).since(eventsBefore)
	sort.Float64s(rates)
	out.rate = rates[len(rates)/2]
	return out, nil
}

// waitQueryable waits until want spans of the project are stored and
// returns the deduplicated count and how long that took. It polls a plain
// count(), which ClickHouse answers by reading its smallest column (a few
// milliseconds), and only once that reaches want checks count() FINAL (which merges every
// part's keys, far too costly to poll while the rows it counts are still
// being inserted: the polling itself would slow the ingest it measures).
func waitQueryable(ctx context.Context, store *schema.Store, want uint64) (uint64, time.Duration, error) {
	began := time.Now()
	var n uint64
	table := store.Table(schema.TableSpans)
	for {
		err := store.Conn().QueryRow(ctx, "SELECT count() FROM "+table).Scan(&n)
		if err != nil {
			return 0, 0, fmt.Errorf("count stored spans: %w", err)
		}
		if n >= want {
			if n, err = countFinal(ctx, store); err != nil {
				return 0, 0, err
			}
			if n >= want {
				return n, time.Since(began), nil
			}
		}
		if time.Since(began) > queryableTimeout {
			return n, time.Since(began), fmt.Errorf("%d spans acknowledged but only %d stored after %s", want, n, queryableTimeout)
		}
		select {
		case <-ctx.Done():
			return n, time.Since(began), ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// countFinal is the project's deduplicated span count (FINAL).
func countFinal(ctx context.Context, store *schema.Store) (uint64, error) {
	var n uint64
	q := "SELECT count() FROM " + store.Table(schema.TableSpans) + " FINAL WHERE project = 'default'"
	if err := store.Conn().QueryRow(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("count stored spans: %w", err)
	}
	return n, nil
}

// sampleRSS polls the process's resident memory until the returned
// function is called, which returns the sample of the highest total (with
// its split into anonymous and file-backed memory: the embedded engine's
// code pages are file-backed, and reclaimable).
func sampleRSS(t *Tally, every time.Duration) func() procmem.Resident {
	var peak procmem.Resident
	stop := poll(every, func() {
		if r, err := procmem.Read(t.PID); err == nil && r.Total > peak.Total {
			peak = r
		}
	})
	return func() procmem.Resident { stop(); return peak }
}

// poll calls sample now and every interval until the returned function
// is called, which returns once the last call is done.
func poll(every time.Duration, sample func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(quit); <-done }
}

// memoryGauges are the gauges of tally's /metrics whose peaks a memory
// figure reports beside the RSS: where the memory went (the Go runtime's
// share, the embedded engine's), each under the detail key given.
var memoryGauges = map[string]string{
	"go_memstats_sys_bytes":           "peak_go_sys_mib",
	"go_memstats_heap_inuse_bytes":    "peak_go_heap_inuse_mib",
	"tally_store_engine_memory_bytes": "peak_engine_tracked_mib",
}

// sampleGauges polls memoryGauges every interval until the returned
// function is called, which returns each one's highest value in MiB by
// detail key (a gauge this tally does not export is left out).
func sampleGauges(ctx context.Context, t *Tally, every time.Duration) func() map[string]any {
	peak := map[string]any{}
	stop := poll(every, func() {
		m, err := t.gauges(ctx)
		if err != nil {
			return
		}
		raise := func(key string, v float64) {
			if old, _ := peak[key].(float64); mib(uint64(v)) > old {
				peak[key] = mib(uint64(v))
			}
		}
		for name, key := range memoryGauges {
			if v, ok := m[name]; ok && !math.IsNaN(v) {
				raise(key, v)
			}
		}
		// The engine's caches, each its own peak (of those holding a MiB
		// or more at some sample).
		for name, v := range m {
			if c, ok := strings.CutPrefix(name, "tally_store_engine_cache_bytes."); ok && v >= 1<<20 {
				raise("peak_engine_cache_"+c+"_mib", v)
			}
		}
	})
	return func() map[string]any { stop(); return peak }
}

// withEntries is d with e's entries added.
func withEntries(d, e map[string]any) map[string]any {
	maps.Copy(d, e)
	return d
}

// splitDetail is the detail of a memory figure: the sampled peak's total
// and its anonymous and file-backed parts, in MiB.
func splitDetail(d map[string]any, r procmem.Resident) map[string]any {
	d["sampled_peak_vmrss_mib"], d["sampled_peak_anon_mib"], d["sampled_peak_file_mib"] = mib(r.Total), mib(r.Anon), mib(r.File)
	return d
}

// fetch GETs url into path.
func fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(b uint64) float64       { return float64(b) / (1 << 20) }

// waitWritten waits until this tally serve has inserted want spans (its
// tally_writer_written_spans_total) and its durable log holds nothing
// undelivered: the embedded store's "queryable", read from tally itself
// because the suite cannot open the store while tally has it.
func (t *Tally) waitWritten(ctx context.Context, want uint64) (uint64, time.Duration, error) {
	began := time.Now()
	var written float64
	for {
		m, err := t.metrics(ctx, "tally_writer_written_spans_total", "tally_wal_pending_records")
		if err != nil {
			return 0, 0, err
		}
		written = m["tally_writer_written_spans_total"]
		if written >= float64(want) && m["tally_wal_pending_records"] == 0 {
			return uint64(written), time.Since(began), nil
		}
		if time.Since(began) > queryableTimeout {
			return uint64(written), time.Since(began), fmt.Errorf("%d spans acknowledged but only %.0f written after %s", want, written, queryableTimeout)
		}
		select {
		case <-ctx.Done():
			return uint64(written), time.Since(began), ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// families reads tally's /metrics, parsed with Prometheus's own text
// parser.
func (t *Tally) families(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tally metrics: %w", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("tally metrics: %w", err)
	}
	return families, nil
}

// gauges reads every gauge of tally's /metrics: an unlabelled one under its name, one
// with a single label as name.value.
func (t *Tally) gauges(ctx context.Context) (map[string]float64, error) {
	families, err := t.families(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			if m.Gauge == nil {
				continue
			}
			switch l := m.GetLabel(); {
			case len(mf.GetMetric()) == 1 && len(l) == 0:
				out[name] = m.Gauge.GetValue()
			case len(l) == 1:
				out[name+"."+l[0].GetValue()] = m.Gauge.GetValue()
			}
		}
	}
	return out, nil
}

// metrics reads the named unlabelled gauges and counters from tally's
// /metrics.
func (t *Tally) metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	families, err := t.families(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, name := range names {
		mf := families[name]
		if mf == nil || len(mf.GetMetric()) != 1 {
			return nil, fmt.Errorf("tally metrics: no single %s", name)
		}
		m := mf.GetMetric()[0]
		switch {
		case m.Gauge != nil:
			out[name] = m.Gauge.GetValue()
		case m.Counter != nil:
			out[name] = m.Counter.GetValue()
		default:
			return nil, fmt.Errorf("tally metrics: %s is neither a gauge nor a counter", name)
		}
	}
	return out, nil
}

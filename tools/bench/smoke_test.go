package bench_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/bench"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestSmoke runs the whole suite at a tiny scale so that `make bench`
// cannot rot: every figure must be produced, finite and positive, or be
// explicitly not available in this build with a reason. No timing is
// asserted.
func TestSmoke(t *testing.T) {
	ch := testenv.ClickHouse(t)
	ctx := context.Background()
	root, err := bench.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin, err := bench.BuildTally(ctx, root, work)
	if err != nil {
		t.Fatal(err)
	}
	suffix := make([]byte, 3)
	rand.Read(suffix) //nolint:errcheck // crypto/rand.Read does not fail
	prefix := "smoke_" + hex.EncodeToString(suffix) + "_"
	t.Cleanup(func() {
		store, err := schema.Open(ctx, schema.Config{Addr: ch.Addr, Database: "default"})
		if err != nil {
			return
		}
		defer store.Close()
		for _, db := range []string{"ingest", "direct", "direct_stream", "load", "large"} {
			store.Conn().Exec(ctx, "DROP DATABASE IF EXISTS "+prefix+db) //nolint:errcheck // best-effort cleanup
		}
	})

	cfg := bench.DefaultConfig()
	cfg.CHAddr, cfg.TallyBin, cfg.WorkDir, cfg.DBPrefix = ch.Addr, bin, work, prefix
	cfg.CHPID = ch.PID()
	cfg.Spans = 10_000
	cfg.LargeRuns = []int{500, 5000}
	cfg.IngestDuration = 2 * time.Second
	cfg.OverloadDuration = time.Second
	cfg.Concurrency = 2
	cfg.BaselineRows, cfg.BaselineBatch, cfg.BaselineStreamBatch = 5000, 1000, 2500
	cfg.LargeContentRequests = 4
	cfg.DecodeDuration = 200 * time.Millisecond
	cfg.TreeSamples, cfg.RollupSamples, cfg.PaintSamples = 4, 2, 1
	cfg.InFlightWarmup = 2 * time.Second
	cfg.ProfileDir = filepath.Join(work, "profiles")
	if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("bench.Run: %v", err)
	}

	want := []string{
		"decode.normalize_spans_per_core", "decode.unmarshal_spans_per_core", "decode.wire_spans_per_core", "decode.pdata_normalize_spans_per_core",
		"ingest.efficiency", "ingest.spans_per_s", "ingest.ack_latency_p50", "ingest.ack_latency_p99",
		"memory.sustained_peak_rss", "memory.overload_peak_rss", "memory.large_content_peak_rss",
		"loader.spans_per_s", "storage.bytes_per_span", "storage.bytes_per_span_loaded",
		"tree.500.p50", "tree.500.p99", "tree.5000.p50", "tree.5000.p99", "tree.5000.first_part", "ui.first_paint.5000", "tree.5000.readers_rss",
		"rollup.cost_by_agent.p99", "rollup.cost_by_model.p99", "rollup.tool_p95.p99",
		"inflight.runs.1h.p99", "inflight.runs.cost.7d.p99", "inflight.tasks.7d.p99", "inflight.signals.24h.p99", "inflight.conversations.7d.p99",
		// The same store-dependent figures on the embedded store.
		"embedded.ingest.efficiency", "embedded.ingest.spans_per_s", "embedded.ingest.ack_latency_p99",
		"embedded.memory.sustained_peak_rss", "embedded.memory.overload_peak_rss",
		"embedded.loader.spans_per_s", "embedded.storage.bytes_per_span", "embedded.storage.bytes_per_span_loaded",
		"embedded.tree.500.p99", "embedded.tree.5000.p99", "embedded.tree.5000.readers_rss",
		"embedded.rollup.cost_by_agent.p99", "embedded.rollup.cost_by_model.p99", "embedded.rollup.tool_p95.p99",
		"embedded.inflight.runs.1h.p99", "embedded.inflight.tasks.7d.p99",
	}
	for _, id := range want {
		f := res.Figure(id)
		switch {
		case f == nil:
			t.Errorf("figure %s missing", id)
		case !f.Available && f.Reason == "":
			t.Errorf("figure %s not available without a reason", id)
		case f.Available && (f.Value <= 0 || math.IsInf(f.Value, 0) || math.IsNaN(f.Value)):
			t.Errorf("figure %s = %v, want a finite positive value", id, f.Value)
		case len(f.Inputs) == 0:
			t.Errorf("figure %s has no inputs", id)
		}
	}
	for _, id := range []string{"ingest.spans_per_s", "embedded.ingest.spans_per_s"} {
		if f := res.Figure(id); f != nil && fmt.Sprint(f.Detail["spans_acknowledged"]) != fmt.Sprint(f.Detail["spans_stored_final"]) {
			t.Errorf("%s: acknowledged %v spans, stored %v", id, f.Detail["spans_acknowledged"], f.Detail["spans_stored_final"])
		}
	}
	// The server pass splits a span's CPU between tally, the server and
	// the load generator (or the direct insert's client); the embedded pass
	// has no server process to read, so no split.
	if f := res.Figure("ingest.efficiency"); f != nil {
		for _, key := range []string{"tally_cpu_us_per_span", "clickhouse_cpu_us_per_span", "loadgen_cpu_us_per_span",
			"cpu_us_per_span", "direct_client_cpu_us_per_span", "direct_clickhouse_cpu_us_per_span", "direct_cpu_us_per_span",
			"cpu_bound_efficiency", "direct_stream_spans_per_s", "efficiency_vs_direct_stream"} {
			if v, _ := f.Detail[key].(float64); v <= 0 {
				t.Errorf("ingest.efficiency %s = %v, want a positive figure", key, f.Detail[key])
			}
		}
		// The machine's idle and stolen shares are shares.
		for _, key := range []string{"host_idle_share", "host_steal_share", "direct_host_idle_share", "direct_host_steal_share"} {
			if v, ok := f.Detail[key].(float64); !ok || v < 0 || v > 1 {
				t.Errorf("ingest.efficiency %s = %v, want a share between 0 and 1", key, f.Detail[key])
			}
		}
		// The second direct insert ran at the batch size it was given.
		if got := f.Detail["direct_stream_batch_rows"]; got != 2500 {
			t.Errorf("ingest.efficiency direct_stream_batch_rows = %v, want 2500", got)
		}
		// Every span reached the server in an INSERT, on both paths.
		for _, key := range []string{"clickhouse_inserted_rows", "direct_clickhouse_inserted_rows"} {
			if v, _ := f.Detail[key].(uint64); v == 0 {
				t.Errorf("ingest.efficiency %s = %v, want the server's count of rows inserted", key, f.Detail[key])
			}
		}
	}
	if f := res.Figure("embedded.ingest.efficiency"); f != nil && f.Detail["cpu_us_per_span"] != nil {
		t.Errorf("embedded.ingest.efficiency has a CPU split (%v µs a span) without a server process", f.Detail["cpu_us_per_span"])
	}
	if res.Machine.Cores <= 0 || res.Machine.ClickHouseVersion == "" || res.Machine.GoVersion == "" || res.Machine.EmbeddedVersion == "" {
		t.Errorf("machine not described: %+v", res.Machine)
	}
	for _, p := range []string{"cpu.pprof", "heap.pprof"} {
		if st, err := os.Stat(filepath.Join(cfg.ProfileDir, p)); err != nil || st.Size() == 0 {
			t.Errorf("profile %s not written: %v", p, err)
		}
	}

	out := filepath.Join(work, "out")
	if err := res.Write(out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back bench.Results
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(back.Figures) != len(res.Figures) {
		t.Errorf("results.json holds %d figures, want %d", len(back.Figures), len(res.Figures))
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil || len(md) == 0 {
		t.Errorf("results.md not written: %v", err)
	}
	if !strings.Contains(string(md), "side by side") || !strings.Contains(string(md), "(embedded store)") {
		t.Errorf("results.md has no side-by-side table of the two stores:\n%s", md)
	}
}

package alerts_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/tools/demo"
)

// BenchmarkEvaluateCycle times one evaluation of the default rules with
// every span inside the 15-minute window (the worst case for a cycle).
// TALLY_BENCH_RUNS sets the demo runs (default 2000, about 60k spans;
// 30000 runs make about a million).
func BenchmarkEvaluateCycle(b *testing.B) {
	ctx := context.Background()
	store := openStore(b)
	runs := 2000
	if v, err := strconv.Atoi(os.Getenv("TALLY_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	catalog, err := pricing.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Minute)
	total := 0
	for done := 0; done < runs; done += 1000 {
		gen := demo.Generate(demo.Config{Runs: min(1000, runs-done), Seed: int64(done + 1), Start: now.Add(-24 * time.Hour)})
		raw, err := proto.Marshal(demo.ExportRequest(gen))
		if err != nil {
			b.Fatal(err)
		}
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
		if err != nil {
			b.Fatal(err)
		}
		batch, _ := ingest.Normalize(td, ingest.Options{Project: "p", Pricer: catalog, Usage: ingest.DefaultUsagePolicy()})
		// Fold the spans into the last 14 minutes, keeping their order.
		spans := batch.Spans
		first := spans[0].StartNs
		for i := range spans {
			first = min(first, spans[i].StartNs)
		}
		for i := range spans {
			s := &spans[i]
			off := (s.StartNs - first) % uint64(14*time.Minute)
			start := now.Add(-14 * time.Minute).Add(time.Duration(off))
			s.StartNs, s.EndNs = uint64(start.UnixNano()), uint64(start.UnixNano())+s.DurationNs
			s.Start = start.Truncate(time.Second)
		}
		if err := store.InsertSpans(ctx, spans); err != nil {
			b.Fatal(err)
		}
		total += len(spans)
	}
	rules, err := alerts.LoadRules("../deploy/alerts.yaml")
	if err != nil {
		b.Fatal(err)
	}
	reader := query.NewReader(store)
	tm := &timings{b: b, total: map[string]time.Duration{}}
	ev, err := alerts.NewEvaluator(alerts.Config{Rules: rules, Source: timedSource{reader, tm},
		Now:   func() time.Time { return now },
		Cache: timedCache{alerts.CacheFromReports(query.NewCostReader(reader, catalog)), tm}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if err := ev.Evaluate(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(total), "spans")
	// Per-query time of one cycle, milliseconds (mean over the b.N cycles).
	for what, d := range tm.total {
		b.ReportMetric(float64(d.Microseconds())/1000/float64(b.N), what+"-ms")
	}
}

// timings logs each query of a cycle and sums its time per kind.
type timings struct {
	b     *testing.B
	mu    sync.Mutex
	total map[string]time.Duration
}

func (t *timings) took(what string, start time.Time) {
	d := time.Since(start)
	t.b.Logf("%-15s %v", what, d.Round(time.Millisecond))
	t.mu.Lock()
	t.total[strings.ReplaceAll(what, " ", "-")] += d
	t.mu.Unlock()
}

// timedSource reports how long each query of a cycle takes.
type timedSource struct {
	alerts.Source
	t *timings
}

func (s timedSource) took(what string, start time.Time) { s.t.took(what, start) }

func (s timedSource) Tools(ctx context.Context, f query.ToolFilter) ([]query.ToolStats, error) {
	defer s.took("tools", time.Now())
	return s.Source.Tools(ctx, f)
}

func (s timedSource) Models(ctx context.Context, w query.Window) ([]query.ModelStats, error) {
	defer s.took("models", time.Now())
	return s.Source.Models(ctx, w)
}

func (s timedSource) RunsOverBudget(ctx context.Context, w query.Window, budget float64, limit int) ([]query.RunCost, error) {
	defer s.took("runs over budget", time.Now())
	return s.Source.RunsOverBudget(ctx, w, budget, limit)
}

func (s timedSource) RepeatLoops(ctx context.Context, w query.Window, minCalls, limit int) ([]query.RepeatLoop, error) {
	defer s.took("repeat loops", time.Now())
	return s.Source.RepeatLoops(ctx, w, minCalls, limit)
}

func (s timedSource) UsageByMinute(ctx context.Context, w query.Window) ([]query.UsageMinute, error) {
	defer s.took("usage", time.Now())
	return s.Source.UsageByMinute(ctx, w)
}

type timedCache struct {
	alerts.CacheHealth
	t *timings
}

func (c timedCache) CacheVerdicts(ctx context.Context, project string, since, until time.Time) ([]alerts.CacheVerdict, error) {
	defer c.t.took("cache", time.Now())
	return c.CacheHealth.CacheVerdicts(ctx, project, since, until)
}

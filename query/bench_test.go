package query_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
)

// benchSpans builds n spans over the 30 days before now: runs of five spans
// (an agent span, three chats, a tool call), eight agents, four models.
func benchSpans(n int, now time.Time) []schema.Span {
	rng := rand.New(rand.NewPCG(1, 2))
	agents := []string{"planner", "researcher", "writer", "critic", "router", "coder", "tester", "summarizer"}
	models := []struct{ provider, model string }{
		{"openai", "gpt-4o"}, {"openai", "gpt-4o-mini"}, {"anthropic", "claude-sonnet-4-5"}, {"anthropic", "claude-3-5-haiku"},
	}
	spans := make([]schema.Span, 0, n)
	for run := 0; len(spans) < n; run++ {
		trace := fmt.Sprintf("%032x", run+1)
		start := now.Add(-time.Duration(rng.Int64N(int64(30 * 24 * time.Hour))))
		agent := agents[rng.IntN(len(agents))]
		mk := func(i int, typ string, offset time.Duration) schema.Span {
			st := start.Add(offset)
			s := schema.Span{Project: "bench", TraceID: trace, SpanID: fmt.Sprintf("%016x", (run+1)*8+i),
				Name: typ, SpanType: typ, Start: st.Truncate(time.Second), StartNs: uint64(st.UnixNano()),
				EndNs: uint64(st.Add(time.Second).UnixNano()), Status: "ok", Service: "svc", Version: 1}
			if i > 0 {
				s.ParentSpanID = fmt.Sprintf("%016x", (run+1)*8)
			}
			return s
		}
		root := mk(0, schema.TypeAgent, 0)
		root.AgentName = agent
		root.TaskName = "task-" + strconv.Itoa(run%20)
		spans = append(spans, root)
		for i := 1; i <= 3 && len(spans) < n; i++ {
			m := models[rng.IntN(len(models))]
			s := mk(i, schema.TypeInference, time.Duration(i)*2*time.Second)
			s.Provider, s.Model = m.provider, m.model
			s.InputTokens, s.CacheReadTokens, s.OutputTokens = 3000, uint64(rng.IntN(2))*2000, 300
			s.UsageMode, s.CostSource, s.CostTotal, s.CostInput, s.CostOutput = schema.UsageInclusive, schema.CostCatalog, 0.01, 0.007, 0.003
			spans = append(spans, s)
		}
		if len(spans) < n {
			s := mk(4, schema.TypeTool, 9*time.Second)
			s.ToolName = "search"
			spans = append(spans, s)
		}
	}
	return spans
}

// BenchmarkCostsByAgent30d measures cost reports over 30 days of spans
// (TALLY_BENCH_SPANS, default 200000), first read live from raw spans, then
// with the hourly rollup refreshed; it reports the p50 and p99 latency of
// the report by agent and by model. Run with -benchtime 1x (make bench) or
// more iterations for steadier percentiles.
func BenchmarkCostsByAgent30d(b *testing.B) {
	n := 200000
	if v := os.Getenv("TALLY_BENCH_SPANS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("TALLY_BENCH_SPANS=%q: want a positive integer", v)
		}
	}
	ctx := context.Background()
	store := openStore(b)
	// Drop the big tables with a generous deadline before the database is
	// dropped (cleanups run last-registered first): on a busy machine a
	// DROP waiting for background merges can outlast testenv's 30 s.
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, table := range []string{schema.TableSpans, schema.TableSpanFacts, schema.TableCostRollup, schema.TableCostRollupHours} {
			if err := store.Conn().Exec(ctx, "DROP TABLE IF EXISTS "+store.Table(table)); err != nil {
				b.Logf("drop %s: %v", table, err)
			}
		}
	})
	now := time.Now().UTC()
	spans := benchSpans(n, now)
	t0 := time.Now()
	for batch := range slices.Chunk(spans, 50000) {
		if err := store.InsertSpans(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("loaded %d spans in %s", len(spans), time.Since(t0).Round(time.Millisecond))
	r := query.NewReader(store)
	since, until := now.Add(-30*24*time.Hour), now

	measure := func(by string) func(b *testing.B) {
		return func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t := time.Now()
				if _, err := r.Costs(ctx, query.CostFilter{Project: "bench", By: by, Since: since, Until: until}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		}
	}
	b.Run("live/by=agent", measure(query.ByAgent))

	t0 = time.Now()
	stats, err := rollup.New(store, rollup.Config{}).RefreshRange(ctx, since.Add(-time.Hour), now)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("rollup refresh: %d hours, %d rows in %s", stats.HoursRecomputed, stats.RowsWritten, time.Since(t0).Round(time.Millisecond))
	b.Run("rollup/by=agent", measure(query.ByAgent))
	b.Run("rollup/by=model", measure(query.ByModel))
}

package query_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// countedCall is an inference span of one run with usage.
func countedCall(trace string, i int, parent string, start, end time.Time, in, cacheRead, out uint64) schema.Span {
	return schema.Span{Project: "p", TraceID: trace, SpanID: fmt.Sprintf("%016x", i+1), ParentSpanID: parent,
		Start: start.Truncate(time.Second), StartNs: uint64(start.UnixNano()), EndNs: uint64(end.UnixNano()),
		DurationNs: uint64(end.Sub(start)), Name: "chat", SpanType: schema.TypeInference, UsageMode: schema.UsageInclusive,
		InputTokens: in, CacheReadTokens: cacheRead, OutputTokens: out, CostTotal: float64(in+out) * 1e-6, IngestedAt: start, Version: 1}
}

// TestCountedOnceMatchesGoOnRandomRuns holds the run list's SQL counting
// rule (query/counted.go) to attribution.CountedUsage, the rule as Go
// applies it, on runs made to hit its cases: few distinct usages (so
// buckets repeat), a coarse time grid (so starts and ends tie), wrappers
// and nested twins. The expected figures are Go's, an independent
// implementation of the rule, summed over the spans it counts.
func TestCountedOnceMatchesGoOnRandomRuns(t *testing.T) {
	store := openStore(t)
	rng := rand.New(rand.NewPCG(41, 7))
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)
	want := map[string]attribution.Usage{}
	var spans []schema.Span
	for r := range 60 {
		trace := fmt.Sprintf("%032x", 0xc0ffee00+r)
		n := 2 + rng.IntN(24)
		var run []schema.Span
		for i := range n {
			start := base.Add(time.Duration(rng.IntN(6)) * time.Second)
			end := start.Add(time.Duration(rng.IntN(4)) * time.Second)
			usage := []uint64{100, 250, 100}[rng.IntN(3)]
			parent := ""
			if i > 0 && rng.IntN(4) == 0 {
				parent = run[rng.IntN(i)].SpanID // a wrapper around an earlier call
			}
			run = append(run, countedCall(trace, i, parent, start, end, usage, usage/10*uint64(rng.IntN(2)), 10))
		}
		us := make([]attribution.UsageSpan, len(run))
		for i, s := range run {
			us[i] = attribution.UsageSpan{ID: s.SpanID, ParentID: s.ParentSpanID, SpanType: s.SpanType, UsageMode: s.UsageMode,
				StartNs: s.StartNs, EndNs: s.EndNs, Input: s.InputTokens, CacheRead: s.CacheReadTokens, Output: s.OutputTokens}
		}
		counted, _ := attribution.CountedUsage(us)
		var u attribution.Usage
		for i, c := range counted {
			if c {
				u.Input += run[i].InputTokens
				u.CacheRead += run[i].CacheReadTokens
				u.Output += run[i].OutputTokens
			}
		}
		want[trace] = u
		spans = append(spans, run...)
	}
	insert(t, store, spans, 1)
	page, err := query.NewReader(store).Runs(context.Background(), query.RunFilter{Project: "p", Since: base.Add(-time.Minute), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != len(want) {
		t.Fatalf("%d runs listed, want %d", len(page.Runs), len(want))
	}
	for _, run := range page.Runs {
		w := want[run.TraceID]
		if run.Usage.Input != w.Input || run.Usage.CacheRead != w.CacheRead || run.Usage.Output != w.Output {
			t.Errorf("run %s: counted in %d cache read %d out %d, want Go's %d %d %d", run.TraceID,
				run.Usage.Input, run.Usage.CacheRead, run.Usage.Output, w.Input, w.CacheRead, w.Output)
		}
	}
}

// TestCountedOnceIsLinear is issue #41's third defect: a run whose 20,000
// calls report identical usage made the counted-once rule compare every
// pair of them; on ClickHouse 18.16 the run list answered 500 ("would use
// 10.02 GiB"). The calls follow each other (none within another), so all
// count; one more span wraps the first call with the same usage, its
// twin, and does not: 20,000 × (1,000 in, 100 out).
func TestCountedOnceIsLinear(t *testing.T) {
	store := openStore(t)
	const n = 20000
	trace := fmt.Sprintf("%032x", 0xbadc0de)
	base := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	spans := make([]schema.Span, 0, n+1)
	for i := range n {
		start := base.Add(time.Duration(i) * 100 * time.Millisecond)
		spans = append(spans, countedCall(trace, i, "", start, start.Add(50*time.Millisecond), 1000, 0, 100))
	}
	wrapper := countedCall(trace, n, "", base.Add(-time.Millisecond), base.Add(60*time.Millisecond), 1000, 0, 100)
	spans = append(spans, wrapper)
	insert(t, store, spans, 1)
	page, err := query.NewReader(store).Runs(context.Background(), query.RunFilter{Project: "p", Since: base.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(page.Runs))
	}
	if u := page.Runs[0].Usage; u.Input != n*1000 || u.Output != n*100 || page.Runs[0].LLMCalls != n {
		t.Errorf("counted in %d out %d over %d calls, want %d, %d over %d", u.Input, u.Output, page.Runs[0].LLMCalls, n*1000, n*100, n)
	}
}

// BenchmarkRunListOneBigRun times the run list over one run of n calls of
// identical usage (issue #41's third defect: 5.5 s at 5,000 spans and
// 14.4 s at 10,000 before the rule was linear, and 500 at 20,000).
func BenchmarkRunListOneBigRun(b *testing.B) {
	store := openStore(b)
	reader := query.NewReader(store)
	base := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	for _, n := range []int{1, 5000, 10000, 20000} {
		trace := fmt.Sprintf("%032x", 0xb16000+n)
		spans := make([]schema.Span, n)
		for i := range spans {
			start := base.Add(time.Duration(i) * 100 * time.Millisecond)
			spans[i] = countedCall(trace, i, "", start, start.Add(50*time.Millisecond), 1000, 0, 100)
		}
		insert(b, store, spans, 1)
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := reader.Runs(context.Background(), query.RunFilter{Project: "p",
					Since: base.Add(-time.Minute)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package query_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/bench/loader"
)

// BenchmarkRunTreeFirstPart reads the run page's first part (2,000 nodes,
// as the UI asks) of one run of TALLY_BENCH_RUN_SPANS spans (default
// 50,000) written by the bench loader, and the whole tree of a run of 500
// and of 5,000: the run-tree figures of make bench, on a small store. The
// runs are settled first, as make bench does (the big run's part is read
// from its settled tree); TALLY_BENCH_UNSETTLED=1 leaves them unsettled
// (the part is computed from the run's outline).
func BenchmarkRunTreeFirstPart(b *testing.B) {
	n := 50000
	if v, err := strconv.Atoi(os.Getenv("TALLY_BENCH_RUN_SPANS")); err == nil && v > 0 {
		n = v
	}
	store := openStore(b)
	ctx := context.Background()
	st, err := loader.Load(ctx, store, loader.Config{Spans: n + 5500 + 1000, Days: 1, LargeRuns: []int{500, 5000, n},
		Seed: 3, Project: "bench", End: time.Now().Add(-time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	reader := query.NewReader(store)
	if os.Getenv("TALLY_BENCH_UNSETTLED") == "" {
		for _, r := range st.Large {
			settled, err := reader.SettleSource.Settle(ctx, "bench", []string{r.TraceID}, uint64(time.Now().UnixNano()))
			if err != nil || len(settled) != 1 {
				b.Fatalf("settle: %d rows, %v", len(settled), err)
			}
			if err := store.InsertRuns(ctx, []schema.RunRow{settled[0].Row}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, r := range st.Large {
		b.Run(strconv.Itoa(r.Spans), func(b *testing.B) {
			// As the API asks: a run read whole within --max-run-spans
			// (10,000) and --max-tree-spans (100,000), the UI's part of a
			// bigger one.
			o := query.TreeOptions{MaxNodes: 10000, MaxSpans: 100000}
			if r.Spans > o.MaxNodes {
				o.MaxNodes = 2000
			}
			for b.Loop() {
				d, err := reader.RunTree(ctx, "bench", r.TraceID, o)
				if err != nil {
					b.Fatal(err)
				}
				if d.Summary.Spans != r.Spans {
					b.Fatalf("summary holds %d spans, want %d", d.Summary.Spans, r.Spans)
				}
			}
		})
	}
}

package query_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/tools/bench/loader"
)

// BenchmarkRunTreeFirstPart reads the run page's first part (2,000 nodes,
// as the UI asks) of one run of TALLY_BENCH_RUN_SPANS spans (default
// 50,000) written by the bench loader, and the whole tree of a run of 500
// and of 5,000: the run-tree figures of make bench, on a small store.
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
	for _, r := range st.Large {
		b.Run(strconv.Itoa(r.Spans), func(b *testing.B) {
			o := query.TreeOptions{MaxNodes: 2000, MaxSpans: 200000}
			if r.Spans < 2000*2 {
				o.MaxNodes = 0
			}
			if r.Spans == 5000 {
				o.MaxNodes = 5000
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

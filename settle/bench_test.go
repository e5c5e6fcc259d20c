package settle_test

import (
	"context"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/settle"
	"github.com/tallyhq/tally/tools/bench/loader"
)

// BenchmarkSettle settles the bench loader's runs (20 spans on average,
// over 2 days) from scratch each iteration and reports the settler's cost
// per run; `make bench` measures the same at 10M spans (settle.*).
func BenchmarkSettle(b *testing.B) {
	store := goldentest.OpenStore(b)
	ctx := context.Background()
	st, err := loader.Load(ctx, store, loader.Config{Spans: 100_000, Days: 2, RunSize: 20, Seed: 1, Project: "default", Inserters: 1})
	if err != nil {
		b.Fatal(err)
	}
	r := query.NewReader(store)
	now := time.Now().Add(time.Hour)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := store.Conn().Exec(ctx, "TRUNCATE TABLE "+store.Table("runs")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s := settle.New(r.SettleSource, store, settle.Config{})
		stats, err := s.Check(ctx, st.Since.Add(-time.Hour), now, now, nil)
		if err != nil {
			b.Fatal(err)
		}
		if stats.Settled != st.Runs {
			b.Fatalf("settled %d runs, want %d", stats.Settled, st.Runs)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*st.Runs), "µs/run")
}

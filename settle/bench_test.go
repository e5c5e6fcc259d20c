package settle_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/settle"
	"github.com/tallyhq/tally/tools/bench/loader"
)

// BenchmarkSettle settles the bench loader's runs (20 spans on average,
// over 2 days) from scratch each iteration and reports the settler's cost
// per run: the time, and the CPU of this process (on the server store
// tally's side alone, on the embedded store the engine's too); `make
// bench` measures the same at 10M spans (settle.*).
func BenchmarkSettle(b *testing.B) {
	store := goldentest.OpenStore(b)
	ctx := context.Background()
	st, err := loader.Load(ctx, store, loader.Config{Spans: 100_000, Days: 2, RunSize: 20, Seed: 1, Project: "default", Inserters: 1})
	if err != nil {
		b.Fatal(err)
	}
	r := query.NewReader(store)
	now := time.Now().Add(time.Hour)
	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := store.Conn().Exec(ctx, "TRUNCATE TABLE "+store.Table("runs")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := processCPU(b)
		s := settle.New(r.SettleSource, store, settle.Config{})
		stats, err := s.Check(ctx, st.Since.Add(-time.Hour), now, now, nil)
		if err != nil {
			b.Fatal(err)
		}
		cpu += processCPU(b) - before
		if stats.Settled != st.Runs {
			b.Fatalf("settled %d runs, want %d", stats.Settled, st.Runs)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*st.Runs), "µs/run")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*st.Runs), "cpu-µs/run")
}

// processCPU is the user and system CPU this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

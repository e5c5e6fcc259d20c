package durable

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/wal"
)

type discard struct{}

func (discard) Accept(context.Context, ingest.Batch) error { return nil }

// BenchmarkSinkAccept measures what the receiver sees: encode, append with
// group commit, while Run drains into a downstream that takes everything.
// Batches of 512 spans, 8 concurrent requests.
func BenchmarkSinkAccept(b *testing.B) {
	batch := batchOf(0, 512)
	for i := range batch.Spans { // Accept stamps zero versions in place: share no writes
		batch.Spans[i].Version, batch.Contents[i].Version = 1, 1
	}
	for _, fsync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%t", fsync), func(b *testing.B) {
			s, err := Open(b.TempDir(), discard{}, Config{WAL: wal.Options{NoSync: !fsync}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { s.Run(ctx); close(done) }()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range 8 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if err := s.Accept(context.Background(), batch); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			cancel()
			<-done
			b.ReportMetric(float64(512*b.N)/elapsed.Seconds(), "spans/s")
		})
	}
}

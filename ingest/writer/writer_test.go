package writer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
)

// fakeStore records the span count of every INSERT and can take a while.
type fakeStore struct {
	delay time.Duration
	mu    sync.Mutex
	sizes []int
}

func (f *fakeStore) InsertSpans(_ context.Context, rows []schema.Span) error {
	time.Sleep(f.delay)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizes = append(f.sizes, len(rows))
	return nil
}

func (f *fakeStore) InsertContents(context.Context, []schema.Content) error { return nil }

func (f *fakeStore) inserts() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.sizes...)
}

func spans(n int) ingest.Batch { return ingest.Batch{Spans: make([]schema.Span, n)} }

func start(t testing.TB, store Store, cfg Config) *Writer {
	w := New(store, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func TestHalfBatchIsWrittenAtOnce(t *testing.T) {
	// The flush interval is an hour: a request can only be acknowledged
	// within its 2 s ack timeout if it is written without waiting for it.
	tests := []struct {
		name    string
		spans   int
		written bool
	}{
		{"half a batch", 50, true},        // 2·50 ≥ 100
		{"a full batch", 100, true},       // 100 ≥ 100
		{"under half a batch", 49, false}, // 2·49 < 100: waits for company
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{}
			w := start(t, store, Config{MaxBatchSpans: 100, FlushInterval: time.Hour, AckTimeout: 2 * time.Second})
			err := w.Accept(context.Background(), spans(tt.spans))
			var over *Overloaded
			switch {
			case tt.written && err != nil:
				t.Fatalf("Accept: %v, want the batch written at once", err)
			case tt.written && len(store.inserts()) != 1:
				t.Fatalf("inserts %v, want one of %d spans", store.inserts(), tt.spans)
			case !tt.written && !errors.As(err, &over):
				t.Fatalf("Accept: %v, want *Overloaded (the batch waits for the flush interval)", err)
			}
		})
	}
}

func TestConcurrentRequestsAllWritten(t *testing.T) {
	store := &fakeStore{}
	// Two requests of 30 spans each stay under half a batch (2·30 < 100) and
	// together reach MaxBatchSpans only with a third: 3·30 = 90 < 100, so
	// all three wait for the (long) flush interval; the test checks that
	// every row is written once (whether they share one INSERT depends on
	// goroutine timing, which a test must not assert).
	w := start(t, store, Config{MaxBatchSpans: 100, FlushInterval: 300 * time.Millisecond, AckTimeout: 10 * time.Second})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w.Accept(context.Background(), spans(30)) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Accept: %v", err)
		}
	}
	total := 0
	for _, n := range store.inserts() {
		total += n
	}
	if total != 90 {
		t.Errorf("inserted %d rows in %v, want 90", total, store.inserts())
	}
	if got := w.Stats().WrittenSpans; got != 90 {
		t.Errorf("WrittenSpans = %d, want 90", got)
	}
}

func TestVersionStampedOnlyWhenZero(t *testing.T) {
	store := &fakeStore{}
	w := start(t, store, Config{MaxBatchSpans: 2})
	b := ingest.Batch{Spans: []schema.Span{{Version: 0}, {Version: 7}}}
	if err := w.Accept(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if b.Spans[0].Version == 0 {
		t.Error("zero version not stamped")
	}
	if b.Spans[1].Version != 7 {
		t.Errorf("version 7 overwritten with %d", b.Spans[1].Version)
	}
}

// BenchmarkSerialDrain feeds the writer the way the durable log drains into
// it: one coalesced batch of 39 requests × 512 spans (19,968, just under
// MaxBatchSpans) at a time, each Accept waiting for the previous one, with
// a store that takes 20 ms per INSERT. Before half-batch requests were
// written at once, every batch also waited FlushInterval (100 ms).
func BenchmarkSerialDrain(b *testing.B) {
	store := &fakeStore{delay: 20 * time.Millisecond}
	w := start(b, store, DefaultConfig())
	batch := spans(39 * 512)
	b.ResetTimer()
	for b.Loop() {
		if err := w.Accept(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch.Spans)*b.N)/b.Elapsed().Seconds(), "spans/s")
}

package durable

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/rowcodec"
	"github.com/tallyhq/tally/ingest/wal"
	"github.com/tallyhq/tally/schema"
)

// batchOf returns a batch of n spans numbered from first; every field has a
// fixed width so all batches of n spans encode to the same size.
func batchOf(first, n int) ingest.Batch {
	var b ingest.Batch
	for i := first; i < first+n; i++ {
		b.Spans = append(b.Spans, schema.Span{
			Project: "default", TraceID: fmt.Sprintf("%032x", i/4), SpanID: fmt.Sprintf("%016x", i),
			Start: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), StartNs: uint64(i), Name: "chat",
			InputTokens: 100, OutputTokens: 10,
		})
		b.Contents = append(b.Contents, schema.Content{
			Project: "default", TraceID: fmt.Sprintf("%032x", i/4), SpanID: fmt.Sprintf("%016x", i),
			Kind: schema.ContentToolResult, Value: "ok",
		})
	}
	return b
}

// fakeDown is a downstream that fails its first failFirst calls (or every
// call while down is set), and records the rows of successful ones.
type fakeDown struct {
	mu        sync.Mutex
	failFirst int
	down      bool
	failErr   error
	calls     int
	batches   []int // spans per successful call
	spans     []schema.Span
	contents  []schema.Content
	changed   chan struct{}
}

func newFakeDown(failFirst int, failErr error) *fakeDown {
	return &fakeDown{failFirst: failFirst, failErr: failErr, changed: make(chan struct{}, 1)}
}

func (f *fakeDown) Accept(ctx context.Context, b ingest.Batch) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls <= f.failFirst || f.down {
		return f.failErr
	}
	f.batches = append(f.batches, len(b.Spans))
	f.spans = append(f.spans, b.Spans...)
	f.contents = append(f.contents, b.Contents...)
	select {
	case f.changed <- struct{}{}:
	default:
	}
	return nil
}

func (f *fakeDown) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeDown) spanIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, len(f.spans))
	for i, s := range f.spans {
		ids[i] = s.SpanID
	}
	return ids
}

func spanIDRange(first, n int) []string {
	var ids []string
	for i := first; i < first+n; i++ {
		ids = append(ids, fmt.Sprintf("%016x", i))
	}
	return ids
}

// overloaded mimics writer.Overloaded.
type overloaded struct{ after time.Duration }

func (e *overloaded) Error() string             { return "overloaded" }
func (e *overloaded) HTTPStatus() int           { return http.StatusServiceUnavailable }
func (e *overloaded) RetryAfter() time.Duration { return e.after }

// eventually polls cond until it holds; the deadline only guards against a
// hang, it is not a timing assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func fastConfig() Config {
	return Config{RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond, RetryAfter: 7 * time.Second}
}

func openSink(t *testing.T, dir string, down Downstream, cfg Config) *Sink {
	t.Helper()
	s, err := Open(dir, down, cfg, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// run starts s.Run and returns a stop function that cancels it, waits for
// it and returns its error.
func run(t *testing.T, s *Sink) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

func accept(t *testing.T, s *Sink, b ingest.Batch) {
	t.Helper()
	if err := s.Accept(context.Background(), b); err != nil {
		t.Fatalf("Accept: %v", err)
	}
}

func TestEveryAcknowledgedBatchArrivesOnceInOrder(t *testing.T) {
	down := newFakeDown(3, &overloaded{after: time.Millisecond})
	cfg := fastConfig()
	cfg.MaxBatchSpans = 12
	s := openSink(t, t.TempDir(), down, cfg)
	defer s.Close()
	// 20 batches of 5 spans are waiting when the drain starts.
	for i := range 20 {
		accept(t, s, batchOf(i*5, 5))
	}
	if err := s.Ready(); err != nil {
		t.Fatalf("Ready before Run on a fresh log: %v", err)
	}
	stop := run(t, s)
	eventually(t, "100 spans downstream", func() bool { return len(down.spanIDs()) == 100 })
	// Five more while it runs.
	accept(t, s, batchOf(100, 5))
	eventually(t, "105 spans downstream", func() bool { return len(down.spanIDs()) == 105 })
	eventually(t, "log drained", func() bool { return s.Stats().PendingRecords == 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := down.spanIDs(); !slices.Equal(got, spanIDRange(0, 105)) {
		t.Fatalf("downstream spans out of order or duplicated: %v", got)
	}
	// Records of 5 spans coalesce two at a time: 5+5 = 10 <= 12, a third
	// would make 15 > 12. So the 100 waiting spans go as ten writes of 10.
	down.mu.Lock()
	firstTen := slices.Clone(down.batches[:10])
	contents := len(down.contents)
	down.mu.Unlock()
	if !slices.Equal(firstTen, []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}) {
		t.Fatalf("first writes carried %v spans, want ten of 10", firstTen)
	}
	if contents != 105 {
		t.Fatalf("downstream got %d content rows, want 105", contents)
	}
	st := s.Stats()
	// 3 failed calls, then 11 successful writes of 105 spans.
	if st.Retries != 3 || st.DeliveredSpans != 105 || st.AppendedRecords != 21 || st.WALBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
	if st.LastError != "overloaded" {
		t.Fatalf("LastError %q, want the downstream's error", st.LastError)
	}
}

func TestCrashBeforeDrainReplaysEverything(t *testing.T) {
	dir := t.TempDir()
	s := openSink(t, dir, newFakeDown(0, nil), fastConfig())
	for i := range 10 {
		accept(t, s, batchOf(i*3, 3))
	}
	// Crash: nothing drained, nothing checkpointed.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	down := newFakeDown(0, nil)
	s = openSink(t, dir, down, fastConfig())
	defer s.Close()
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "replaying: 10 records") {
		t.Fatalf("Ready before replay: %v, want replaying 10 records", err)
	}
	if !s.Stats().Replaying {
		t.Fatal("Stats.Replaying false before replay")
	}
	run(t, s)
	eventually(t, "replay finished", func() bool { return s.Ready() == nil })
	if got := down.spanIDs(); !slices.Equal(got, spanIDRange(0, 30)) {
		t.Fatalf("replayed spans: %v", got)
	}
}

// ackLost stores rows like a writer whose INSERT succeeded, but from its
// second call on it never answers (the writer gave up waiting, or tally
// died before checkpointing).
type ackLost struct {
	mu      sync.Mutex
	calls   int
	spans   []schema.Span
	blocked chan struct{}
}

func (a *ackLost) Accept(ctx context.Context, b ingest.Batch) error {
	a.mu.Lock()
	a.calls++
	a.spans = append(a.spans, b.Spans...)
	n := a.calls
	a.mu.Unlock()
	if n == 1 {
		return nil
	}
	if n == 2 {
		close(a.blocked)
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestCrashAfterWriteBeforeCheckpointRedeliversIdenticalRows(t *testing.T) {
	dir := t.TempDir()
	cfg := fastConfig()
	cfg.MaxBatchSpans = 3 // one record per write
	first := &ackLost{blocked: make(chan struct{})}
	s := openSink(t, dir, first, cfg)
	for i := range 5 {
		accept(t, s, batchOf(i*3, 3))
	}
	stop := run(t, s)
	<-first.blocked // record 1 written and checkpointed, record 2 stored but not acknowledged
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	s.Close()

	second := newFakeDown(0, nil)
	s = openSink(t, dir, second, cfg)
	defer s.Close()
	run(t, s)
	eventually(t, "replay finished", func() bool { return s.Ready() == nil })
	// Record 1 (spans 0..2) was checkpointed: only records 2..5 (spans 3..14) come again.
	if got := second.spanIDs(); !slices.Equal(got, spanIDRange(3, 12)) {
		t.Fatalf("redelivered spans: %v", got)
	}
	// Every acknowledged span arrived at least once; record 2's spans twice,
	// as identical rows (same Version), which the tables collapse.
	byID := map[string][]schema.Span{}
	for _, sp := range append(slices.Clone(first.spans), second.spans...) {
		byID[sp.SpanID] = append(byID[sp.SpanID], sp)
	}
	for _, id := range spanIDRange(0, 15) {
		copies := byID[id]
		if len(copies) == 0 {
			t.Fatalf("acknowledged span %s never arrived", id)
		}
		for _, c := range copies[1:] {
			if !reflect.DeepEqual(c, copies[0]) {
				t.Fatalf("span %s arrived twice with different rows:\n%+v\n%+v", id, copies[0], c)
			}
		}
	}
	if n := len(byID[fmt.Sprintf("%016x", 3)]); n != 2 {
		t.Fatalf("span 3 arrived %d times, want 2 (once per run)", n)
	}
}

func TestDownstreamDownFillsLogThenRefuses(t *testing.T) {
	// A batch of 4 spans stamped with a Version encodes to a fixed size;
	// its frame adds the 8-byte header. The cap holds exactly three.
	sample := batchOf(0, 4)
	for i := range sample.Spans {
		sample.Spans[i].Version = 1
		sample.Contents[i].Version = 1
	}
	frame := int64(len(rowcodec.Encode(nil, sample)) + 8)
	cfg := fastConfig()
	cfg.WAL.MaxBytes = 3 * frame
	down := newFakeDown(0, errors.New("clickhouse: connection refused"))
	down.setDown(true)
	s := openSink(t, t.TempDir(), down, cfg)
	defer s.Close()
	run(t, s)
	for i := range 3 {
		accept(t, s, batchOf(i*4, 4))
	}
	err := s.Accept(context.Background(), batchOf(12, 4))
	var refused *Refused
	if !errors.As(err, &refused) || !errors.Is(err, wal.ErrFull) {
		t.Fatalf("fourth Accept: %v, want a Refused wrapping wal.ErrFull", err)
	}
	if refused.HTTPStatus() != 503 || refused.RetryAfter() != 7*time.Second {
		t.Fatalf("refusal: status %d, retry after %v; want 503, 7s", refused.HTTPStatus(), refused.RetryAfter())
	}
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("Ready while full: %v", err)
	}
	if st := s.Stats(); st.WALBytes != 3*frame || st.RefusedFull != 1 || st.PendingRecords != 3 {
		t.Fatalf("stats while full: %+v (frame %d)", st, frame)
	}
	// ClickHouse comes back: the log drains, and the refused batch is taken.
	down.setDown(false)
	eventually(t, "log drained", func() bool { return s.Ready() == nil })
	accept(t, s, batchOf(12, 4))
	eventually(t, "16 spans downstream", func() bool { return len(down.spanIDs()) == 16 })
	if got := down.spanIDs(); !slices.Equal(got, spanIDRange(0, 16)) {
		t.Fatalf("downstream spans: %v", got)
	}
}

func TestBatchLargerThanLogIs413(t *testing.T) {
	cfg := fastConfig()
	cfg.WAL.MaxBytes = 100 // a batch of 4 spans encodes to far more
	s := openSink(t, t.TempDir(), newFakeDown(0, nil), cfg)
	defer s.Close()
	var refused *Refused
	if err := s.Accept(context.Background(), batchOf(0, 4)); !errors.As(err, &refused) || refused.HTTPStatus() != 413 {
		t.Fatalf("Accept: %v, want 413", err)
	}
	if err := s.Accept(context.Background(), ingest.Batch{}); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
}

// writeLog writes records straight into a log in a new directory, as a
// sink's earlier run (or an older build) left them, and returns the
// directory.
func writeLog(t *testing.T, recs ...[]byte) string {
	t.Helper()
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, rec := range recs {
		if _, err := l.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestUndecodableRecordStopsRun(t *testing.T) {
	dir := writeLog(t, []byte{99, 1, 2})
	s := openSink(t, dir, newFakeDown(0, nil), fastConfig())
	defer s.Close()
	err := s.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "record 1 cannot be decoded") {
		t.Fatalf("Run: %v", err)
	}
	if s.Stats().PendingRecords != 1 {
		t.Fatal("the undecodable record was dropped")
	}
}

// TestAcceptKeepsNothingOfTheBatch is the contract the receiver relies on
// to let rows point into its pooled request buffer (receiver.Config.
// SinkCopies): once Accept returns, the batch's memory may be overwritten
// and the log still delivers the rows as they were.
func TestAcceptKeepsNothingOfTheBatch(t *testing.T) {
	want := batchOf(0, 3)
	b := batchOf(0, 3)
	// Every string of b is a view of one buffer, as the wire decoder's
	// strings are of a request body.
	var buf []byte
	for i := range b.Spans {
		buf = append(buf, b.Spans[i].SpanID...)
		buf = append(buf, b.Spans[i].Name...)
	}
	pos := 0
	view := func(n int) string {
		s := unsafe.String(&buf[pos], n)
		pos += n
		return s
	}
	for i := range b.Spans {
		b.Spans[i].SpanID = view(len(want.Spans[i].SpanID))
		b.Spans[i].Name = view(len(want.Spans[i].Name))
	}
	down := newFakeDown(0, nil)
	s := openSink(t, t.TempDir(), down, fastConfig())
	defer s.Close()
	accept(t, s, b)
	for i := range buf {
		buf[i] = 'X'
	}
	stop := run(t, s)
	eventually(t, "three spans delivered", func() bool { return len(down.spanIDs()) == 3 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i, sp := range down.spans {
		if sp.SpanID != want.Spans[i].SpanID || sp.Name != want.Spans[i].Name {
			t.Errorf("span %d delivered as (%q, %q), accepted as (%q, %q)", i, sp.SpanID, sp.Name,
				want.Spans[i].SpanID, want.Spans[i].Name)
		}
	}
}

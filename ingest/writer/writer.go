// Package writer batches normalized rows into ClickHouse.
//
// Accept is synchronous: it returns nil only after the rows it was given are
// inserted (group commit: many concurrent requests share one INSERT, flushed
// by size or by time). The receiver answers 200 only then, so an
// acknowledged span is already in ClickHouse. When the queue is full, or
// ClickHouse has been failing for longer than the acknowledgement deadline,
// Accept fails with an *Overloaded error and the receiver answers 503 with
// Retry-After, so well-behaved exporters back off and retry; nothing that was
// acknowledged is ever dropped.
//
// # Memory
//
// An INSERT holds its rows two or three times over (the rows, clickhouse-go's
// columns, the encoded and compressed block), so a batch is bounded by bytes
// as well as by spans: pending requests are flushed once they hold
// Config.MaxBatchBytes of row data, and one flush is split into INSERTs of at
// most MaxBatchBytes each (a single larger row goes alone). Row data is the
// bytes of a row's strings plus its fixed-width fields, as RowBytes counts
// them, the same measure the durable log's records have.
package writer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/backoff"
)

// Store is where rows go; *schema.Store implements it.
type Store interface {
	InsertSpans(ctx context.Context, rows []schema.Span) error
	InsertContents(ctx context.Context, rows []schema.Content) error
}

// Config tunes batching, queueing and retries.
type Config struct {
	MaxBatchSpans int           // flush once this many spans are pending
	MaxBatchBytes int64         // flush once this much row data is pending; also the most one INSERT takes
	FlushInterval time.Duration // flush at most this long after the first pending span
	QueueSpans    int           // spans accepted but not yet written; beyond it Accept refuses
	AckTimeout    time.Duration // longest Accept waits for its rows to be written
	InsertTimeout time.Duration // one INSERT attempt
	RetryMin      time.Duration // first backoff after a failed INSERT
	RetryMax      time.Duration // longest backoff
	RetryAfter    time.Duration // the Retry-After hint given to refused callers
}

// DefaultConfig is the writer's configuration unless overridden.
func DefaultConfig() Config {
	return Config{
		MaxBatchSpans: 10000,
		MaxBatchBytes: DefaultMaxBatchBytes,
		FlushInterval: 100 * time.Millisecond,
		QueueSpans:    200000,
		AckTimeout:    15 * time.Second,
		InsertTimeout: 30 * time.Second,
		RetryMin:      100 * time.Millisecond,
		RetryMax:      5 * time.Second,
		RetryAfter:    5 * time.Second,
	}
}

// DefaultMaxBatchBytes is Config.MaxBatchBytes unless overridden: 10,000
// typical spans are 5–10 MiB of row data, so spans bound ordinary batches
// and bytes bound batches of large content (1 MiB tool results).
const DefaultMaxBatchBytes = 16 << 20

// Overloaded is returned by Accept when the rows were not taken: the caller
// should answer Code with a Retry-After of After.
type Overloaded struct {
	Code   int
	After  time.Duration
	Reason string
	// Err is the store's error, when one caused it.
	Err error
}

func (e *Overloaded) Error() string { return "writer overloaded: " + e.Reason }

// Unwrap returns the store's error, so callers can tell what it said
// (schema.Unstorable).
func (e *Overloaded) Unwrap() error { return e.Err }

// HTTPStatus is the HTTP status to answer (503).
func (e *Overloaded) HTTPStatus() int { return e.Code }

// RetryAfter is how long the client should wait before retrying.
func (e *Overloaded) RetryAfter() time.Duration { return e.After }

// Stats are the writer's counters, for metrics and readiness.
type Stats struct {
	QueuedSpans   int64 // accepted, not yet written
	WrittenSpans  uint64
	InsertErrors  uint64
	Batches       uint64
	LastInsertErr string
	Healthy       bool // the last INSERT succeeded (or none was tried)
}

type request struct {
	batch ingest.Batch
	bytes int64 // RowBytes of the batch
	done  chan error
}

// Writer batches rows into the store. Run must be running for Accept to
// make progress.
type Writer struct {
	store  Store
	cfg    Config
	log    *slog.Logger
	reqs   chan *request
	queued atomic.Int64

	written atomic.Uint64
	errs    atomic.Uint64
	batches atomic.Uint64
	healthy atomic.Bool

	mu      sync.Mutex
	lastErr string
}

// New makes a writer; zero fields of cfg take DefaultConfig's values.
func New(store Store, cfg Config, log *slog.Logger) *Writer {
	d := DefaultConfig()
	if cfg.MaxBatchSpans <= 0 {
		cfg.MaxBatchSpans = d.MaxBatchSpans
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = d.MaxBatchBytes
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = d.FlushInterval
	}
	if cfg.QueueSpans <= 0 {
		cfg.QueueSpans = d.QueueSpans
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = d.AckTimeout
	}
	if cfg.InsertTimeout <= 0 {
		cfg.InsertTimeout = d.InsertTimeout
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = d.RetryMin
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = d.RetryMax
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = d.RetryAfter
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Writer{store: store, cfg: cfg, log: log, reqs: make(chan *request, 4096)}
	w.healthy.Store(true)
	return w
}

// Accept queues the batch and waits until it is written. It fails fast with
// *Overloaded when the queue has no room, and with *Overloaded when the rows
// could not be written within AckTimeout (the rows may still be written
// later; a retry by the client is then deduplicated by span identity).
// Rows whose Version is zero get the write time, in b's own slices when b
// is written alone.
func (w *Writer) Accept(ctx context.Context, b ingest.Batch) error {
	n := int64(len(b.Spans) + len(b.Contents))
	if n == 0 {
		return nil
	}
	if q := w.queued.Add(n); q > int64(w.cfg.QueueSpans) && q != n {
		w.queued.Add(-n)
		return &Overloaded{Code: http.StatusServiceUnavailable, After: w.cfg.RetryAfter,
			Reason: fmt.Sprintf("write queue full (%d rows queued, limit %d)", q-n, w.cfg.QueueSpans)}
	}
	r := &request{batch: b, bytes: RowBytes(b), done: make(chan error, 1)}
	timer := time.NewTimer(w.cfg.AckTimeout)
	defer timer.Stop()
	select {
	case w.reqs <- r:
	case <-ctx.Done():
		w.queued.Add(-n)
		return fmt.Errorf("queue batch: %w", ctx.Err())
	case <-timer.C:
		w.queued.Add(-n)
		return &Overloaded{Code: http.StatusServiceUnavailable, After: w.cfg.RetryAfter, Reason: "write queue did not take the batch in time"}
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("wait for write: %w", ctx.Err())
	case <-timer.C:
		return &Overloaded{Code: http.StatusServiceUnavailable, After: w.cfg.RetryAfter,
			Reason: "clickhouse did not take the batch in time: " + w.Stats().LastInsertErr}
	}
}

// MaxBatchSpans is the spans one INSERT takes at most (Config.MaxBatchSpans),
// so a component batching for the writer can batch to the same size.
func (w *Writer) MaxBatchSpans() int { return w.cfg.MaxBatchSpans }

// InsertTimeout is the longest one INSERT, or one Stream from Begin to
// Commit, may take (Config.InsertTimeout): whatever holds a stream open
// must commit well within it.
func (w *Writer) InsertTimeout() time.Duration { return w.cfg.InsertTimeout }

// MaxBatchBytes is the row data one INSERT takes at most
// (Config.MaxBatchBytes), for components batching for the writer.
func (w *Writer) MaxBatchBytes() int64 { return w.cfg.MaxBatchBytes }

// Stats returns the current counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	last := w.lastErr
	w.mu.Unlock()
	return Stats{
		QueuedSpans:   w.queued.Load(),
		WrittenSpans:  w.written.Load(),
		InsertErrors:  w.errs.Load(),
		Batches:       w.batches.Load(),
		LastInsertErr: last,
		Healthy:       w.healthy.Load(),
	}
}

// Run collects requests into batches and writes them until ctx is done; then
// it writes what is pending (bounded by AckTimeout) and returns.
func (w *Writer) Run(ctx context.Context) {
	var pending []*request
	spans, size := 0, int64(0)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func(ctx context.Context) {
		if len(pending) == 0 {
			return
		}
		w.flush(ctx, pending)
		pending, spans, size = pending[:0:0], 0, 0
	}
	for {
		select {
		case r := <-w.reqs:
			if len(pending) == 0 {
				timer.Reset(w.cfg.FlushInterval)
			}
			pending = append(pending, r)
			spans += len(r.batch.Spans)
			size += r.bytes
			// A request that alone fills half a batch (the durable log
			// hands over coalesced batches, one at a time) is written at
			// once: waiting could at most double the INSERT and would cost
			// its caller FlushInterval per batch.
			if spans >= w.cfg.MaxBatchSpans || 2*len(r.batch.Spans) >= w.cfg.MaxBatchSpans ||
				size >= w.cfg.MaxBatchBytes || 2*r.bytes >= w.cfg.MaxBatchBytes {
				timer.Stop()
				flush(ctx)
			}
		case <-timer.C:
			flush(ctx)
		case <-ctx.Done():
			// Drain what is queued, with a deadline of its own.
			dctx, cancel := context.WithTimeout(context.Background(), w.cfg.AckTimeout)
		drain:
			for {
				select {
				case r := <-w.reqs:
					pending = append(pending, r)
				default:
					break drain
				}
			}
			flush(dctx)
			cancel()
			return
		}
	}
}

// flush writes the pending requests' rows in one INSERT per table, retrying
// transient failures with exponential backoff and jitter (support/backoff)
// until the write succeeds or every waiting caller has given up
// (AckTimeout).
func (w *Writer) flush(ctx context.Context, reqs []*request) {
	// One request's rows are written as they are; several are copied once
	// into slices of the right size.
	b := reqs[0].batch
	n := int64(len(b.Spans) + len(b.Contents))
	if len(reqs) > 1 {
		nSpans, nContents := 0, 0
		for _, r := range reqs {
			nSpans += len(r.batch.Spans)
			nContents += len(r.batch.Contents)
		}
		b = ingest.Batch{Spans: make([]schema.Span, 0, nSpans), Contents: make([]schema.Content, 0, nContents)}
		for _, r := range reqs {
			b.Spans = append(b.Spans, r.batch.Spans...)
			b.Contents = append(b.Contents, r.batch.Contents...)
		}
		n = int64(nSpans + nContents)
	}
	b.StampVersion(uint64(time.Now().UnixNano()))
	deadline := time.Now().Add(w.cfg.AckTimeout)
	bo := backoff.New(w.cfg.RetryMin, w.cfg.RetryMax)
	var err error
	for attempt := 1; ; attempt++ {
		err = w.insert(ctx, b)
		if err == nil {
			break
		}
		w.errs.Add(1)
		w.healthy.Store(false)
		w.mu.Lock()
		w.lastErr = err.Error()
		w.mu.Unlock()
		wait := bo.Next()
		if schema.Unstorable(err) {
			// The server refuses these rows; they would be refused
			// again. The caller decides (the durable log isolates and
			// dead-letters them).
			w.log.Warn("insert refused by the server for its rows; not retried here", "spans", len(b.Spans), "err", err)
			break
		}
		if ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			w.log.Error("insert failed, giving up on batch; callers were not acknowledged",
				"spans", len(b.Spans), "attempts", attempt, "err", err)
			break
		}
		w.log.Warn("insert failed, retrying", "spans", len(b.Spans), "attempt", attempt, "backoff", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	w.queued.Add(-n)
	if err == nil {
		w.healthy.Store(true)
		w.written.Add(uint64(len(b.Spans)))
		w.batches.Add(1)
	} else {
		err = &Overloaded{Code: http.StatusServiceUnavailable, After: w.cfg.RetryAfter, Reason: "clickhouse insert failed: " + err.Error(), Err: err}
	}
	for _, r := range reqs {
		r.done <- err
	}
}

// insert writes b in INSERTs of at most MaxBatchBytes of row data each,
// contents first: a span row is what makes a run visible, and its content
// should be there when it is. A retry after a failure rewrites the parts
// already written; reads collapse the copies by span identity.
func (w *Writer) insert(ctx context.Context, b ingest.Batch) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.InsertTimeout)
	defer cancel()
	for part := range schema.ByBytes(b.Contents, (*schema.Content).DataBytes, w.cfg.MaxBatchBytes) {
		if err := w.store.InsertContents(ctx, part); err != nil {
			return fmt.Errorf("insert %d content rows: %w", len(part), err)
		}
	}
	for part := range schema.ByBytes(b.Spans, (*schema.Span).DataBytes, w.cfg.MaxBatchBytes) {
		if err := w.store.InsertSpans(ctx, part); err != nil {
			return fmt.Errorf("insert %d span rows: %w", len(part), err)
		}
	}
	return nil
}

// RowBytes is the row data of b: the bytes of its rows' strings plus their
// fixed-width fields (times as 12 bytes). It is what a batch costs in
// memory per copy, Go's per-row overhead aside, and close to the size of
// b's durable log record (package ingest/rowcodec).
func RowBytes(b ingest.Batch) int64 {
	var n int64
	for i := range b.Spans {
		n += b.Spans[i].DataBytes()
	}
	for i := range b.Contents {
		n += b.Contents[i].DataBytes()
	}
	return n
}

// StreamStore is a Store that can hold one INSERT per table open across
// several batches; *schema.Store implements it.
type StreamStore interface {
	Store
	BeginSpans(ctx context.Context) (*schema.Insert[schema.Span], error)
	BeginContents(ctx context.Context) (*schema.Insert[schema.Content], error)
}

// Stream is one INSERT per table held open while batches are appended, for
// the durable log's drain: a part of ClickHouse is as large as a stream,
// while tally holds one batch at a time. Rows are stored once Commit
// returns nil; a stream that failed is aborted, which may leave some of its
// rows stored, and its rows are rewritten from the log (a rewritten row
// counts once: reads collapse by span identity).
// Streams bypass the writer's queue and group commit; they update its
// counters and health. A Stream is not safe for concurrent use.
type Stream struct {
	w        *Writer
	store    StreamStore
	ctx      context.Context
	cancel   context.CancelFunc
	version  uint64
	spans    *schema.Insert[schema.Span]
	contents *schema.Insert[schema.Content]
}

// Begin opens a stream whose statements must be committed within
// Config.InsertTimeout (see InsertTimeout). The store must be a
// StreamStore.
func (w *Writer) Begin(ctx context.Context) (*Stream, error) {
	store, ok := w.store.(StreamStore)
	if !ok {
		return nil, fmt.Errorf("writer: store %T cannot hold an INSERT open", w.store)
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.InsertTimeout)
	return &Stream{w: w, store: store, ctx: ctx, cancel: cancel, version: uint64(time.Now().UnixNano())}, nil
}

// Append sends b's rows to the open statements, opening them on first use;
// rows whose Version is zero get the stream's start time, in b's slices.
// Nothing of b is kept once Append returns. An error leaves the stream
// unusable: Abort it.
func (s *Stream) Append(_ context.Context, b ingest.Batch) error {
	b.StampVersion(s.version)
	if err := appendOpening(s.ctx, &s.contents, s.store.BeginContents, b.Contents); err != nil {
		return s.failed(err)
	}
	if err := appendOpening(s.ctx, &s.spans, s.store.BeginSpans, b.Spans); err != nil {
		return s.failed(err)
	}
	return nil
}

// appendOpening appends rows to *in, opening it with begin on first use.
func appendOpening[R any](ctx context.Context, in **schema.Insert[R],
	begin func(context.Context) (*schema.Insert[R], error), rows []R) error {
	if len(rows) == 0 {
		return nil
	}
	if *in == nil {
		opened, err := begin(ctx)
		if err != nil {
			return err
		}
		*in = opened
	}
	return (*in).Append(rows)
}

// Commit stores what was appended, contents first as Writer.insert does,
// and ends the stream.
func (s *Stream) Commit(context.Context) error {
	defer s.Abort()
	if s.contents != nil {
		if err := s.contents.Commit(); err != nil {
			return s.failed(err)
		}
	}
	spans := 0
	if s.spans != nil {
		spans = s.spans.Rows()
		if err := s.spans.Commit(); err != nil {
			return s.failed(err)
		}
	}
	s.w.healthy.Store(true)
	s.w.written.Add(uint64(spans))
	s.w.batches.Add(1)
	return nil
}

// Abort ends the stream's statements (what the server already took may
// be stored; see schema.Insert.Abort); it is a no-op after Commit.
func (s *Stream) Abort() {
	if s.contents != nil {
		s.contents.Abort()
	}
	if s.spans != nil {
		s.spans.Abort()
	}
	s.cancel()
}

// failed records err in the writer's health and counters and returns it.
func (s *Stream) failed(err error) error {
	s.w.errs.Add(1)
	s.w.healthy.Store(false)
	s.w.mu.Lock()
	s.w.lastErr = err.Error()
	s.w.mu.Unlock()
	return err
}

// Package durable makes "acknowledged" mean "on disk": it sits between the
// OTLP receiver and the ClickHouse writer.
//
// Sink.Accept encodes a batch (package ingest/rowcodec) and appends it to the
// write-ahead log (package ingest/wal), returning nil only once the record
// is fsynced; concurrent requests share fsyncs (group commit). The receiver
// answers 200 only then, so an acknowledged span survives a crash of tally
// and an outage of ClickHouse.
//
// Sink.Run drains the log, in order, into the downstream writer: it
// coalesces consecutive records into batches of up to Config.MaxBatchSpans
// spans and Config.MaxBatchBytes, each record counted at its size with
// every string written out (rowcodec.Header: about what its rows hold
// decoded, 2–3 times its own length), retries a failed write with
// exponential backoff (at least the Retry-After a refusing downstream asks
// for) until it succeeds or Run's context ends, and never drops a record.
// After each successful write it truncates the log up to the last record
// written (a durable checkpoint). With Config.Begin the drain streams:
// consecutive batches are appended to one open downstream write (a Stream,
// one INSERT per table), which is committed, and the log checkpointed, per
// Config.CommitSpans, Config.CommitBytes or Config.CommitInterval, or as
// soon as the log has nothing more to read. ClickHouse then makes large
// parts, which it merges far less, while the drain holds one batch at a
// time; a failed stream is rewritten from the checkpoint.
//
// # Delivery
//
// Delivery is at least once. On start Run first replays every record that
// was acknowledged but not checkpointed. Rows that reached ClickHouse just
// before a crash, or whose INSERT succeeded after the writer had already
// given up waiting for it, are therefore inserted again. That is safe because
// a span row's identity is (project, trace_id, span_id): the spans and
// content tables are ReplacingMergeTree on that identity and every read
// collapses duplicates (FINAL, or an equivalent argMax/any by identity), so a
// replayed row counts once in every figure. The same mechanism absorbs
// exporters resending a request after a 503. Accept stamps a zero Version
// with the acknowledgement time before logging, so a replayed row is
// byte-identical to its first copy. Records are replayed in their original
// order.
//
// # Backpressure
//
// While the drain keeps up (its last downstream write succeeded), Accept
// paces: once more than Config.PaceBytes of the log wait for ClickHouse, it
// waits, up to Config.PaceWait, for the drain to bring the backlog under
// that before it appends. Senders are then acknowledged at the rate
// ClickHouse stores rows rather than the rate the disk takes them, so on
// shared cores the receiver does not spend the CPU the drain and ClickHouse
// need, and a steady load above what ClickHouse takes is answered by slower
// acknowledgements instead of a full log and 503s. While the drain fails
// (ClickHouse down or refusing), Accept does not wait: the log absorbs the
// outage.
//
// The log is capped (wal.Options.MaxBytes, 1 GiB by default). When ClickHouse
// is slow or down the log grows; once the next batch would pass the cap,
// Accept refuses it with a *Refused error (503 and Retry-After) and Ready
// reports not ready, until the drain frees space. A corrupt log detected at
// Open is an error: tally does not start rather than skip acknowledged data.
//
// # Dead letters
//
// A record the store refuses for its own rows (Config.Unstorable: the
// server answered, and would answer the same again) would otherwise be
// retried forever, and every record behind it, other projects' too, would
// wait in the log. After Config.DeadLetterAttempts such refusals in a row
// of one batch, the drain writes the batch's records one by one; after as
// many of one record alone, it writes that record to Config.DeadLetter
// (fsynced, with the store's answer) and moves its checkpoint past it. So
// a record is dead-lettered only when the store refused it alone, and
// nothing acknowledged is dropped: the entry stays until an operator
// replays it (Requeue) or discards it. Failures that are not the rows'
// fault (the store unreachable, out of memory or disk, too many parts)
// are retried as ever, and Draining reports a drain whose writes have
// failed for Config.StuckAfter.
package durable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/deadletter"
	"github.com/tallyhq/tally/ingest/rowcodec"
	"github.com/tallyhq/tally/ingest/wal"
	"github.com/tallyhq/tally/support/backoff"
)

// Downstream takes batches out of the log; *writer.Writer implements it.
// Accept returns nil only when the rows are stored, and keeps nothing of b
// after it returned nil (the drain reuses b's slices for the next batch).
type Downstream interface {
	Accept(ctx context.Context, b ingest.Batch) error
}

// Stream is a downstream write held open across batches (a
// *writer.Stream): rows appended are stored once Commit returns nil, and
// any of them may be stored after a failure or Abort. Append keeps nothing
// of b once it returns. After an error from Append or Commit the drain
// calls Abort and rewrites the stream's records (delivery is at least once,
// as below). The drain may call Commit and Abort on a goroutine of their
// own while it opens and appends to the next stream (see Run).
type Stream interface {
	Append(ctx context.Context, b ingest.Batch) error
	Commit(ctx context.Context) error
	Abort()
}

// Config tunes the sink. Zero fields take DefaultConfig's values.
type Config struct {
	// WAL configures the log (segment size, size cap, NoSync).
	WAL wal.Options
	// MaxBatchSpans bounds the spans of one downstream write assembled from
	// consecutive records (a single larger record is written alone).
	MaxBatchSpans int
	// MaxBatchBytes bounds the records of one downstream write the same
	// way, by their size written out (rowcodec.Header: about what the
	// decoded rows hold), so that spans with large content (1 MiB tool
	// results) cannot gather into a batch of gigabytes after an outage.
	MaxBatchBytes int64
	// RetryMin and RetryMax bound the backoff between failed downstream writes.
	RetryMin time.Duration
	RetryMax time.Duration
	// RetryAfter is the Retry-After given with a 503 when the log is full.
	RetryAfter time.Duration
	// PaceBytes is the backlog (framed bytes waiting for the drain) above
	// which Accept waits for the drain while the drain keeps up; see
	// Backpressure. Zero means DefaultPaceBytes; negative turns pacing off.
	PaceBytes int64
	// PaceWait bounds one Accept's wait for the drain; after it the batch
	// is appended anyway (the log has room up to its cap). Zero means
	// DefaultPaceWait.
	PaceWait time.Duration
	// Begin, when set, opens a Stream, and the drain writes consecutive
	// batches into one stream before it checkpoints (see Run): ClickHouse
	// then makes parts of CommitSpans while the drain holds one batch of
	// MaxBatchSpans and MaxBatchBytes. Nil: every batch is written on its
	// own with Downstream.Accept.
	Begin func(ctx context.Context) (Stream, error)
	// CommitSpans and CommitBytes (record bytes) bound one stream; it is
	// committed once it holds either, once it has been open CommitInterval,
	// or as soon as the log has nothing more to read. Keep CommitBytes
	// under PaceBytes, or paced senders wait for every commit.
	CommitSpans    int
	CommitBytes    int64
	CommitInterval time.Duration
	// StreamTimeout is the longest a stream may take from Begin to the end
	// of its Commit (the writer's InsertTimeout). The stream opened behind
	// one committing in the background waits for that commit before its
	// own, on its own clock; so a full stream commits behind the next only
	// while the last commit took at most a quarter of StreamTimeout, and in
	// the foreground when ClickHouse is that slow. Zero: always behind.
	StreamTimeout time.Duration
	// DeadLetter, when set, takes a record the store refuses for good, so
	// that the records behind it, other projects' too, are written (see
	// Dead letters). Nil: such a record is retried until the store takes
	// it, and everything behind it waits.
	DeadLetter *deadletter.Dir
	// Unstorable reports whether a downstream error refuses the rows
	// themselves (the server answered, and would answer the same again),
	// as opposed to the store being unreachable, slow or short of
	// resources. Nil: no error does, and nothing is dead-lettered.
	Unstorable func(error) bool
	// DeadLetterAttempts is how many consecutive unstorable failures a
	// batch of several records takes before its records are written one
	// by one, and one record alone before it is dead-lettered. Zero means
	// DefaultDeadLetterAttempts.
	DeadLetterAttempts int
	// StuckAfter is how long the drain's writes may fail without one
	// succeeding before Draining reports it stuck (for /readyz). Zero
	// means DefaultStuckAfter.
	StuckAfter time.Duration
}

// DefaultDeadLetterAttempts is Config.DeadLetterAttempts unless set: with
// the default backoff, about 1.5 s of refusals of the same rows.
const DefaultDeadLetterAttempts = 5

// DefaultStuckAfter is Config.StuckAfter unless set.
const DefaultStuckAfter = time.Minute

// keptBuffers and maxKeptBuffer bound the encode buffers a Sink keeps
// between Accepts: one per request in flight at an exporter's usual
// concurrency, each at most 1 MiB (a 512-span request encodes to ~0.5
// MiB), so at most 8 MiB. Larger records, like those of 1 MiB tool
// results, get a buffer of their own: kept, 16 of them measured 40 MiB
// more peak RSS in the large-content benchmark.
const (
	keptBuffers   = 8
	maxKeptBuffer = 1 << 20
)

// DefaultPaceBytes is Config.PaceBytes unless overridden: four batches of
// MaxBatchBytes, so the drain always finds a full batch waiting.
const DefaultPaceBytes = 64 << 20

// DefaultPaceWait is Config.PaceWait unless overridden: well inside an OTLP
// exporter's default timeout of 10 s.
const DefaultPaceWait = 2 * time.Second

// DefaultCommitSpans, DefaultCommitBytes and DefaultCommitInterval are
// the bounds of one stream unless overridden: about the INSERT size at
// which ClickHouse 18.16's merges stop dominating its cost per span
// (20–50k spans), well under DefaultPaceBytes, and a freshness cost of at
// most a second under sustained load.
const (
	DefaultCommitSpans    = 50000
	DefaultCommitBytes    = 32 << 20
	DefaultCommitInterval = time.Second
)

// DefaultStreamBatchBytes is MaxBatchBytes for a drain that streams,
// unless overridden: with the part size set by the stream, a batch bounds
// only what the drain holds, and half the batch-by-batch 16 MiB measured
// lower RSS and no lower throughput (issue #18's note).
const DefaultStreamBatchBytes = 8 << 20

// Streaming returns c set to have the drain stream into the writes begin
// opens (Begin, StreamTimeout), each bounded from open to commit by
// timeout (the writer's INSERT timeout), and to hold batchBytes of records
// at a time (0: DefaultStreamBatchBytes). It refuses a commit interval
// over half the timeout, which would leave a stream too little time to
// commit.
func (c Config) Streaming(begin func(ctx context.Context) (Stream, error), timeout time.Duration, batchBytes int64) (Config, error) {
	interval := c.CommitInterval
	if interval <= 0 {
		interval = DefaultCommitInterval
	}
	if limit := timeout / 2; interval > limit {
		return c, fmt.Errorf("durable log: commit interval %s: must be at most half the INSERT timeout (%s), which bounds a stream from open to commit",
			interval, limit)
	}
	c.Begin, c.StreamTimeout, c.MaxBatchBytes = begin, timeout, batchBytes
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultStreamBatchBytes
	}
	return c, nil
}

// DefaultConfig is the sink's configuration unless overridden.
func DefaultConfig() Config {
	return Config{
		MaxBatchSpans: 10000,
		MaxBatchBytes: 16 << 20, // writer.DefaultMaxBatchBytes
		RetryMin:      100 * time.Millisecond,
		RetryMax:      10 * time.Second,
		RetryAfter:    5 * time.Second,
		PaceBytes:     DefaultPaceBytes,
		PaceWait:      DefaultPaceWait,

		CommitSpans:    DefaultCommitSpans,
		CommitBytes:    DefaultCommitBytes,
		CommitInterval: DefaultCommitInterval,
	}
}

// Refused is returned by Accept when the batch was not stored; the receiver
// answers Code, with a Retry-After of After when it is non-zero.
type Refused struct {
	Code   int
	After  time.Duration
	Reason string
	Err    error
}

func (e *Refused) Error() string { return "durable log refused the batch: " + e.Reason }

// Unwrap returns the cause (wal.ErrFull, wal.ErrTooLarge, ...).
func (e *Refused) Unwrap() error { return e.Err }

// HTTPStatus is the HTTP status to answer.
func (e *Refused) HTTPStatus() int { return e.Code }

// RetryAfter is how long the client should wait before retrying.
func (e *Refused) RetryAfter() time.Duration { return e.After }

// Stats are the sink's figures, for /metrics and /readyz.
type Stats struct {
	WALBytes        int64  // framed bytes of records not yet written downstream
	WALMaxBytes     int64  // the cap on WALBytes
	PendingRecords  uint64 // records acknowledged, not yet written downstream
	AppendedRecords uint64 // since Open
	AppendedSpans   uint64
	DeliveredSpans  uint64  // written downstream since Open (replays included)
	Deliveries      uint64  // successful downstream writes
	Retries         uint64  // failed downstream writes (each retried)
	RefusedFull     uint64  // Accept calls refused because the log was full
	Paced           uint64  // Accept calls that waited for the drain (pacing)
	PacedSeconds    float64 // their waits, summed
	Replaying       bool    // records from before Open are still being written
	LastError       string  // the last downstream or log error, "" when none
	DeadLettered    uint64  // records moved to the dead-letter directory since Open
	// FailingFor is how long the drain's writes have failed without one
	// succeeding; 0 while the last write succeeded.
	FailingFor time.Duration
}

// Sink is the receiver's durable sink. Accept may be called concurrently;
// Run must be running for the log to drain.
type Sink struct {
	wal  *wal.Log
	down Downstream
	cfg  Config
	log  *slog.Logger
	// bufs are encode buffers free for the next Accept: a bounded free
	// list rather than a sync.Pool, which the garbage collector empties
	// every other cycle, so that under load (a collection every second or
	// less) most records were encoded into a buffer grown from empty.
	bufs chan []byte

	replayUntil atomic.Uint64 // last record acknowledged before Open
	replaying   atomic.Bool
	full        atomic.Bool // an Accept was refused for space since the last drain
	// failingSince is when the drain's writes began to fail (Unix ns), 0
	// while the last one succeeded.
	failingSince atomic.Int64

	progressMu sync.Mutex
	progress   chan struct{} // closed (and replaced) after every checkpoint

	appended    atomic.Uint64
	appendSpans atomic.Uint64
	delivered   atomic.Uint64
	deliveries  atomic.Uint64
	retries     atomic.Uint64
	refused     atomic.Uint64
	paced       atomic.Uint64
	pacedNanos  atomic.Int64
	deadLetters atomic.Uint64

	mu      sync.Mutex
	lastErr string
}

// Open opens (recovering) the log in dir and returns a sink that drains it
// into down once Run is called.
func Open(dir string, down Downstream, cfg Config, log *slog.Logger) (*Sink, error) {
	d := DefaultConfig()
	if cfg.MaxBatchSpans <= 0 {
		cfg.MaxBatchSpans = d.MaxBatchSpans
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = d.MaxBatchBytes
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
	if cfg.PaceBytes == 0 {
		cfg.PaceBytes = d.PaceBytes
	}
	if cfg.PaceWait <= 0 {
		cfg.PaceWait = d.PaceWait
	}
	if cfg.CommitSpans <= 0 {
		cfg.CommitSpans = d.CommitSpans
	}
	if cfg.CommitBytes <= 0 {
		cfg.CommitBytes = d.CommitBytes
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = d.CommitInterval
	}
	if cfg.DeadLetterAttempts <= 0 {
		cfg.DeadLetterAttempts = DefaultDeadLetterAttempts
	}
	if cfg.StuckAfter <= 0 {
		cfg.StuckAfter = DefaultStuckAfter
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.WAL.Logger == nil {
		cfg.WAL.Logger = log
	}
	w, err := wal.Open(dir, cfg.WAL)
	if err != nil {
		return nil, fmt.Errorf("open durable log: %w", err)
	}
	s := &Sink{wal: w, down: down, cfg: cfg, log: log, progress: make(chan struct{})}
	s.bufs = make(chan []byte, keptBuffers)
	s.replayUntil.Store(w.LastSeq())
	if w.LastSeq() >= w.FirstSeq() {
		s.replaying.Store(true)
		log.Info("durable log: acknowledged records will be replayed",
			"records", w.LastSeq()-w.FirstSeq()+1, "bytes", w.Size())
	}
	return s, nil
}

// Accept stores b durably: it returns nil once b is fsynced in the log. A
// full log gives a *Refused with 503 and Retry-After; a batch too large for
// the log ever, 413. Rows of b whose Version is zero get the current time
// in nanoseconds (in place), so every later copy of a row is identical.
// Accept keeps nothing of b's memory once it returns (the record is an
// encoded copy), so b's strings may point into a buffer the caller reuses
// afterwards (receiver.Config.SinkCopies). Accept may first wait for the
// drain (see Backpressure).
func (s *Sink) Accept(ctx context.Context, b ingest.Batch) error {
	if len(b.Spans) == 0 && len(b.Contents) == 0 {
		return nil
	}
	s.pace(ctx)
	b.StampVersion(uint64(time.Now().UnixNano()))
	var buf []byte
	select {
	case buf = <-s.bufs:
	default:
	}
	buf = rowcodec.Encode(buf[:0], b)
	_, err := s.wal.Append(ctx, buf)
	if cap(buf) <= maxKeptBuffer { // do not pin rare huge buffers
		select {
		case s.bufs <- buf:
		default:
		}
	}
	switch {
	case err == nil:
		s.appended.Add(1)
		s.appendSpans.Add(uint64(len(b.Spans)))
		return nil
	case errors.Is(err, wal.ErrFull):
		s.full.Store(true)
		s.refused.Add(1)
		return &Refused{Code: http.StatusServiceUnavailable, After: s.cfg.RetryAfter, Err: err,
			Reason: fmt.Sprintf("log full (%d of %d bytes unwritten to ClickHouse)", s.wal.Size(), s.wal.MaxBytes())}
	case errors.Is(err, wal.ErrTooLarge):
		return &Refused{Code: http.StatusRequestEntityTooLarge, Err: err, Reason: err.Error()}
	case ctx.Err() != nil:
		return fmt.Errorf("durable log append: %w", err)
	default:
		s.setErr(err)
		return &Refused{Code: http.StatusServiceUnavailable, After: s.cfg.RetryAfter, Err: err,
			Reason: "log unavailable: " + err.Error()}
	}
}

// pace waits while the drain keeps up and the backlog is above PaceBytes,
// until it is not, PaceWait has passed or ctx ends.
func (s *Sink) pace(ctx context.Context) {
	if s.cfg.PaceBytes < 0 || s.failing() || s.wal.Size() <= s.cfg.PaceBytes {
		return
	}
	start := time.Now()
	t := time.NewTimer(s.cfg.PaceWait)
	defer t.Stop()
	defer func() {
		s.paced.Add(1)
		s.pacedNanos.Add(int64(time.Since(start)))
	}()
	for {
		s.progressMu.Lock()
		progress := s.progress
		s.progressMu.Unlock()
		if s.failing() || s.wal.Size() <= s.cfg.PaceBytes {
			return
		}
		select {
		case <-progress:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// progressed wakes the Accept calls waiting in pace.
func (s *Sink) progressed() {
	s.progressMu.Lock()
	close(s.progress)
	s.progress = make(chan struct{})
	s.progressMu.Unlock()
}

// Ready is nil when the sink takes batches and is caught up with what was
// acknowledged before it opened; otherwise it says why not.
func (s *Sink) Ready() error {
	if err := s.wal.Err(); err != nil {
		return fmt.Errorf("durable log failed: %w", err)
	}
	if s.full.Load() {
		return fmt.Errorf("durable log full: %d of %d bytes not yet written to ClickHouse", s.wal.Size(), s.wal.MaxBytes())
	}
	if s.replaying.Load() {
		until, ckpt := s.replayUntil.Load(), s.wal.Checkpoint()
		if ckpt < until {
			return fmt.Errorf("durable log replaying: %d records acknowledged before start not yet written", until-ckpt)
		}
	}
	return nil
}

// Stats returns the current figures.
func (s *Sink) Stats() Stats {
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	ckpt := s.wal.Checkpoint() // before LastSeq: the checkpoint never passes it
	return Stats{
		WALBytes:        s.wal.Size(),
		WALMaxBytes:     s.wal.MaxBytes(),
		PendingRecords:  s.wal.LastSeq() - ckpt,
		AppendedRecords: s.appended.Load(),
		AppendedSpans:   s.appendSpans.Load(),
		DeliveredSpans:  s.delivered.Load(),
		Deliveries:      s.deliveries.Load(),
		Retries:         s.retries.Load(),
		RefusedFull:     s.refused.Load(),
		Paced:           s.paced.Load(),
		PacedSeconds:    time.Duration(s.pacedNanos.Load()).Seconds(),
		Replaying:       s.replaying.Load(),
		LastError:       last,
		DeadLettered:    s.deadLetters.Load(),
		FailingFor:      s.failingFor(),
	}
}

// failingFor is how long the drain's writes have failed, 0 when they do not.
func (s *Sink) failingFor() time.Duration {
	since := s.failingSince.Load()
	if since == 0 {
		return 0
	}
	return max(time.Since(time.Unix(0, since)), time.Nanosecond)
}

// Draining is nil unless the drain is stuck: its writes have failed for
// Config.StuckAfter without one succeeding, so acknowledged spans are not
// reaching the store. /readyz reports it (the log still takes spans, so
// /readyz/ingest does not).
func (s *Sink) Draining() error {
	d := s.failingFor()
	if d < s.cfg.StuckAfter {
		return nil
	}
	st := s.Stats()
	return fmt.Errorf("durable log drain stuck: no write has succeeded for %s, %d records (%d bytes) wait: %s",
		d.Round(time.Second), st.PendingRecords, st.WALBytes, st.LastError)
}

// failing says whether the drain's last downstream write failed.
func (s *Sink) failing() bool { return s.failingSince.Load() != 0 }

// succeeded records a successful downstream write.
func (s *Sink) succeeded() { s.failingSince.Store(0) }

// writeFailed records a failed downstream write: counted, its error kept,
// and, when the drain was not failing before, paced Accepts woken (they
// stop waiting for a drain that fails).
func (s *Sink) writeFailed(err error) {
	if s.failingSince.CompareAndSwap(0, time.Now().UnixNano()) {
		s.progressed()
	}
	s.retries.Add(1)
	s.setErr(err)
}

func (s *Sink) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err.Error()
	s.mu.Unlock()
}

// Run drains the log into the downstream until ctx ends, then returns nil.
// It returns an error only when the log cannot be read (damage found while
// reading, or a record this build cannot decode): the records from there on
// stay in the log, and Run must not be restarted over them blindly.
//
// Reading the next batch does not overlap the write of the current one: an
// overlapping drain holds two batches (and their INSERT buffers) and, under
// serve's default memory limit, measured slower, not faster, on a 2-core
// machine: there the garbage collector, not ClickHouse, sets the pace.
// With Config.Begin the drain streams instead (see runStreams).
func (s *Sink) Run(ctx context.Context) error {
	d, err := s.newDrain()
	if err != nil {
		return err
	}
	defer func() { d.r.Close() }()
	if s.cfg.Begin != nil {
		return s.runStreams(ctx, d)
	}
	for {
		p, err := s.next(d)
		if err != nil {
			return err
		}
		if p.upto == 0 {
			if err := s.idle(ctx, d); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		delivered, retried, rewind := s.deliver(ctx, d, p)
		if rewind {
			// The batch is written one record at a time now, or its one
			// record was dead-lettered: read again from the checkpoint.
			if err := d.rewind(s.wal, s.wal.FirstSeq()); err != nil {
				return err
			}
			continue
		}
		if !delivered {
			return nil
		}
		if !retried {
			// No failed attempt can still hold the rows (a writer that
			// gave up waiting may insert them later): keep the slices,
			// without the rows, so the next batch does not grow new ones.
			d.reuse(p.batch, s.cfg.MaxBatchSpans)
		}
		s.checkpoint(p.upto)
	}
}

// runStreams drains the log through Config.Begin's streams: consecutive
// batches go into one stream, which is committed, and the log checkpointed,
// once it holds CommitSpans spans or CommitBytes record bytes, once it has
// been open CommitInterval, or as soon as the log has nothing more to read
// (so a light load is as fresh as batch by batch, and a heavy one makes
// parts of CommitSpans). The drain holds one batch at a time whatever the
// stream's size.
//
// A stream that reached a bound commits in the background while the drain
// appends to the next one: ClickHouse writes a stream's part after its last
// block (a quarter to a third of a stream's time in the benchmark), and
// without the overlap the drain and the cores it could use wait for it. At
// most one commit is in flight, and the next stream's commit starts only
// after it returned, so checkpoints advance in log order and never past a
// record whose stream has not committed. The stream in flight holds no
// batch of the drain's, only its last block in the client until its Commit
// returns. Once a commit took more than a quarter of StreamTimeout,
// streams commit in the foreground until one is quick again: the stream
// behind a slow commit would spend its own budget waiting for it.
//
// A failed open, append or commit aborts the open stream (and, for a failed
// background commit, the one appended after it); after the backoff the drain
// reads again from the checkpoint, so every record of the failed streams is
// rewritten, in order, one batch per stream, committed before the next is
// read, until one commits. A record that cannot be read ends Run after the
// stream so far is committed.
func (s *Sink) runStreams(ctx context.Context, d *drain) error {
	var (
		st     Stream
		upto   uint64 // the last record in st
		spans  int
		bytes  int64
		opened time.Time
		bo     = backoff.New(s.cfg.RetryMin, s.cfg.RetryMax)
		// recovering: the last stream failed; streams are one batch,
		// committed in the foreground, until one commits.
		recovering bool
		// flight is the result of the commit running in the background,
		// nil when none is.
		flight chan commitResult
		// lastCommit is how long the last commit that returned took.
		lastCommit time.Duration
	)
	// timedCommit commits st and records how long it took (failed or not:
	// a timeout is the slowest commit of all) in the result.
	timedCommit := func(st Stream) commitResult {
		start := time.Now()
		err := st.Commit(ctx)
		return commitResult{err: err, took: time.Since(start)}
	}
	// committed records a commit of spans up to record upto; it may run on
	// the background commit's goroutine.
	committed := func(upto uint64, spans int) {
		s.succeeded()
		s.delivered.Add(uint64(spans))
		s.deliveries.Add(1)
		s.checkpoint(upto)
	}
	// result takes the background commit's result.
	result := func(r commitResult) error {
		flight, lastCommit = nil, r.took
		if r.err == nil {
			bo.Reset()
			recovering = false
		}
		return r.err
	}
	// settle waits for the background commit, if any, and returns its error.
	settle := func() error {
		if flight == nil {
			return nil
		}
		return result(<-flight)
	}
	// poll returns the background commit's error if it has failed, so the
	// drain stops appending to a stream that will be rewritten anyway.
	poll := func() error {
		select {
		case r := <-flight: // never ready while flight is nil
			return result(r)
		default:
			return nil
		}
	}
	// report records a failed commit whose error the drain does not retry
	// on (another failure is already handled, or Run is ending).
	report := func(err error) {
		if err != nil {
			s.setErr(err)
			s.log.Warn("durable log: commit failed; its records stay in the log and are written again", "err", err)
		}
	}
	// fail ends the streams after err; without a wait for the next try
	// when skip (the drain reads again at once, record by record, or past
	// a dead-lettered record).
	fail := func(err error, skip bool) (stop bool) {
		report(settle()) // its records come after the checkpoint too: rewritten below
		if st != nil {
			st.Abort()
		}
		st, upto, spans, bytes, recovering = nil, 0, 0, 0, true
		if ctx.Err() != nil {
			return true
		}
		if skip {
			s.writeFailed(err)
			return false
		}
		if !s.retryWait(ctx, bo, err, "durable log: downstream stream failed, rewriting from the checkpoint",
			"from", s.wal.FirstSeq()) {
			return true
		}
		return false
	}
	// commit stores the open stream in the foreground, after the one in
	// flight.
	commit := func() error {
		if err := settle(); err != nil {
			return err
		}
		r := timedCommit(st)
		lastCommit = r.took
		if r.err != nil {
			return fmt.Errorf("commit %d spans: %w", spans, r.err)
		}
		committed(upto, spans)
		bo.Reset()
		recovering = false
		st, upto, spans, bytes = nil, 0, 0, 0
		return nil
	}
	// commitBehind hands the open stream to a background commit and lets
	// the drain open the next; nothing may be in flight (settle first).
	commitBehind := func() {
		done := make(chan commitResult, 1)
		go func(st Stream, upto uint64, spans int) {
			r := timedCommit(st)
			if r.err != nil {
				st.Abort()
				r.err = fmt.Errorf("commit %d spans: %w", spans, r.err)
			} else {
				committed(upto, spans)
			}
			done <- r
		}(st, upto, spans)
		flight = done
		st, upto, spans, bytes = nil, 0, 0, 0
	}
	// add appends one batch, opening a stream for it if none is open, and
	// commits the stream once a bound is reached.
	add := func(p pending) error {
		if st == nil {
			var err error
			if st, err = s.cfg.Begin(ctx); err != nil {
				st = nil // a typed nil from the opener is not a stream
				return fmt.Errorf("open stream: %w", err)
			}
			opened = time.Now()
		}
		if err := st.Append(ctx, p.batch); err != nil {
			return fmt.Errorf("append %d spans: %w", len(p.batch.Spans), err)
		}
		upto, spans, bytes = p.upto, spans+len(p.batch.Spans), bytes+p.bytes
		switch {
		case recovering || d.single != 0:
			// After a failure every batch is a stream of its own until
			// one commits: a failure that grows with the stream (a
			// timeout, a server's memory limit) cannot then repeat
			// forever.
			return commit()
		case spans >= s.cfg.CommitSpans || bytes >= s.cfg.CommitBytes || time.Since(opened) >= s.cfg.CommitInterval:
			if err := settle(); err != nil { // first: its duration decides
				return err
			}
			if s.cfg.StreamTimeout > 0 && lastCommit > s.cfg.StreamTimeout/4 {
				return commit() // ClickHouse is slow: the next stream would wait on its own clock
			}
			commitBehind()
		}
		return nil
	}
	defer func() {
		report(settle()) // its goroutine checkpoints before Run returns
		if st != nil {
			st.Abort() // not checkpointed: replayed after a restart
		}
	}()
	for ctx.Err() == nil {
		p, err := s.next(d)
		struck := false
		switch {
		case err != nil:
			// What the streams hold is good: store it before stopping on
			// the record that cannot be read.
			if st != nil {
				report(commit()) // on failure the deferred Abort ends it; the log keeps the records
			}
			return err
		case p.upto == 0 && st == nil:
			// Caught up with nothing open: the commit in flight, if any,
			// must succeed before the drain waits, or its records are
			// rewritten now.
			if err = settle(); err != nil {
				break
			}
			if err := s.idle(ctx, d); err != nil {
				return err
			}
			continue
		case p.upto == 0:
			// Caught up: store what the stream holds, then read again
			// before waiting, as records may have come meanwhile.
			err = commit()
		default:
			// While recovering, the batch is a stream of its own: a
			// failure of it is a failure of its records alone.
			alone := recovering || d.single != 0
			if err = poll(); err == nil {
				err = add(p)
				struck = err != nil && alone
			}
			// Append keeps nothing of the batch: its slices serve the next.
			d.reuse(p.batch, s.cfg.MaxBatchSpans)
			if ctx.Err() != nil {
				return nil // the open stream is aborted, its records replayed after a restart
			}
		}
		if err != nil {
			skip := struck && s.strike(d, p, err)
			if fail(err, skip) {
				return nil
			}
			if err := d.rewind(s.wal, s.wal.FirstSeq()); err != nil {
				return err
			}
		}
	}
	return nil
}

// commitResult is how a stream's Commit ended and how long it took.
type commitResult struct {
	err  error
	took time.Duration
}

// drain is Run's place in the log: its reader, a record read that did not
// fit into the last batch, and slices kept for the next batch.
type drain struct {
	r     *wal.Reader
	carry pending
	// The slices of batches delivered at the first attempt are reused: a
	// batch and the carried record that starts the next one take turns
	// with two sets of slices, so none is grown again. Both are kept while
	// neither is in use (the drain caught up with nothing carried), or the
	// next carry would start from nothing and grow a batch's slices again.
	spares []ingest.Batch
	// single, while the next record to read is at most it, makes every
	// batch one record: the records of a batch the store refused, written
	// one by one to find the one it refuses (see Dead letters).
	single uint64
	// strikes counts the unstorable failures in a row of the batch of
	// records struckFrom..struckUpto.
	strikes                int
	struckFrom, struckUpto uint64
}

// spare returns kept slices for a batch, or none.
func (d *drain) spare() ingest.Batch {
	n := len(d.spares)
	if n == 0 {
		return ingest.Batch{}
	}
	b := d.spares[n-1]
	d.spares = d.spares[:n-1]
	return b
}

// keep holds b's slices, without their rows, for a later batch: at most
// two sets, the most a batch and a carry use at once.
func (d *drain) keep(b ingest.Batch) {
	if len(d.spares) < 2 && (cap(b.Spans) > 0 || cap(b.Contents) > 0) {
		d.spares = append(d.spares, b.Emptied())
	}
}

func (s *Sink) newDrain() (*drain, error) {
	r, err := s.wal.NewReader(s.wal.FirstSeq())
	if err != nil {
		return nil, fmt.Errorf("durable log: %w", err)
	}
	return &drain{r: r}, nil
}

// rewind reads again from record from, dropping what was read past it.
func (d *drain) rewind(log *wal.Log, from uint64) error {
	r, err := log.NewReader(from)
	if err != nil {
		return fmt.Errorf("durable log: reread from %d: %w", from, err)
	}
	d.r.Close()
	d.r, d.carry = r, pending{}
	return nil
}

// reuse keeps b's slices, without their rows, for the next batch, unless a
// rare huge batch grew them past twice the usual.
func (d *drain) reuse(b ingest.Batch, maxSpans int) {
	if cap(b.Spans) > 2*maxSpans {
		return
	}
	d.keep(b)
}

// next gathers committed records, from the carried one on, into a batch of
// up to MaxBatchSpans and MaxBatchBytes; its upto is 0 when there was
// nothing to read.
func (s *Sink) next(d *drain) (pending, error) {
	if d.single != 0 && d.r.NextSeq() > d.single {
		d.single = 0
	}
	p := d.carry
	d.carry = pending{}
	if p.upto == 0 {
		p.batch = d.spare()
	}
	for len(p.batch.Spans) < s.cfg.MaxBatchSpans && p.size < s.cfg.MaxBatchBytes {
		seq, rec, err := d.r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.setErr(err)
			return pending{}, fmt.Errorf("durable log: read: %w", err)
		}
		n, size, err := rowcodec.Header(rec)
		into := &p
		if err == nil && p.upto != 0 &&
			(len(p.batch.Spans)+n > s.cfg.MaxBatchSpans || p.size+size > s.cfg.MaxBatchBytes) {
			into = &d.carry
			d.carry.batch = d.spare()
		}
		// Decoded in place at the end of the batch: no copy when
		// records are coalesced.
		if into.batch, err = rowcodec.AppendDecode(into.batch, rec); err != nil {
			err = fmt.Errorf("durable log: record %d cannot be decoded: %w", seq, err)
			s.setErr(err)
			return pending{}, err
		}
		if into.from == 0 {
			into.from = seq
		}
		into.upto = seq
		into.bytes += int64(len(rec))
		into.size += size
		if d.carry.upto != 0 || d.single != 0 {
			break
		}
	}
	if p.upto == 0 {
		d.keep(p.batch) // empty: nothing was read
	}
	return p, nil
}

// idle is the drain caught up: it ends the replay phase if that is done and
// waits for the next record or the end of ctx (then returns nil).
func (s *Sink) idle(ctx context.Context, d *drain) error {
	s.caughtUp()
	if err := s.wal.WaitFor(ctx, d.r.NextSeq()); err != nil && ctx.Err() == nil {
		return fmt.Errorf("durable log: %w", err)
	}
	return nil
}

// checkpoint records that the records up to upto are stored downstream.
func (s *Sink) checkpoint(upto uint64) {
	if err := s.wal.Truncate(upto); err != nil {
		// The rows are stored; only progress was not recorded, so they
		// would be replayed after a restart. Keep going.
		s.setErr(err)
		s.log.Error("durable log: checkpoint failed", "record", upto, "err", err)
	} else {
		s.full.Store(false)
	}
	s.progressed()
	s.caughtUp()
}

// pending is a batch gathered from the log, the first and last records in
// it and the bytes of its records.
type pending struct {
	batch ingest.Batch
	from  uint64 // the first record in it
	upto  uint64
	bytes int64 // record bytes: what the log holds of it (CommitBytes)
	size  int64 // its records' size written out: what it holds decoded (MaxBatchBytes)
}

// caughtUp ends the replay phase once every record from before Open is
// written.
func (s *Sink) caughtUp() {
	if s.replaying.Load() && s.wal.Checkpoint() >= s.replayUntil.Load() && s.replaying.CompareAndSwap(true, false) {
		s.log.Info("durable log: replay finished")
	}
}

// deliver writes p's batch downstream, retrying until it succeeds
// (delivered) or ctx ends; retried says whether an attempt failed first.
// rewind says the drain must read again from the checkpoint instead: the
// store refused the batch for its rows (see strike), so its records are
// to be written one by one, or its one record was dead-lettered.
func (s *Sink) deliver(ctx context.Context, d *drain, p pending) (delivered, retried, rewind bool) {
	bo := backoff.New(s.cfg.RetryMin, s.cfg.RetryMax)
	for attempt := 1; ; attempt++ {
		err := s.down.Accept(ctx, p.batch)
		if err == nil {
			s.succeeded()
			s.delivered.Add(uint64(len(p.batch.Spans)))
			s.deliveries.Add(1)
			return true, attempt > 1, false
		}
		if ctx.Err() != nil {
			return false, attempt > 1, false
		}
		if s.strike(d, p, err) {
			s.writeFailed(err)
			return false, true, true
		}
		if !s.retryWait(ctx, bo, err, "durable log: downstream write failed, retrying",
			"spans", len(p.batch.Spans), "attempt", attempt) {
			return false, true, false
		}
	}
}

// strike counts a failed write of p and decides what the drain does
// about the store refusing the same rows again and again (see Dead
// letters): true when it must read again from the checkpoint, because
// p's records are now written one by one, or p's one record was
// dead-lettered. Only failures Config.Unstorable recognizes count, and
// only DeadLetterAttempts of them in a row for the same records act.
func (s *Sink) strike(d *drain, p pending, err error) bool {
	if s.cfg.DeadLetter == nil || s.cfg.Unstorable == nil || p.from == 0 || !s.cfg.Unstorable(err) {
		d.strikes = 0
		return false
	}
	if p.from != d.struckFrom || p.upto != d.struckUpto {
		d.struckFrom, d.struckUpto, d.strikes = p.from, p.upto, 0
	}
	d.strikes++
	if d.strikes < s.cfg.DeadLetterAttempts {
		return false
	}
	d.strikes = 0
	if p.from != p.upto {
		d.single = p.upto
		s.log.Warn("durable log: the store refuses a batch for its rows; writing its records one by one",
			"from", p.from, "to", p.upto, "attempts", s.cfg.DeadLetterAttempts, "err", err)
		return true
	}
	if err := s.deadLetter(p.from, err); err != nil {
		s.setErr(err)
		s.log.Error("durable log: a record the store refuses could not be dead-lettered; retrying it", "record", p.from, "err", err)
		return false
	}
	return true
}

// deadLetter moves record seq, the first the log holds, to the
// dead-letter directory, and checkpoints past it once it is durable there.
func (s *Sink) deadLetter(seq uint64, cause error) error {
	if first := s.wal.FirstSeq(); seq != first {
		return fmt.Errorf("record %d is not the first unwritten record (%d)", seq, first)
	}
	r, err := s.wal.NewReader(seq)
	if err != nil {
		return fmt.Errorf("reread record %d: %w", seq, err)
	}
	got, rec, err := r.Next()
	r.Close()
	if err != nil || got != seq {
		return fmt.Errorf("reread record %d: got %d: %v", seq, got, err)
	}
	rec = bytes.Clone(rec)
	b, err := rowcodec.AppendDecode(ingest.Batch{}, rec)
	if err != nil {
		return fmt.Errorf("decode record %d: %w", seq, err)
	}
	projects := map[string]bool{}
	for i := range b.Spans {
		projects[b.Spans[i].Project] = true
	}
	for i := range b.Contents {
		projects[b.Contents[i].Project] = true
	}
	e, err := s.cfg.DeadLetter.Put(deadletter.Entry{Seq: seq, Error: cause.Error(), Attempts: s.cfg.DeadLetterAttempts,
		Spans: len(b.Spans), Contents: len(b.Contents), Projects: slices.Collect(maps.Keys(projects))}, rec)
	if err != nil {
		return err
	}
	s.deadLetters.Add(1)
	s.log.Error("durable log: record dead-lettered: the store refused it alone again and again; the records behind it go on. "+
		"Inspect it with `tally deadletter show`, and replay it with `tally deadletter replay` once the cause is fixed",
		"entry", e.ID, "record", seq, "spans", e.Spans, "projects", e.Projects, "dir", s.cfg.DeadLetter.Path(), "err", cause)
	s.checkpoint(seq)
	return nil
}

// Requeue appends a record (one taken from the dead-letter directory) to
// the log again, to be drained like any other; nil once it is durable.
func (s *Sink) Requeue(ctx context.Context, record []byte) error {
	spans, err := rowcodec.SpanCount(record)
	if err != nil {
		return fmt.Errorf("requeue: not a log record: %w", err)
	}
	if _, err := s.wal.Append(ctx, record); err != nil {
		return fmt.Errorf("requeue: %w", err)
	}
	s.appended.Add(1)
	s.appendSpans.Add(uint64(spans))
	return nil
}

// DeadLetters is the dead-letter directory, nil when there is none.
func (s *Sink) DeadLetters() *deadletter.Dir { return s.cfg.DeadLetter }

// retryWait records a failed downstream write and waits out its backoff,
// logging msg with attrs; false when ctx ended first. The wait is bo's next
// (exponential, with jitter), or the Retry-After a refusing downstream asks
// for when that is longer (bounded by RetryMax).
func (s *Sink) retryWait(ctx context.Context, bo *backoff.Backoff, err error, msg string, attrs ...any) bool {
	s.writeFailed(err)
	wait := bo.Next()
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) && ra.RetryAfter() > wait {
		wait = min(ra.RetryAfter(), s.cfg.RetryMax)
	}
	s.log.Warn(msg, append(attrs, "backoff", wait, "err", err)...)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close closes the log. Call it after Run has returned.
func (s *Sink) Close() error {
	if err := s.wal.Close(); err != nil && !errors.Is(err, wal.ErrClosed) {
		return fmt.Errorf("close durable log: %w", err)
	}
	return nil
}

package durable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/rowcodec"
)

// fakeStreams opens streams that stage what is appended and hand it to
// down on Commit, one Accept per commit (so down.batches are the spans of
// each commit). The nth open, append or commit (counted over all streams,
// from 1) in fail* fails once; while commitsDown is set every commit fails.
type fakeStreams struct {
	down *fakeDown

	mu                               sync.Mutex
	opens, appends, commits, aborts  int
	failOpen, failAppend, failCommit int
	commitsDown                      bool
	// holdCommit, when set, is the commit (counted from 1) that waits for
	// release to be closed before it proceeds; committing is closed when
	// it starts waiting.
	holdCommit          int
	committing, release chan struct{}
	// slowCommit, when set, is the commit (counted from 1) that takes
	// slowBy before it proceeds.
	slowCommit int
	slowBy     time.Duration
}

var errStream = errors.New("clickhouse: connection reset")

func (f *fakeStreams) begin(context.Context) (Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	if f.opens == f.failOpen {
		return nil, errStream
	}
	return &fakeStream{f: f}, nil
}

func (f *fakeStreams) setCommitsDown(down bool) {
	f.mu.Lock()
	f.commitsDown = down
	f.mu.Unlock()
}

func (f *fakeStreams) counts() (opens, appends, aborts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens, f.appends, f.aborts
}

type fakeStream struct {
	f      *fakeStreams
	staged ingest.Batch
	ended  bool
}

func (s *fakeStream) Append(_ context.Context, b ingest.Batch) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.appends++
	if s.f.appends == s.f.failAppend {
		return errStream
	}
	// Copied: the drain reuses b's slices once Append returns.
	s.staged.Spans = append(s.staged.Spans, b.Spans...)
	s.staged.Contents = append(s.staged.Contents, b.Contents...)
	return nil
}

func (s *fakeStream) Commit(ctx context.Context) error {
	s.f.mu.Lock()
	s.f.commits++
	fail := s.f.commits == s.f.failCommit || s.f.commitsDown
	hold := s.f.commits == s.f.holdCommit
	slow := s.f.commits == s.f.slowCommit
	s.f.mu.Unlock()
	if slow {
		time.Sleep(s.f.slowBy)
	}
	if hold {
		close(s.f.committing)
		<-s.f.release
	}
	if fail {
		return errStream
	}
	s.ended = true
	return s.f.down.Accept(ctx, s.staged)
}

func (s *fakeStream) Abort() {
	if s.ended {
		return
	}
	s.ended = true
	s.f.mu.Lock()
	s.f.aborts++
	s.f.mu.Unlock()
}

// streamConfig drains batches of one 10-span record each into streams of
// streams, with bounds no test reaches unless it sets them.
func streamConfig(streams *fakeStreams) Config {
	cfg := fastConfig()
	cfg.MaxBatchSpans = 10
	cfg.Begin = streams.begin
	cfg.CommitSpans, cfg.CommitBytes, cfg.CommitInterval = 1<<30, 1<<40, time.Hour
	return cfg
}

// prefill accepts records of 10 spans each (numbered from 0) before the
// drain runs, so the drain always finds the next record waiting.
func prefill(t *testing.T, s *Sink, records int) {
	t.Helper()
	for i := range records {
		accept(t, s, batchOf(i*10, 10))
	}
}

// recordBytes is the size of a record of batchOf(…, 10) as the drain
// counts it (stamped like Accept stamps it).
func recordBytes() int64 {
	b := batchOf(0, 10)
	b.StampVersion(uint64(time.Now().UnixNano()))
	return int64(len(rowcodec.Encode(nil, b)))
}

// drainTen prefills s with ten records of ten spans, runs the drain until
// the log is empty, checks that down took spans 0…99 once in order and
// returns the spans of each commit.
func drainTen(t *testing.T, s *Sink, down *fakeDown) []int {
	t.Helper()
	prefill(t, s, 10)
	return finishedInOrder(t, s, down, run(t, s))
}

// TestStreamCommitBounds: ten records of ten spans waiting in the log; a
// stream is committed once it holds CommitSpans spans, CommitBytes record
// bytes or has been open CommitInterval, and when the log has nothing more
// to read; every span arrives once, in order.
func TestStreamCommitBounds(t *testing.T) {
	rec := recordBytes()
	for _, c := range []struct {
		name    string
		set     func(*Config)
		commits []int // spans per commit
	}{
		{"no bound reached: one commit when caught up", func(*Config) {}, []int{100}},
		{"30 spans", func(c *Config) { c.CommitSpans = 30 }, []int{30, 30, 30, 10}},
		{"29 spans: the third record passes it", func(c *Config) { c.CommitSpans = 29 }, []int{30, 30, 30, 10}},
		{"31 spans", func(c *Config) { c.CommitSpans = 31 }, []int{40, 40, 20}},
		{"1 span: every batch", func(c *Config) { c.CommitSpans = 1 }, slices.Repeat([]int{10}, 10)},
		{"exactly two records' bytes", func(c *Config) { c.CommitBytes = 2 * rec }, []int{20, 20, 20, 20, 20}},
		{"a byte over two records", func(c *Config) { c.CommitBytes = 2*rec + 1 }, []int{30, 30, 30, 10}},
		{"1 ns open: every batch", func(c *Config) { c.CommitInterval = time.Nanosecond }, slices.Repeat([]int{10}, 10)},
	} {
		t.Run(c.name, func(t *testing.T) {
			down := newFakeDown(0, nil)
			streams := &fakeStreams{down: down}
			cfg := streamConfig(streams)
			c.set(&cfg)
			s := openSink(t, t.TempDir(), down, cfg)
			defer s.Close()
			commits := drainTen(t, s, down)
			if !slices.Equal(commits, c.commits) {
				t.Fatalf("spans per commit %v, want %v", commits, c.commits)
			}
			if st := s.Stats(); st.PendingRecords != 0 || st.DeliveredSpans != 100 || st.Deliveries != uint64(len(c.commits)) {
				t.Fatalf("stats %+v, want 0 pending, 100 delivered in %d deliveries", st, len(c.commits))
			}
			if opens, appends, aborts := streams.counts(); opens != len(c.commits) || appends != 10 || aborts != 0 {
				t.Fatalf("%d streams opened, %d appends, %d aborts; want %d, 10, 0", opens, appends, aborts, len(c.commits))
			}
		})
	}
}

// TestStreamFailureRewritesFromTheCheckpoint: a stream that fails to open,
// to append or to commit is aborted, and the drain rewrites every record
// since the checkpoint, in a stream of one batch first (a failure that
// grows with the stream cannot repeat forever), then in streams of
// CommitSpans again; every span arrives once, in order.
func TestStreamFailureRewritesFromTheCheckpoint(t *testing.T) {
	for _, c := range []struct {
		name    string
		set     func(*fakeStreams)
		commits []int // spans per commit
		// aborted streams: one whose open failed has nothing to abort;
		// abortsOr, when set, is also accepted
		aborts, abortsOr int
	}{
		{"open of the first stream", func(f *fakeStreams) { f.failOpen = 1 }, []int{10, 30, 30, 30}, 0, 0},
		{"open of the second stream", func(f *fakeStreams) { f.failOpen = 2 }, []int{30, 10, 30, 30}, 0, 0},
		{"second append of the first stream", func(f *fakeStreams) { f.failAppend = 2 }, []int{10, 30, 30, 30}, 1, 1},
		{"first append of the second stream", func(f *fakeStreams) { f.failAppend = 4 }, []int{30, 10, 30, 30}, 1, 1},
		// The first stream commits in the background: the second is
		// aborted too when the drain opened it before it saw the failure.
		{"first commit", func(f *fakeStreams) { f.failCommit = 1 }, []int{10, 30, 30, 30}, 1, 2},
		{"last commit", func(f *fakeStreams) { f.failCommit = 4 }, []int{30, 30, 30, 10}, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			down := newFakeDown(0, nil)
			streams := &fakeStreams{down: down}
			c.set(streams)
			cfg := streamConfig(streams)
			cfg.CommitSpans = 30
			s := openSink(t, t.TempDir(), down, cfg)
			defer s.Close()
			commits := drainTen(t, s, down)
			if !slices.Equal(commits, c.commits) {
				t.Fatalf("spans per commit %v, want %v", commits, c.commits)
			}
			st := s.Stats()
			if st.Retries != 1 || st.DeliveredSpans != 100 || !strings.Contains(st.LastError, errStream.Error()) {
				t.Fatalf("stats %+v, want 1 retry, 100 delivered and the stream's error", st)
			}
			if _, _, aborts := streams.counts(); aborts != c.aborts && aborts != c.abortsOr {
				t.Fatalf("%d streams aborted, want %d or %d", aborts, c.aborts, c.abortsOr)
			}
		})
	}
}

// TestStreamNotCommittedIsReplayed: while commits fail, nothing is
// checkpointed; a restart then replays every record, and the new drain
// commits each span once.
func TestStreamNotCommittedIsReplayed(t *testing.T) {
	dir := t.TempDir()
	down := newFakeDown(0, nil)
	streams := &fakeStreams{down: down}
	streams.setCommitsDown(true)
	s := openSink(t, dir, down, streamConfig(streams))
	prefill(t, s, 5)
	stop := run(t, s)
	eventually(t, "a commit failed", func() bool { return s.Stats().Retries > 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := s.Stats(); st.PendingRecords != 5 || len(down.spanIDs()) != 0 {
		t.Fatalf("after failed commits: %d records pending, %d spans committed; want 5 and 0", st.PendingRecords, len(down.spanIDs()))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, aborts := streams.counts(); aborts == 0 {
		t.Fatal("no stream was aborted after failed commits")
	}

	streams.setCommitsDown(false)
	s = openSink(t, dir, down, streamConfig(streams))
	defer s.Close()
	stop = run(t, s)
	eventually(t, "the replay committed", func() bool { return s.Stats().PendingRecords == 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := down.spanIDs(); !slices.Equal(got, spanIDRange(0, 50)) {
		t.Fatalf("committed spans %v, want 0…49 once in order", got)
	}
}

// TestStreamLightLoadCommitsAtOnce: with bounds far away, a record that
// arrives alone is committed as soon as the drain finds nothing after it,
// not when a bound is reached.
func TestStreamLightLoadCommitsAtOnce(t *testing.T) {
	down := newFakeDown(0, nil)
	streams := &fakeStreams{down: down}
	s := openSink(t, t.TempDir(), down, streamConfig(streams))
	defer s.Close()
	stop := run(t, s)
	for i := range 3 {
		accept(t, s, batchOf(i*10, 10))
		eventually(t, "the record committed", func() bool { return len(down.spanIDs()) == (i+1)*10 })
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	down.mu.Lock()
	commits := slices.Clone(down.batches)
	down.mu.Unlock()
	if !slices.Equal(commits, []int{10, 10, 10}) {
		t.Fatalf("spans per commit %v, want 10, 10, 10", commits)
	}
}

// TestStreamStoresWhatItHoldsBeforeAnUndecodableRecord: the drain stops at
// a record it cannot decode, but first commits the good records it streamed
// and checkpoints them; the bad record and what follows stay in the log.
func TestStreamStoresWhatItHoldsBeforeAnUndecodableRecord(t *testing.T) {
	var recs [][]byte
	for i := range 2 {
		b := batchOf(i*10, 10)
		b.StampVersion(1)
		recs = append(recs, rowcodec.Encode(nil, b))
	}
	dir := writeLog(t, append(recs, []byte{99, 1, 2}, rowcodec.Encode(nil, batchOf(20, 10)))...)
	down := newFakeDown(0, nil)
	s := openSink(t, dir, down, streamConfig(&fakeStreams{down: down}))
	defer s.Close()
	err := s.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "record 3 cannot be decoded") {
		t.Fatalf("Run: %v, want record 3 refused", err)
	}
	if got := down.spanIDs(); !slices.Equal(got, spanIDRange(0, 20)) {
		t.Fatalf("committed spans %v, want 0…19, the records before the bad one", got)
	}
	if st := s.Stats(); st.PendingRecords != 2 {
		t.Fatalf("%d records pending, want 2 (the bad one and the one after it)", st.PendingRecords)
	}
}

// heldDrain runs a drain of ten prefilled records of ten spans into
// streams of 30, whose commit hold (counted from 1) waits for release; set
// adjusts the streams and the config first. release is idempotent and also
// runs when the test ends, so a failing test does not leave the drain held.
func heldDrain(t *testing.T, hold int, set func(*fakeStreams, *Config)) (s *Sink, down *fakeDown,
	streams *fakeStreams, release func(), stop func() error) {
	t.Helper()
	down = newFakeDown(0, nil)
	streams = &fakeStreams{down: down, holdCommit: hold,
		committing: make(chan struct{}), release: make(chan struct{})}
	cfg := streamConfig(streams)
	cfg.CommitSpans = 30
	set(streams, &cfg)
	s = openSink(t, t.TempDir(), down, cfg)
	t.Cleanup(func() { s.Close() })
	var released sync.Once
	release = func() { released.Do(func() { close(streams.release) }) }
	prefill(t, s, 10)
	stop = run(t, s)
	// Registered after run's stop, so it runs first (cleanups run last
	// first) and the stop can finish; Close runs last.
	t.Cleanup(release)
	return s, down, streams, release, stop
}

// finishedInOrder waits until the log is drained, stops the drain, checks
// that spans 0…99 were committed once in order and returns the spans of
// each commit.
func finishedInOrder(t *testing.T, s *Sink, down *fakeDown, stop func() error) []int {
	t.Helper()
	eventually(t, "every span committed", func() bool { return s.Stats().PendingRecords == 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := down.spanIDs(); !slices.Equal(got, spanIDRange(0, 100)) {
		t.Fatalf("committed spans %v, want 0…99 once in order", got)
	}
	down.mu.Lock()
	defer down.mu.Unlock()
	return slices.Clone(down.batches)
}

// appended waits until the streams took n appends.
func appended(t *testing.T, streams *fakeStreams, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d appends", n), func() bool {
		_, appends, _ := streams.counts()
		return appends == n
	})
}

// TestStreamCommitsBehindTheNextStream: a stream that reached its bound
// commits while the drain appends the next one, so ClickHouse writing a
// part does not stall the drain; but the checkpoint stays behind the
// stream in flight, and a second full stream waits for it rather than
// committing out of order.
func TestStreamCommitsBehindTheNextStream(t *testing.T) {
	s, down, streams, release, stop := heldDrain(t, 1, func(*fakeStreams, *Config) {})
	waitCommitting(t, streams)
	// Records 1–3 are in the held commit; the drain goes on with 4–6 in a
	// second stream, full at 30 spans, whose commit waits for the first.
	appended(t, streams, 6)
	time.Sleep(20 * time.Millisecond) // room for a wrong drain to go further
	if opens, appends, _ := streams.counts(); opens != 2 || appends != 6 {
		t.Fatalf("while the first commit is held: %d streams opened, %d appends; want 2 and 6", opens, appends)
	}
	if st := s.Stats(); st.PendingRecords != 10 || st.DeliveredSpans != 0 || len(down.spanIDs()) != 0 {
		t.Fatalf("while the first commit is held: stats %+v, %d spans stored; want 10 records pending, nothing delivered",
			st, len(down.spanIDs()))
	}
	release()
	if commits := finishedInOrder(t, s, down, stop); !slices.Equal(commits, []int{30, 30, 30, 10}) {
		t.Fatalf("spans per commit %v, want 30, 30, 30, 10", commits)
	}
	if st := s.Stats(); st.DeliveredSpans != 100 || st.Deliveries != 4 || st.Retries != 0 {
		t.Fatalf("stats %+v, want 100 spans delivered in 4 deliveries, no retry", st)
	}
}

// TestStreamFailedBackgroundCommitIsRewritten: the background commit of the
// first stream fails while a second stream holds the records after it and
// its commit waits; both are aborted, nothing is checkpointed, and every
// record from the first on is rewritten once in order.
func TestStreamFailedBackgroundCommitIsRewritten(t *testing.T) {
	s, down, streams, release, stop := heldDrain(t, 1, func(f *fakeStreams, _ *Config) { f.failCommit = 1 })
	waitCommitting(t, streams)
	appended(t, streams, 6)
	release() // the held commit now fails
	// The rewrite starts with a one-batch stream, then streams of 30 again.
	if commits := finishedInOrder(t, s, down, stop); !slices.Equal(commits, []int{10, 30, 30, 30}) {
		t.Fatalf("spans per commit %v, want 10, 30, 30, 30", commits)
	}
	if _, appends, aborts := streams.counts(); aborts != 2 || appends != 16 {
		t.Fatalf("%d streams aborted, %d appends; want 2 (the failed one and the one behind it) and 6 + 10", aborts, appends)
	}
	if st := s.Stats(); st.Retries != 1 || st.DeliveredSpans != 100 {
		t.Fatalf("stats %+v, want 1 retry and 100 spans delivered", st)
	}
}

// waitCommitting waits for the held commit to start, failing the test if
// it does not within a few seconds.
func waitCommitting(t *testing.T, streams *fakeStreams) {
	t.Helper()
	select {
	case <-streams.committing:
	case <-time.After(5 * time.Second):
		t.Fatal("the held commit did not start")
	}
}

// TestStreamCommitsInTheForegroundWhileClickHouseIsSlow: once a commit took
// more than a quarter of StreamTimeout, the next full stream commits in the
// foreground (the drain opens no stream behind it, which would wait on its
// own clock for the slow commit), and every span still arrives once.
func TestStreamCommitsInTheForegroundWhileClickHouseIsSlow(t *testing.T) {
	s, down, streams, release, stop := heldDrain(t, 2, func(f *fakeStreams, c *Config) {
		f.slowCommit, f.slowBy = 1, 50*time.Millisecond
		c.StreamTimeout = 100 * time.Millisecond // a quarter: 25 ms, passed by the first commit's 50
	})
	waitCommitting(t, streams)        // the second stream's commit, after the slow first
	time.Sleep(20 * time.Millisecond) // room for a wrong drain to open a third stream
	if opens, appends, _ := streams.counts(); opens != 2 || appends != 6 {
		t.Fatalf("while the commit after a slow one is held: %d streams opened, %d appends; want 2 and 6 (committed in the foreground)",
			opens, appends)
	}
	release()
	finishedInOrder(t, s, down, stop)
}

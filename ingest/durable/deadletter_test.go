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
	"github.com/tallyhq/tally/ingest/deadletter"
	"github.com/tallyhq/tally/ingest/rowcodec"
	"github.com/tallyhq/tally/schema"
)

// errPoison stands for a store refusing rows for what they are (as
// ClickHouse's "Too many partitions for single INSERT block" did).
var errPoison = errors.New("code: 252, message: Too many partitions for single INSERT block")

// poisonDown refuses, with errPoison, every write holding a span of
// project "poison" while refuse is set; it takes every other write.
type poisonDown struct {
	*fakeDown
	mu     sync.Mutex
	refuse bool
	tries  int // writes refused
}

func (p *poisonDown) Accept(ctx context.Context, b ingest.Batch) error {
	p.mu.Lock()
	refuse := p.refuse && slices.ContainsFunc(b.Spans, func(s schema.Span) bool { return s.Project == "poison" })
	if refuse {
		p.tries++
	}
	p.mu.Unlock()
	if refuse {
		return fmt.Errorf("insert 10 span rows: %w", errPoison)
	}
	return p.fakeDown.Accept(ctx, b)
}

// projectBatch is batchOf with every row in project.
func projectBatch(project string, first, n int) ingest.Batch {
	b := batchOf(first, n)
	for i := range b.Spans {
		b.Spans[i].Project = project
	}
	for i := range b.Contents {
		b.Contents[i].Project = project
	}
	return b
}

// TestDeadLetterUnblocksTheRecordsBehind is issue #41's first defect in
// the drain: one record the store refuses for good stopped every record
// acknowledged after it, other projects' too. Now, after
// DeadLetterAttempts refusals the batch is written record by record, and
// the record refused alone as often is dead-lettered: everything else is
// stored once, in order, and the dead letter can be replayed once the
// store takes it.
func TestDeadLetterUnblocksTheRecordsBehind(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", streamed), func(t *testing.T) {
			down := &poisonDown{fakeDown: newFakeDown(0, nil), refuse: true}
			cfg := fastConfig()
			cfg.MaxBatchSpans = 100 // the seven records coalesce into one batch
			if streamed {
				streams := &fakeStreams{}
				cfg = streamConfig(streams)
				cfg.Begin = func(ctx context.Context) (Stream, error) {
					st, err := streams.begin(ctx)
					if err != nil {
						return nil, err
					}
					return &downStream{fakeStream: st.(*fakeStream), down: down}, nil
				}
				cfg.CommitSpans = 30
			}
			dir, err := deadletter.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			cfg.DeadLetter = dir
			cfg.Unstorable = func(err error) bool { return errors.Is(err, errPoison) }
			cfg.DeadLetterAttempts = 3
			s := openSink(t, t.TempDir(), down, cfg)
			defer s.Close()
			// Records 1–3 of project a, 4 of poison, 5–7 of b.
			for i := range 3 {
				accept(t, s, projectBatch("a", i*10, 10))
			}
			accept(t, s, projectBatch("poison", 30, 10))
			for i := range 3 {
				accept(t, s, projectBatch("b", 40+i*10, 10))
			}
			stop := run(t, s)
			eventually(t, "the log drained", func() bool { return s.Stats().PendingRecords == 0 })
			want := append(spanIDRange(0, 30), spanIDRange(40, 30)...)
			if got := down.spanIDs(); !slices.Equal(got, want) {
				t.Fatalf("stored spans %v,\nwant %v (all but the poison record's, once, in order)", got, want)
			}
			entries, err := dir.List()
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Fatalf("%d dead letters, want 1: %+v", len(entries), entries)
			}
			e := entries[0]
			if e.Seq != 4 || e.Spans != 10 || e.Contents != 10 || !slices.Equal(e.Projects, []string{"poison"}) ||
				e.Attempts != 3 || !strings.Contains(e.Error, "Too many partitions") {
				t.Errorf("dead letter %+v, want record 4, 10 spans and contents of project poison, 3 attempts, the store's error", e)
			}
			down.mu.Lock()
			tries := down.tries
			down.mu.Unlock()
			// Batch by batch: the seven records are one batch of 70 spans,
			// refused 3 times; then the record alone 3 times. Streamed:
			// batches are one record (streamConfig), the stream of records
			// 4–6 is refused once at its commit, and the drain recovering
			// writes each record as a stream of its own: record 4 refused
			// 3 times.
			wantTries := 6
			if streamed {
				wantTries = 4
			}
			if tries != wantTries {
				t.Errorf("the store refused %d writes, want %d", tries, wantTries)
			}
			if st := s.Stats(); st.DeadLettered != 1 {
				t.Errorf("stats: %d dead-lettered, want 1", st.DeadLettered)
			}
			if err := s.Draining(); err != nil {
				t.Errorf("Draining after the drain caught up: %v", err)
			}

			// The cause fixed, the entry is replayed: its spans are stored.
			down.mu.Lock()
			down.refuse = false
			down.mu.Unlock()
			_, rec, err := dir.Read(e.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := rowcodec.SpanCount(rec); n != 10 {
				t.Fatalf("the dead letter holds %d spans, want 10", n)
			}
			if err := s.Requeue(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the replayed record stored", func() bool { return len(down.spanIDs()) == 70 })
			if got := down.spanIDs()[60:]; !slices.Equal(got, spanIDRange(30, 10)) {
				t.Errorf("replayed spans %v, want the poison record's", got)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// downStream is a fakeStream whose commit goes to a poisonDown.
type downStream struct {
	*fakeStream
	down *poisonDown
}

func (s *downStream) Commit(ctx context.Context) error {
	s.ended = true
	return s.down.Accept(ctx, s.staged)
}

// TestOutageIsNotDeadLettered: a store that is down answers every write
// with an error Unstorable does not recognize; nothing is dead-lettered
// however often it fails, Draining reports the drain stuck past
// StuckAfter, and everything is stored once the store is back.
func TestOutageIsNotDeadLettered(t *testing.T) {
	down := newFakeDown(0, errStream)
	down.setDown(true)
	dir, err := deadletter.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.DeadLetter, cfg.DeadLetterAttempts = dir, 2
	cfg.Unstorable = func(err error) bool { return errors.Is(err, errPoison) }
	cfg.StuckAfter = 5 * time.Millisecond
	s := openSink(t, t.TempDir(), down, cfg)
	defer s.Close()
	accept(t, s, batchOf(0, 10))
	accept(t, s, batchOf(10, 10))
	stop := run(t, s)
	eventually(t, "the drain reported stuck", func() bool {
		err := s.Draining()
		return err != nil && strings.Contains(err.Error(), "stuck") && strings.Contains(err.Error(), "connection reset")
	})
	eventually(t, "more failed writes than DeadLetterAttempts", func() bool { return s.Stats().Retries > 4 })
	down.setDown(false)
	eventually(t, "everything stored", func() bool { return len(down.spanIDs()) == 20 })
	if err := s.Draining(); err != nil {
		t.Errorf("Draining after the store came back: %v", err)
	}
	if n, _ := dir.Count(); n != 0 || s.Stats().DeadLettered != 0 {
		t.Errorf("%d dead letters (stats %d) during an outage, want none", n, s.Stats().DeadLettered)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

package durable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
)

// gate is a downstream that takes a batch only when released, or fails
// every call while failing is set.
type gate struct {
	got     chan int // spans of each call, as it arrives
	release chan struct{}
	failing bool
}

func newGate() *gate { return &gate{got: make(chan int, 16), release: make(chan struct{})} }

func (g *gate) Accept(ctx context.Context, b ingest.Batch) error {
	select {
	case g.got <- len(b.Spans):
	default: // a failing drain retries more often than the test reads
	}
	if g.failing {
		return errors.New("clickhouse down")
	}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// acceptAsync runs Accept in a goroutine and returns its result channel.
func acceptAsync(s *Sink, b ingest.Batch) chan error {
	done := make(chan error, 1)
	go func() { done <- s.Accept(context.Background(), b) }()
	return done
}

// TestAcceptPacesToTheDrain: with a backlog above PaceBytes and a drain that
// keeps up, Accept waits for the drain before it appends; a backlog at
// PaceBytes exactly does not wait.
func TestAcceptPacesToTheDrain(t *testing.T) {
	g := newGate()
	cfg := fastConfig()
	cfg.PaceWait = time.Minute // only the drain ends the wait here
	cfg.PaceBytes = 1          // set to the first record's size below
	s := openSink(t, t.TempDir(), g, cfg)
	defer s.Close()
	accept(t, s, batchOf(0, 4)) // empty log: no wait
	s.cfg.PaceBytes = s.Stats().WALBytes
	run(t, s)
	<-g.got // the drain holds the first batch; the backlog stays at its size

	// At the edge: backlog == PaceBytes is not above it.
	accept(t, s, batchOf(4, 4))
	if st := s.Stats(); st.Paced != 0 || st.AppendedRecords != 2 {
		t.Fatalf("at PaceBytes: paced %d, appended %d; want 0, 2", st.Paced, st.AppendedRecords)
	}
	// One byte over: the third batch waits for the drain.
	done := acceptAsync(s, batchOf(8, 4))
	time.Sleep(100 * time.Millisecond)
	if st := s.Stats(); st.AppendedRecords != 2 {
		t.Fatalf("appended %d records while the drain held its batch, want 2 (the third must wait)", st.AppendedRecords)
	}
	select {
	case err := <-done:
		t.Fatalf("Accept returned (%v) while the drain held its batch", err)
	default:
	}
	g.release <- struct{}{} // the first batch is stored and checkpointed
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Paced != 1 || st.PacedSeconds <= 0 || st.AppendedRecords != 3 {
		t.Errorf("after the drain: paced %d (%.3fs), appended %d; want 1, > 0, 3", st.Paced, st.PacedSeconds, st.AppendedRecords)
	}
	close(g.release)
}

// TestPaceWaitBoundsTheWait: a drain that stays busy holds Accept for
// PaceWait at most; the batch is then appended.
func TestPaceWaitBoundsTheWait(t *testing.T) {
	g := newGate()
	cfg := fastConfig()
	cfg.PaceBytes, cfg.PaceWait = 1, 20*time.Millisecond
	s := openSink(t, t.TempDir(), g, cfg)
	defer s.Close()
	accept(t, s, batchOf(0, 4))
	run(t, s)
	<-g.got
	accept(t, s, batchOf(4, 4)) // returns after PaceWait, appended
	if st := s.Stats(); st.Paced != 1 || st.AppendedRecords != 2 {
		t.Errorf("paced %d, appended %d; want 1, 2", st.Paced, st.AppendedRecords)
	}
	close(g.release)
}

// TestNoPacingWhileTheDrainFails: during an outage the log absorbs ingest:
// Accept does not wait however large the backlog.
func TestNoPacingWhileTheDrainFails(t *testing.T) {
	g := newGate()
	g.failing = true
	cfg := fastConfig()
	cfg.PaceBytes, cfg.PaceWait = 1, time.Hour
	s := openSink(t, t.TempDir(), g, cfg)
	defer s.Close()
	accept(t, s, batchOf(0, 4))
	run(t, s)
	<-g.got // the first delivery failed
	eventually(t, "the drain to report its failure", func() bool { return s.Stats().Retries > 0 })
	for i := 1; i <= 3; i++ {
		accept(t, s, batchOf(4*i, 4)) // would hang for an hour if paced
	}
	if st := s.Stats(); st.Paced != 0 || st.AppendedRecords != 4 {
		t.Errorf("paced %d, appended %d; want 0, 4", st.Paced, st.AppendedRecords)
	}
}

// TestPacingOff: PaceBytes < 0 never waits.
func TestPacingOff(t *testing.T) {
	g := newGate()
	cfg := fastConfig()
	cfg.PaceBytes, cfg.PaceWait = -1, time.Hour
	s := openSink(t, t.TempDir(), g, cfg)
	defer s.Close()
	accept(t, s, batchOf(0, 4))
	run(t, s)
	<-g.got
	accept(t, s, batchOf(4, 4))
	if st := s.Stats(); st.Paced != 0 {
		t.Errorf("paced %d with pacing off", st.Paced)
	}
	close(g.release)
}

// keeper fails its first call but keeps the batch it was given, as a writer
// that gave up waiting for an INSERT and still runs it later.
type keeper struct {
	fakeDown
	kept []schema.Span
}

func (k *keeper) Accept(ctx context.Context, b ingest.Batch) error {
	k.mu.Lock()
	first := k.kept == nil && k.calls == 0
	if first {
		k.kept = b.Spans
	}
	k.mu.Unlock()
	if first {
		k.mu.Lock()
		k.calls++
		k.mu.Unlock()
		return errors.New("timed out waiting for the INSERT")
	}
	return k.fakeDown.Accept(ctx, b)
}

// TestDrainDoesNotReuseRowsAFailedAttemptHolds: the drain reuses a batch's
// slices for the next batch only when no attempt of it failed.
func TestDrainDoesNotReuseRowsAFailedAttemptHolds(t *testing.T) {
	k := &keeper{fakeDown: *newFakeDown(0, nil)}
	cfg := fastConfig()
	cfg.MaxBatchSpans = 4
	s := openSink(t, t.TempDir(), k, cfg)
	defer s.Close()
	for i := range 6 {
		accept(t, s, batchOf(4*i, 4))
	}
	run(t, s)
	eventually(t, "every batch delivered", func() bool { return len(k.spanIDs()) == 24 })
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, sp := range k.kept {
		if want := spanIDRange(0, 4)[i]; sp.SpanID != want {
			t.Fatalf("the rows the failed attempt holds changed: span %d is %q, want %q", i, sp.SpanID, want)
		}
	}
	if len(k.kept) != 4 {
		t.Fatalf("kept %d rows, want 4", len(k.kept))
	}
}

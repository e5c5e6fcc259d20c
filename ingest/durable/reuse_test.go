package durable

import (
	"testing"

	"github.com/tallyhq/tally/schema"
)

// TestDrainKeepsBothSetsOfSlices: a batch and the record carried into the
// next take turns with two sets of slices. When the drain reads the log to
// its end with nothing carried, both sets are kept, so the next batch and
// its carry reuse them instead of growing a batch's slices from nothing
// (half a gigabyte of garbage in a 30 s benchmark before they were).
func TestDrainKeepsBothSetsOfSlices(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxBatchSpans = 25
	s := openSink(t, t.TempDir(), newFakeDown(0, nil), cfg)
	defer s.Close()
	d, err := s.newDrain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.r.Close()
	next := func(wantSpans, wantCarried int) pending {
		t.Helper()
		p, err := s.next(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.batch.Spans) != wantSpans || len(d.carry.batch.Spans) != wantCarried {
			t.Fatalf("batch of %d spans, %d carried; want %d and %d",
				len(p.batch.Spans), len(d.carry.batch.Spans), wantSpans, wantCarried)
		}
		return p
	}
	for i := range 5 {
		accept(t, s, batchOf(i*10, 10))
	}
	// Two batches of two records, each with the next record carried, grow
	// both sets of slices to a batch's size.
	d.reuse(next(20, 10).batch, cfg.MaxBatchSpans)
	second := next(20, 10)
	arrays := map[*schema.Span]bool{&second.batch.Spans[0]: true, &d.carry.batch.Spans[0]: true}
	d.reuse(second.batch, cfg.MaxBatchSpans)
	d.reuse(next(10, 0).batch, cfg.MaxBatchSpans) // the carried record alone: the log is read to its end
	for i := range 3 {
		accept(t, s, batchOf(50+i*10, 10))
	}
	third := next(20, 10)
	for what, p := range map[string]*schema.Span{"batch": &third.batch.Spans[0], "carried record": &d.carry.batch.Spans[0]} {
		if !arrays[p] {
			t.Errorf("the %s after the drain caught up is in new slices, not in one of the two kept", what)
		}
	}
}

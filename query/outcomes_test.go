package query_test

import (
	"context"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
)

// An outcome posted again replaces the first even when the run's start
// moved into another month between the posts (so the two rows are in
// different partitions): the read keeps the latest version per identity,
// on either store (the embedded one runs FINAL partition by partition).
func TestReplacedOutcomeAcrossPartitions(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	first := time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC)
	moved := time.Date(2026, 11, 30, 23, 59, 58, 0, time.UTC) // an earlier span arrived later
	posted := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	row := func(start time.Time, label string, v int) schema.Outcome {
		return schema.Outcome{Project: "default", TraceID: "t1", Name: "resolved", Source: "api", Label: label,
			Passed: schema.VerdictNone, RunStart: start, CreatedAt: posted.Add(time.Duration(v) * time.Minute),
			Version: uint64(posted.Add(time.Duration(v) * time.Minute).UnixNano())}
	}
	if err := s.InsertOutcomes(ctx, []schema.Outcome{row(first, "first", 0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertOutcomes(ctx, []schema.Outcome{row(moved, "second", 1)}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Outcomes(ctx, "default", []string{"t1"}, moved.Add(-time.Hour), first.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got["t1"]) != 1 || got["t1"][0].Label != "second" {
		t.Fatalf("outcomes of t1: %+v; want the one posted last (label second) only", got["t1"])
	}
}

package schema_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
)

// daySpans are n spans of one run, each starting on a day of its own
// (day i at 10:00 UTC, i days after first), with a content row each.
func daySpans(first time.Time, n int) ([]schema.Span, []schema.Content) {
	spans := make([]schema.Span, n)
	contents := make([]schema.Content, n)
	trace := fmt.Sprintf("%032x", first.UnixNano())
	for i := range spans {
		start := first.AddDate(0, 0, i)
		id := fmt.Sprintf("%016x", i+1)
		spans[i] = schema.Span{Project: "p", TraceID: trace, SpanID: id, Start: start,
			StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1000, DurationNs: 1000,
			Name: "step", SpanType: schema.TypeTool, IngestedAt: start, Version: 1}
		contents[i] = schema.Content{Project: "p", TraceID: trace, SpanID: id, Start: start,
			Kind: schema.ContentToolArguments, Value: `{"i":1}`, Version: 1}
	}
	return spans, contents
}

// countRows counts a table's rows of trace, duplicates collapsed.
func countRows(t *testing.T, s *schema.Store, table, trace string) int {
	t.Helper()
	var n uint64
	if err := s.Conn().QueryRow(context.Background(), "SELECT count() FROM "+s.Table(table)+" FINAL WHERE trace_id = ?", trace).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestInsertAcrossManyPartitions is issue #41's first defect: 101 spans on
// 101 days are one INSERT block of 101 partitions, which a server with the
// default max_partitions_per_insert_block (100; the embedded engine's)
// refuses for good. Both ways of writing (one INSERT, and an Insert held
// open as the durable log's drain does) must store every row, in as many
// statements as the server's limit needs.
func TestInsertAcrossManyPartitions(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	caps := s.Capabilities()
	limit := caps.MaxPartitionsPerInsert
	t.Logf("server %s: max_partitions_per_insert_block %d, zone %v", caps.Version, limit, caps.Zone)
	switch {
	case caps.Major >= 19 && limit == 0:
		t.Fatalf("server %s reports no max_partitions_per_insert_block; the default is 100", caps.Version)
	case caps.Major < 19 && limit != 0:
		t.Fatalf("server %s reports max_partitions_per_insert_block %d; 18.16 has no such setting", caps.Version, limit)
	}
	if caps.Zone == nil || caps.ZoneName == "" {
		t.Fatalf("server zone %q not loaded here", caps.ZoneName)
	}
	const days = 101
	// statements is how many statements days partitions need at the limit.
	statements := 1
	if limit > 0 {
		statements = (days + limit - 1) / limit
	}

	t.Run("one INSERT", func(t *testing.T) {
		spans, contents := daySpans(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), days)
		if err := s.InsertContents(ctx, contents); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertSpans(ctx, spans); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{schema.TableSpans, schema.TableContent, schema.TableSpanFacts} {
			if got := countRows(t, s, table, spans[0].TraceID); got != days {
				t.Errorf("%s: %d rows stored, want %d", table, got, days)
			}
		}
	})

	t.Run("held open across batches", func(t *testing.T) {
		spans, _ := daySpans(time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC), days)
		in, err := s.BeginSpans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Abort()
		// Three batches: the first 60 days, then 41 more that fit beside
		// them only while the limit allows, then the first day again.
		for _, b := range [][]schema.Span{spans[:60], spans[60:], spans[:1]} {
			if err := in.Append(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := in.Commit(); err != nil {
			t.Fatal(err)
		}
		if in.Rows() != days+1 {
			t.Errorf("Rows() = %d, want %d", in.Rows(), days+1)
		}
		// 60 + 41 days pass a limit of 100 (or less): the second batch
		// opens a statement of its own; the last, one day of the first
		// batch, fits beside the second's.
		want := 1
		if limit > 0 && limit < days {
			want = 2
		}
		if limit > 0 && limit < 60 {
			want = statements + 1 // every batch split on its own
		}
		if limit > 0 && in.Statements() != want {
			t.Errorf("Statements() = %d, want %d at a limit of %d", in.Statements(), want, limit)
		}
		if got := countRows(t, s, schema.TableSpans, spans[0].TraceID); got != days {
			t.Errorf("spans: %d rows stored, want %d", got, days)
		}
	})

	t.Run("one batch over the limit", func(t *testing.T) {
		spans, _ := daySpans(time.Date(2024, 6, 1, 10, 0, 0, 0, time.UTC), days)
		// Out of day order: the rows are sorted by partition before they
		// are cut into statements.
		spans[0], spans[days-1] = spans[days-1], spans[0]
		in, err := s.BeginSpans(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Abort()
		if err := in.Append(spans); err != nil {
			t.Fatal(err)
		}
		if err := in.Commit(); err != nil {
			t.Fatal(err)
		}
		if in.Statements() != statements {
			t.Errorf("Statements() = %d, want %d at a limit of %d", in.Statements(), statements, limit)
		}
		if got := countRows(t, s, schema.TableSpans, spans[0].TraceID); got != days {
			t.Errorf("spans: %d rows stored, want %d", got, days)
		}
	})
}

package query_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestRunOverManyDaysReads: a run whose spans start on many different days
// is listed and read whole (issue #41: on 18.16 reading a 150-day run
// answered 500, "would use 9.31 GiB"). 18.16's FINAL opens every part of
// the range at once, a buffer per column each, so there a run over 150
// day partitions stays over its memory limit; ingest's --max-span-age
// (the span retention, 30 days by default) keeps a request's spans within
// 31 of them, and that is what is read there. Later servers merge FINAL
// partition by partition (the embedded engine: 150 days).
func TestRunOverManyDaysReads(t *testing.T) {
	store := openStore(t)
	days := 150
	if store.Capabilities().Major < 19 {
		days = 31
	}
	trace := fmt.Sprintf("%032x", 0x150da75)
	first := time.Now().UTC().AddDate(0, 0, -days).Truncate(time.Hour)
	spans := make([]schema.Span, days)
	for i := range spans {
		spans[i] = countedCall(trace, i, "", first.AddDate(0, 0, i), first.AddDate(0, 0, i).Add(time.Second), 100, 0, 10)
	}
	insert(t, store, spans, 1)
	reader := query.NewReader(store)
	page, err := reader.Runs(context.Background(), query.RunFilter{Project: "p", Since: first.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// Calls one after the other, none within another: all count.
	if len(page.Runs) != 1 || page.Runs[0].Spans != days || page.Runs[0].Usage.Input != uint64(days)*100 {
		t.Fatalf("run list %+v, want one run of %d spans and %d input tokens", page.Runs, days, days*100)
	}
	d, err := reader.Run(context.Background(), "p", trace)
	if err != nil {
		t.Fatal(err)
	}
	if d.Summary.Spans != days || len(d.Roots) != days {
		t.Errorf("run detail: %d spans, %d roots; want %d", d.Summary.Spans, len(d.Roots), days)
	}
}

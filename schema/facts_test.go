package schema_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
)

// Every span written to spans is in span_facts, duplicates collapse there the
// same way, and spans stored before span_facts existed are copied by its
// migration.
func TestSpanFactsFollowSpans(t *testing.T) {
	ctx := context.Background()
	s := migratedStore(t)
	start := time.Date(2026, 11, 1, 10, 30, 0, 0, time.UTC)
	span := func(id string, version uint64, cost float64) schema.Span {
		return schema.Span{Project: "p", TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat(id, 16),
			Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 2000, DurationNs: 2000,
			Name: "chat", SpanType: schema.TypeInference, Model: "gpt-4o", InputTokens: 100, CostTotal: cost,
			AttrKeys: []string{"k"}, AttrValues: []string{"v"}, IngestedAt: start, Version: version}
	}
	// Two spans, the first delivered twice with a later version the second time.
	if err := s.InsertSpans(ctx, []schema.Span{span("1", 1, 0.25), span("2", 1, 0.5), span("1", 2, 0.75)}); err != nil {
		t.Fatal(err)
	}
	type fact struct {
		SpanID  string  `ch:"span_id"`
		Cost    float64 `ch:"cost_total"`
		Version uint64  `ch:"version"`
		Model   string  `ch:"model"`
	}
	read := func() []fact {
		t.Helper()
		var got []fact
		if err := s.Conn().Select(ctx, &got, "SELECT span_id, cost_total, version, model FROM "+
			s.Table(schema.TableSpanFacts)+" FINAL ORDER BY span_id"); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := read()
	want := []fact{{strings.Repeat("1", 16), 0.75, 2, "gpt-4o"}, {strings.Repeat("2", 16), 0.5, 1, "gpt-4o"}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("span_facts FINAL = %+v, want %+v", got, want)
	}

	// A database migrated before span_facts: drop the view and the table,
	// store a span, forget migration 5 (and the later ones, which re-apply
	// idempotently), and migrate again.
	for _, q := range []string{
		"DROP TABLE " + "`" + s.Database() + "`.`span_facts_mv`",
		"DROP TABLE " + s.Table(schema.TableSpanFacts),
		"ALTER TABLE " + s.Table(schema.TableMigrations) + " DELETE WHERE version >= 5",
	} {
		if err := s.Conn().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := s.InsertSpans(ctx, []schema.Span{span("3", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := s.SchemaVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("schema version still %d after deleting migrations 5 and later", v)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	got = read()
	want = append(want, fact{strings.Repeat("3", 16), 1, 1, "gpt-4o"})
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("span_facts FINAL after the backfill = %+v, want %+v", got, want)
	}
	// And the view is back: a new span arrives in both.
	if err := s.InsertSpans(ctx, []schema.Span{span("4", 1, 2)}); err != nil {
		t.Fatal(err)
	}
	if got = read(); len(got) != 4 || got[3].Cost != 2 {
		t.Fatalf("span_facts FINAL after a new insert = %+v, want 4 rows, the last costing 2", got)
	}
}

package query_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestRunWithinBoundsTheTree: a run of 1 agent span and 30 chat spans,
// each chat span 100 input and 10 output tokens at gpt-4o-mini prices
// ((100×0.15 + 10×0.60)/1e6 = 21e-6 USD). Read within 10 spans, the tree
// holds the earliest 10, marked truncated (31 in all), while the summary
// still covers the whole run: 3,000 input, 300 output, 30 × 21e-6 USD.
// A fixture of the run within 10 spans is refused.
func TestRunWithinBoundsTheTree(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	catalog := builtin(t)
	trace := "000000000000000000000000000000b1"
	start := mustTime(t, "2026-06-01T10:00:00Z")
	mk := func(i int, parent, name, typ string) schema.Span {
		st := start.Add(time.Duration(i) * time.Second)
		s := schema.Span{Project: "p", TraceID: trace, SpanID: fmt.Sprintf("%016x", i+1), ParentSpanID: parent,
			Start: st, StartNs: uint64(st.UnixNano()), EndNs: uint64(st.UnixNano()) + 5e8, DurationNs: 5e8,
			Name: name, Kind: "internal", Status: "ok", SpanType: typ}
		if typ == schema.TypeInference {
			s.Operation, s.Provider, s.Model = "chat", "openai", "gpt-4o-mini"
			s.InputTokens, s.OutputTokens, s.UsageMode = 100, 10, schema.UsageInclusive
			catalog.Apply(&s)
		}
		return s
	}
	spans := []schema.Span{mk(0, "", "invoke_agent a", schema.TypeAgent)}
	for i := 1; i <= 30; i++ {
		spans = append(spans, mk(i, spans[0].SpanID, "chat", schema.TypeInference))
	}
	insert(t, store, spans, 1)
	r := query.NewReader(store)

	d, err := r.RunWithin(ctx, "p", trace, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.Truncated == nil || d.Truncated.TotalSpans != 31 || d.Truncated.ReturnedSpans != 10 {
		t.Fatalf("truncated %+v, want 31 total, 10 returned", d.Truncated)
	}
	if len(d.Roots) != 1 || len(d.Roots[0].Children) != 9 {
		t.Errorf("tree: %d roots, want the agent with 9 of its chats", len(d.Roots))
	}
	if s := d.Summary; s.Spans != 31 || s.LLMCalls != 30 || s.Usage.Input != 3000 || s.Usage.Output != 300 || !near(s.Cost.Total, 30*21e-6) {
		t.Errorf("summary %+v: want 31 spans, 30 calls, 3000 in, 300 out, %v USD", s, 30*21e-6)
	}
	// Within a bound the run fits in: the whole run, not truncated.
	d, err = r.RunWithin(ctx, "p", trace, 31)
	if err != nil || d.Truncated != nil || d.Summary.Spans != 31 {
		t.Errorf("within 31: err %v truncated %+v spans %d", err, d.Truncated, d.Summary.Spans)
	}
	if _, err := r.FixtureWithin(ctx, "p", trace, 10); !errors.Is(err, query.ErrRunTooLarge) {
		t.Errorf("fixture within 10 spans: err %v, want ErrRunTooLarge", err)
	}
	if _, err := r.FixtureWithin(ctx, "p", trace, 31); err != nil {
		t.Errorf("fixture within 31 spans: %v", err)
	}
}

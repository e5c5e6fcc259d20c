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

// TestRunTreeInParts: the same shape of run — an agent span and 30 chat
// spans at 21e-6 USD each — except that chat 25 read 1,000 input tokens
// ((1000×0.15 + 10×0.60)/1e6 = 156e-6 USD) and chat 12 errored. Within 10
// nodes the answer keeps the paths to the costliest span (chat 25) and the
// first error (chat 12), then the earliest chats: the agent and chats 1–7,
// 12, 25. The agent hides 21 children; every figure is still the whole
// run's: 31 spans, 3,900 input tokens, 29 × 21e-6 + 156e-6 USD on the
// summary and as the agent's subtree cost. The kept spans carry their
// attributes. Children then pages through the agent's 30 chats.
func TestRunTreeInParts(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	catalog := builtin(t)
	trace := "000000000000000000000000000000b2"
	start := mustTime(t, "2026-06-01T10:00:00Z")
	mk := func(i int, parent, name, typ string, in uint64) schema.Span {
		st := start.Add(time.Duration(i) * time.Second)
		s := schema.Span{Project: "p", TraceID: trace, SpanID: fmt.Sprintf("%016x", i+1), ParentSpanID: parent,
			Start: st, StartNs: uint64(st.UnixNano()), EndNs: uint64(st.UnixNano()) + 5e8, DurationNs: 5e8,
			Name: name, Kind: "internal", Status: "ok", SpanType: typ,
			AttrKeys: []string{"n"}, AttrValues: []string{fmt.Sprint(i)}}
		if typ == schema.TypeInference {
			s.Operation, s.Provider, s.Model = "chat", "openai", "gpt-4o-mini"
			s.InputTokens, s.OutputTokens, s.UsageMode = in, 10, schema.UsageInclusive
			catalog.Apply(&s)
		}
		return s
	}
	spans := []schema.Span{mk(0, "", "invoke_agent a", schema.TypeAgent, 0)}
	for i := 1; i <= 30; i++ {
		in := uint64(100)
		if i == 25 {
			in = 1000
		}
		s := mk(i, spans[0].SpanID, "chat", schema.TypeInference, in)
		if i == 12 {
			s.Status = "error"
		}
		spans = append(spans, s)
	}
	insert(t, store, spans, 1)
	r := query.NewReader(store)
	id := func(i int) string { return fmt.Sprintf("%016x", i+1) }
	wantCost := 29*21e-6 + 156e-6

	d, err := r.RunTree(ctx, "p", trace, query.TreeOptions{MaxNodes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if d.Partial == nil || d.Partial.TotalSpans != 31 || d.Partial.ReturnedSpans != 10 || d.Truncated != nil {
		t.Fatalf("partial %+v truncated %+v, want 10 of 31 spans, not truncated", d.Partial, d.Truncated)
	}
	if d.CostliestSpanID != id(25) || d.FirstErrorSpanID != id(12) {
		t.Errorf("costliest %s first error %s, want %s and %s", d.CostliestSpanID, d.FirstErrorSpanID, id(25), id(12))
	}
	if len(d.Roots) != 1 {
		t.Fatalf("%d roots, want 1", len(d.Roots))
	}
	agent := d.Roots[0]
	var got []string
	for _, c := range agent.Children {
		got = append(got, c.SpanID)
		if len(c.Attributes) != 1 || c.Attributes[0].Value != fmt.Sprint(int(c.Start.Sub(start).Seconds())) {
			t.Errorf("span %s attributes %v, want n = its index", c.SpanID, c.Attributes)
		}
	}
	want := []string{id(1), id(2), id(3), id(4), id(5), id(6), id(7), id(12), id(25)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("agent's children %v, want %v", got, want)
	}
	if agent.HiddenChildren != 21 || agent.HiddenSpans != 21 {
		t.Errorf("agent hides %d children, %d spans; want 21, 21", agent.HiddenChildren, agent.HiddenSpans)
	}
	if s := d.Summary; s.Spans != 31 || s.Usage.Input != 3900 || !near(s.Cost.Total, wantCost) || s.Errors != 1 {
		t.Errorf("summary %+v: want 31 spans, 3900 in, %v USD, 1 error", s, wantCost)
	}
	if agent.SubtreeCost == nil || !near(agent.SubtreeCost.Total, wantCost) {
		t.Errorf("agent subtree cost %+v, want %v", agent.SubtreeCost, wantCost)
	}
	// A focused span is kept with its path, within the same budget.
	d, err = r.RunTree(ctx, "p", trace, query.TreeOptions{MaxNodes: 10, Focus: []string{id(30)}})
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Roots[0].Children; len(c) != 9 || c[8].SpanID != id(30) || c[0].SpanID != id(1) {
		t.Errorf("focused on chat 30: children %d, last %s", len(c), c[len(c)-1].SpanID)
	}
	// A run within the bound is whole.
	d, err = r.RunTree(ctx, "p", trace, query.TreeOptions{MaxNodes: 31})
	if err != nil || d.Partial != nil || len(d.Roots[0].Children) != 30 || d.Roots[0].HiddenSpans != 0 {
		t.Errorf("within 31 nodes: err %v partial %+v", err, d.Partial)
	}

	// The agent's children from the 10th, five at a time.
	part, err := r.Children(ctx, "p", trace, id(0), query.ChildrenOptions{Offset: 9, Limit: 5, MaxNodes: 100})
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, c := range part.Children {
		got = append(got, c.SpanID)
	}
	if want := []string{id(10), id(11), id(12), id(13), id(14)}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("children page %v, want %v", got, want)
	}
	if part.ChildrenTotal != 30 || part.NextOffset == nil || *part.NextOffset != 14 {
		t.Errorf("page: total %d next %v, want 30 and 14", part.ChildrenTotal, part.NextOffset)
	}
	if c := part.Children[2]; c.Status != "error" || c.Cost == nil || !near(c.Cost.Total, 21e-6) || !c.Counted || len(c.Attributes) != 1 {
		t.Errorf("chat 12 in the page: %+v", c)
	}
	part, err = r.Children(ctx, "p", trace, id(0), query.ChildrenOptions{Offset: 25, MaxNodes: 10})
	if err != nil || len(part.Children) != 5 || part.NextOffset != nil {
		t.Errorf("last page: err %v, %d children, next %v; want 5, none", err, len(part.Children), part.NextOffset)
	}
	if _, err := r.Children(ctx, "p", trace, "00000000000000ff", query.ChildrenOptions{}); !errors.Is(err, query.ErrNotFound) {
		t.Errorf("children of a span not in the run: %v, want ErrNotFound", err)
	}
}

// TestTasksBoundedRuns: a report reads at most MaxRuns runs, the newest,
// and says it was cut. Four one-span runs of task t, a minute apart, the
// oldest ended in error; with MaxRuns 3 the report covers the newest 3
// (truncated, none failed), with 4 all of them (one failed).
func TestTasksBoundedRuns(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	start := mustTime(t, "2026-06-01T10:00:00Z")
	var spans []schema.Span
	for i := range 4 {
		st := start.Add(time.Duration(i) * time.Minute)
		status := "ok"
		if i == 0 {
			status = "error"
		}
		spans = append(spans, schema.Span{Project: "p", TraceID: fmt.Sprintf("%032x", i+1), SpanID: fmt.Sprintf("%016x", i+1),
			Start: st, StartNs: uint64(st.UnixNano()), EndNs: uint64(st.UnixNano()) + 1e9, DurationNs: 1e9,
			Name: "run", Kind: "internal", Status: status, SpanType: schema.TypeAgent, TaskName: "t"})
	}
	insert(t, store, spans, 1)
	r := query.NewReader(store)
	for _, c := range []struct {
		max, read, failed int
		cut               bool
	}{{3, 3, 0, true}, {4, 4, 1, false}} {
		rep, err := r.Tasks(ctx, query.TaskFilter{Project: "p", Since: start.Add(-time.Hour), Until: start.Add(time.Hour), MaxRuns: c.max})
		if err != nil {
			t.Fatal(err)
		}
		if rep.RunsRead != c.read || rep.Truncated != c.cut || len(rep.Tasks) != 1 || rep.Tasks[0].Runs != c.read || rep.Tasks[0].Failed != c.failed {
			t.Errorf("MaxRuns %d: read %d truncated %v tasks %+v; want %d, %v, %d failed", c.max, rep.RunsRead, rep.Truncated, rep.Tasks, c.read, c.cut, c.failed)
		}
	}
}

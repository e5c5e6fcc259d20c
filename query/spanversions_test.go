package query_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestRunReadKeepsTheNewestSpanVersion: a run read whole sees each span
// once, at its newest version, in start order (ties by span id), whatever
// the parts its copies are in: FINAL on ClickHouse 18.16, each span's
// newest version picked by the read itself on 20.x and later (the
// embedded store). The run: an agent span and four tool calls, two of
// them starting at the same nanosecond; the third call was repriced
// (version 2, renamed and costlier, in a part of its own) and the second
// delivered twice at version 1 (an exporter's retry).
func TestRunReadKeepsTheNewestSpanVersion(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	at := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Second)
	trace := fmt.Sprintf("%032x", 0xbeef)
	span := func(id, parent, name string, offset time.Duration, cost float64) schema.Span {
		st := at.Add(offset)
		return schema.Span{Project: "p", TraceID: trace, SpanID: id, ParentSpanID: parent, Name: name,
			SpanType: schema.TypeTool, ToolName: name, Start: st.Truncate(time.Second), StartNs: uint64(st.UnixNano()),
			EndNs: uint64(st.Add(time.Second).UnixNano()), DurationNs: uint64(time.Second), Status: "ok", CostTotal: cost}
	}
	root := span("00000000000000a0", "", "invoke_agent", 0, 0)
	root.SpanType, root.ToolName = schema.TypeAgent, ""
	// Span ids out of start order, and two calls at the same start: the
	// read orders by start, then by span id.
	first := span("00000000000000f1", root.SpanID, "search", time.Second, 0.01)
	twinB := span("00000000000000b2", root.SpanID, "fetch", 2*time.Second, 0.02)
	twinA := span("00000000000000c3", root.SpanID, "lookup", 2*time.Second, 0.03)
	last := span("0000000000000001", root.SpanID, "write", 3*time.Second, 0.04)
	insert(t, store, []schema.Span{root, first, twinB, twinA, last}, 1)
	repriced := twinA
	repriced.Name, repriced.CostTotal = "lookup_v2", 0.5
	insert(t, store, []schema.Span{repriced}, 2)
	insert(t, store, []schema.Span{twinB}, 1)

	r := query.NewReader(store)
	spans, err := r.Spans(ctx, "p", trace)
	if err != nil {
		t.Fatal(err)
	}
	// Start order: root (0 s), first (1 s), the twins at 2 s by span id
	// (b2 before c3), last (3 s).
	want := []struct {
		id, name string
		version  uint64
	}{
		{root.SpanID, "invoke_agent", 1}, {first.SpanID, "search", 1}, {twinB.SpanID, "fetch", 1},
		{twinA.SpanID, "lookup_v2", 2}, {last.SpanID, "write", 1},
	}
	if len(spans) != len(want) {
		var got []string
		for _, s := range spans {
			got = append(got, fmt.Sprintf("%s@%d", s.SpanID, s.Version))
		}
		t.Fatalf("read %d spans %v, want %d (each once)", len(spans), got, len(want))
	}
	for i, w := range want {
		if s := spans[i]; s.SpanID != w.id || s.Name != w.name || s.Version != w.version {
			t.Errorf("span %d: %s %q version %d, want %s %q version %d", i, s.SpanID, s.Name, s.Version, w.id, w.name, w.version)
		}
	}
	if got := spans[3].CostTotal; got != 0.5 {
		t.Errorf("the repriced span's cost %v, want its version 2's 0.5", got)
	}

	d, err := r.RunTree(ctx, "p", trace, query.TreeOptions{MaxNodes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Roots) != 1 || len(d.Roots[0].Children) != 4 {
		t.Fatalf("tree: %d roots, want one with 4 children", len(d.Roots))
	}
	var names []string
	for _, c := range d.Roots[0].Children {
		names = append(names, c.Name)
	}
	if got := fmt.Sprint(names); got != "[search fetch lookup_v2 write]" {
		t.Errorf("children %s, want [search fetch lookup_v2 write]", got)
	}
}

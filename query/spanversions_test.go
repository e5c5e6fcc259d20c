package query_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// TestRunReadKeepsTheNewestSpanVersion: a run read whole sees each span
// once, at its newest version, in start order (ties by span id), whatever
// the parts its copies are in: FINAL on ClickHouse 18.16, each span's
// newest version picked by the read itself on 20.x and later (the
// embedded store). The run: an agent span and four tool calls, two of
// them starting at the same nanosecond; the third call was repriced
// (version 2, renamed and costlier, in a part of its own) and the second
// delivered twice at version 1 (an exporter's retry); the third's first
// delivery was retried after the reprice.
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
	// A retry of the first delivery, arriving after the reprice: the
	// older version is in the newest part, so a read that keeps the first
	// or the last row it meets of a span keeps the wrong one.
	insert(t, store, []schema.Span{twinA}, 1)

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

// TestRunReadKeepsTheNewestContentVersion: the tool content a run's detail
// reviews (the model's offered tools, each call's arguments) is read at
// each row's newest version, once, on every store: FINAL on 18.16, the
// newest version picked by the read itself on the embedded store. The run:
// a chat offered refund (order and amount required), then two refund
// calls. The first call's arguments are valid at version 2, and a late
// retry of their version 1 (an invalid amount) arrived after it; the
// second's were delivered twice at version 1 (valid), then at version 2
// without the amount. So the newest version is in the oldest part for one
// call and in the newest for the other: read at the newest version, only
// the second call's arguments break the schema, while a read that keeps
// the first (or the last) row it meets of a call flags the first call or
// neither.
func TestRunReadKeepsTheNewestContentVersion(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	at := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)
	trace := fmt.Sprintf("%032x", 0xc0de)
	span := func(id, parent, name, typ string, offset time.Duration) schema.Span {
		st := at.Add(offset)
		return schema.Span{Project: "p", TraceID: trace, SpanID: id, ParentSpanID: parent, Name: name, SpanType: typ,
			Start: st.Truncate(time.Second), StartNs: uint64(st.UnixNano()), EndNs: uint64(st.Add(500 * time.Millisecond).UnixNano()),
			DurationNs: uint64(500 * time.Millisecond), Status: "ok"}
	}
	root := span("00000000000000a0", "", "invoke_agent clerk", schema.TypeAgent, 0)
	root.EndNs, root.DurationNs = uint64(at.Add(10*time.Second).UnixNano()), uint64(10*time.Second)
	chat := span("00000000000000b0", root.SpanID, "chat gpt-4o-mini", schema.TypeInference, time.Second)
	chat.Operation, chat.Model = "chat", "gpt-4o-mini"
	first := span("00000000000000c1", root.SpanID, "execute_tool refund", schema.TypeTool, 3*time.Second)
	second := span("00000000000000c2", root.SpanID, "execute_tool refund", schema.TypeTool, 4*time.Second)
	first.ToolName, second.ToolName = "refund", "refund"
	insert(t, store, []schema.Span{root, chat, first, second}, 1)

	content := func(s schema.Span, kind, key, value string, version uint64) schema.Content {
		return schema.Content{Project: "p", TraceID: trace, SpanID: s.SpanID, Start: s.Start, Kind: kind,
			SourceKey: key, Value: value, Version: version}
	}
	const tools = `[{"type":"function","name":"refund","parameters":{"type":"object",` +
		`"properties":{"order":{"type":"string"},"amount":{"type":"number"}},"required":["order","amount"]}}]`
	args := func(s schema.Span, value string, version uint64) schema.Content {
		return content(s, schema.ContentToolArguments, "gen_ai.tool.call.arguments", value, version)
	}
	for _, rows := range [][]schema.Content{
		{content(chat, schema.ContentToolDefinitions, "gen_ai.tool.definitions", tools, 1),
			args(first, `{"order":"A1","amount":10}`, 2), args(second, `{"order":"A2","amount":5}`, 1)},
		{args(first, `{"order":"A1","amount":"ten"}`, 1)},
		{args(second, `{"order":"A2","amount":5}`, 1)},
		{args(second, `{"order":"A2"}`, 2)},
	} {
		if err := store.InsertContents(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}

	d, err := query.NewReader(store).RunTree(ctx, "p", trace, query.TreeOptions{MaxNodes: 100})
	if err != nil {
		t.Fatal(err)
	}
	var flagged []string
	for _, s := range d.Summary.Signals {
		if s.Kind == safety.KindInvalidArguments || s.Kind == safety.KindUnknownTool {
			flagged = append(flagged, string(s.Kind)+"@"+s.SpanID)
		}
	}
	if want := "[invalid_arguments@" + second.SpanID + "]"; fmt.Sprint(flagged) != want {
		t.Errorf("signals %v, want %s (the arguments' newest versions: the first call valid, the second without its amount)", flagged, want)
	}
}

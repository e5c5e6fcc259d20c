package query

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/bench/loader"
)

// TestSettledTreeAnswersAsTheOutline: a big run's row settled without a
// tree (by a build before them) is stale, and with one not. The run's part
// read from its settled tree is the part computed from its outline —
// summary, landmarks, every node and what each hides — with and without a
// focused span, and so are a page of a node's children and the run read
// whole; once a span of the run is newer than the settled row, the tree is
// not read and the part holds the new span.
func TestSettledTreeAnswersAsTheOutline(t *testing.T) {
	ctx := context.Background()
	store := testenv.OpenStore(t)
	const project, size = "bench", 2500
	st, err := loader.Load(ctx, store, loader.Config{Spans: size + 200, Days: 1, LargeRuns: []int{size}, Seed: 5,
		Project: project, End: time.Now().Add(-time.Hour), Content: true})
	if err != nil {
		t.Fatal(err)
	}
	id := st.Large[0].TraceID
	r := NewReader(store).core

	settled, err := SettleSource{r}.Settle(ctx, project, []string{id}, uint64(time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	if len(settled) != 1 || settled[0].Row.Tree == "" || !settled[0].Quiet {
		t.Fatalf("settled %d rows, want one quiet row with a tree", len(settled))
	}
	// A row of a build before trees: a full pass finds the run stale, and
	// once its row has a tree, not.
	stale := func() bool {
		t.Helper()
		runs, err := SettleSource{r}.StaleRuns(ctx, st.Since.Add(-time.Hour), time.Now().Add(time.Hour), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			if run.TraceID == id {
				return true
			}
		}
		return false
	}
	old := settled[0].Row
	old.Tree, old.Version = "", 1
	if err := store.InsertRuns(ctx, []schema.RunRow{old}); err != nil {
		t.Fatal(err)
	}
	if !stale() {
		t.Error("a big run's row without a tree is not stale")
	}
	settled[0].Row.Version = 2
	if err := store.InsertRuns(ctx, []schema.RunRow{settled[0].Row}); err != nil {
		t.Fatal(err)
	}
	if stale() {
		t.Error("a big run's row with its tree is stale")
	}
	ext, err := r.locate(ctx, project, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, total, ok, err := r.settledTree(ctx, project, id, ext); err != nil || !ok || total != size {
		t.Fatalf("settled tree: %d nodes, ok %v, %v; want %d nodes", total, ok, err, size)
	}

	answer := func(settled bool, o TreeOptions) (*RunDetail, string) {
		t.Helper()
		d, err := r.runTree(ctx, project, id, o, settled)
		if err != nil {
			t.Fatal(err)
		}
		b, err := d.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		return d, string(b)
	}
	outline, want := answer(false, TreeOptions{MaxNodes: 300})
	if outline.Partial == nil || outline.Partial.TotalSpans != size || outline.Partial.ReturnedSpans != 300 {
		t.Fatalf("outline answer: partial %+v, want 300 of %d", outline.Partial, size)
	}
	if _, got := answer(true, TreeOptions{MaxNodes: 300}); got != want {
		t.Errorf("part from the settled tree differs from the outline's:\n%.2000s\nwant\n%.2000s", got, want)
	}
	// A span below the part, focused: its path is in both answers.
	var deep *SpanNode
	var hidden func(ns []*SpanNode)
	hidden = func(ns []*SpanNode) {
		for _, n := range ns {
			if deep == nil && n.HiddenChildren > 0 {
				deep = n
			}
			hidden(n.Children)
		}
	}
	hidden(outline.Roots)
	if deep == nil {
		t.Fatal("no node of the part hides children")
	}
	whole, wantWhole := answer(false, TreeOptions{MaxNodes: size})
	if _, got := answer(true, TreeOptions{MaxNodes: size}); got != wantWhole {
		t.Errorf("whole run from the settled tree differs from the one computed from its spans")
	}
	// The deepest of the run's last spans: not in the first part.
	var focus string
	depth := 0
	var find func(ns []*SpanNode)
	find = func(ns []*SpanNode) {
		for _, n := range ns {
			if n.Depth >= depth {
				focus, depth = n.SpanID, n.Depth
			}
			find(n.Children)
		}
	}
	find(whole.Roots)
	o := TreeOptions{MaxNodes: 50, Focus: []string{focus}}
	focused, want := answer(false, o)
	if _, got := answer(true, o); got != want {
		t.Errorf("focused part (span %s) from the settled tree differs from the outline's", focus)
	}
	if !holds(focused.Roots, focus) {
		t.Errorf("focused part does not hold span %s", focus)
	}

	page := func(settled bool) string {
		t.Helper()
		c, err := r.children(ctx, project, id, deep.SpanID, ChildrenOptions{Offset: 1, Limit: 20, MaxNodes: 100}, settled)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, want := page(true), page(false); got != want {
		t.Errorf("children from the settled tree:\n%.1500s\nwant\n%.1500s", got, want)
	}

	// A late span: the row no longer holds for the run's spans.
	late := schema.Span{Project: project, TraceID: id, SpanID: "00000000000late1", ParentSpanID: whole.Roots[0].SpanID,
		Name: "late", SpanType: schema.TypeTool, ToolName: "late_tool", Status: schema.StatusOK, Service: "svc",
		Start: whole.Roots[0].Start.Truncate(time.Second), StartNs: uint64(whole.Roots[0].Start.UnixNano()) + 1,
		EndNs: uint64(whole.Roots[0].Start.UnixNano()) + 2, DurationNs: 1, Version: uint64(time.Now().UnixNano())}
	if err := store.InsertSpans(ctx, []schema.Span{late}); err != nil {
		t.Fatal(err)
	}
	if ext, err = r.locate(ctx, project, id); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := r.settledTree(ctx, project, id, ext); err != nil || ok {
		t.Fatalf("settled tree after a late span: ok %v, %v; want not used", ok, err)
	}
	if d, _ := answer(true, TreeOptions{MaxNodes: 300}); d.Partial == nil || d.Partial.TotalSpans != size+1 || d.Summary.Spans != size+1 {
		t.Errorf("after a late span: partial %+v, %d spans; want %d", d.Partial, d.Summary.Spans, size+1)
	}
}

// TestDecodeSettledTreeRefusesDamage: every cut of an encoded tree, and a
// tree of another format, is refused or not read — never a panic or a tree
// with nodes missing.
func TestDecodeSettledTreeRefusesDamage(t *testing.T) {
	spans := []schema.Span{
		{TraceID: "t", SpanID: "a", StartNs: 1, EndNs: 9, SpanType: schema.TypeAgent, Status: schema.StatusOK},
		{TraceID: "t", SpanID: "b", ParentSpanID: "a", StartNs: 2, EndNs: 3, SpanType: schema.TypeInference,
			InputTokens: 10, OutputTokens: 2, UsageMode: schema.UsageInclusive, CostSource: schema.CostCatalog, CostTotal: 0.5, CostInput: 0.4, CostOutput: 0.1},
		{TraceID: "t", SpanID: "c", ParentSpanID: "a", StartNs: 4, EndNs: 5, SpanType: schema.TypeTool, ToolName: "x", Status: schema.StatusError},
		{TraceID: "t", SpanID: "d", ParentSpanID: "gone", StartNs: 6, EndNs: 7, SpanType: schema.TypeTool, ToolName: "x"},
	}
	d := runDetail(spans)
	enc, err := encodeSettledTree(d)
	if err != nil {
		t.Fatal(err)
	}
	got, total, ok, err := decodeSettledTree(enc)
	if err != nil || !ok || total != 4 || len(got.Roots) != 2 || len(got.Roots[0].Children) != 2 || !got.Roots[1].Orphan ||
		got.Roots[0].SubtreeCost == nil || got.Roots[0].SubtreeCost.Total != 0.5 || got.Roots[0].SubtreeUsage.Input != 10 ||
		!got.Roots[0].Children[0].Counted || got.Roots[0].Children[1].Depth != 1 {
		t.Fatalf("round trip: %d nodes, ok %v, %v: %+v", total, ok, err, got)
	}
	for cut := 1; cut < len(enc); cut++ {
		if _, _, ok, err := decodeSettledTree(enc[:cut]); ok && err == nil {
			t.Errorf("a tree cut at byte %d of %d was read", cut, len(enc))
		}
	}
	if _, _, ok, err := decodeSettledTree("\x09" + enc[1:]); ok || err != nil {
		t.Errorf("another format: ok %v, %v; want not read, no error", ok, err)
	}
}

// holds reports whether the trees under roots hold the span id.
func holds(roots []*SpanNode, id string) bool {
	for _, n := range roots {
		if n.SpanID == id || holds(n.Children, id) {
			return true
		}
	}
	return false
}

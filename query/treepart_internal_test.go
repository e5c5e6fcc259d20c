package query

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tallyhq/tally/schema"
)

// pruneTree is the run every prune case cuts:
//
//	root
//	├── a
//	│   ├── a1
//	│   │   └── a1x
//	│   └── a2
//	├── b
//	│   └── b1
//	└── c
//
// 8 spans; breadth-first order root, a, b, c, a1, a2, b1, a1x.
func pruneTree() []*SpanNode {
	ms := uint64(1_000_000)
	var spans []schema.Span
	for i, p := range [][2]string{{"root", ""}, {"a", "root"}, {"a1", "a"}, {"a1x", "a1"}, {"a2", "a"},
		{"b", "root"}, {"b1", "b"}, {"c", "root"}} {
		spans = append(spans, schema.Span{TraceID: "t", SpanID: p[0], ParentSpanID: p[1], Name: p[0],
			StartNs: uint64(i) * ms, EndNs: uint64(i+1) * ms})
	}
	return BuildTree(spans)
}

// shape writes a pruned tree as "id(hidden children/hidden spans)" nested
// in brackets, "id" alone when nothing is hidden below it.
func shape(nodes []*SpanNode) string {
	var parts []string
	for _, n := range nodes {
		s := n.SpanID
		if n.HiddenChildren > 0 || n.HiddenSpans > 0 {
			s += fmt.Sprintf("(%d/%d)", n.HiddenChildren, n.HiddenSpans)
		}
		if len(n.Children) > 0 {
			s += "[" + shape(n.Children) + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestPrune: the kept nodes are the pinned paths first, then breadth-first;
// each kept node counts the direct children and the spans at any depth it
// lost. Expected shapes worked out from the tree above.
func TestPrune(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		pins []string
		want string
		kept int // nodes kept: the nodes in want
	}{
		{"all fit", 8, nil, "root[a[a1[a1x] a2] b[b1] c]", 8},
		{"more than fit", 100, nil, "root[a[a1[a1x] a2] b[b1] c]", 8},
		// root, a, b, c: the first level whole; a loses a1, a2 (and a1x below), b loses b1.
		{"top levels first", 4, nil, "root(0/4)[a(2/3) b(1/1) c]", 4},
		{"one node", 1, nil, "root(3/7)", 1},
		// a1x's path is root, a, a1, a1x (4), then b; root loses c, and a2 and b1 below.
		{"pinned deep span", 5, []string{"a1x"}, "root(1/3)[a(1/1)[a1[a1x]] b(1/1)]", 5},
		// Two pins share root and a: root a a1 a1x + b1's b, b1 = 6, then c; only a2 is left out.
		{"two pins", 7, []string{"a1x", "b1"}, "root(0/1)[a(1/1)[a1[a1x]] b[b1] c]", 7},
		// The path root a a1 a1x (4) does not fit in 3: skipped, breadth-first instead.
		{"pin too deep", 3, []string{"a1x"}, "root(1/5)[a(2/3) b(1/1)]", 3},
		{"unknown pin", 2, []string{"nope", ""}, "root(2/6)[a(2/3)]", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roots, kept := prune(pruneTree(), tc.max, tc.pins)
			if got := shape(roots); got != tc.want {
				t.Errorf("prune(%d, %v) = %s, want %s", tc.max, tc.pins, got, tc.want)
			}
			if len(kept) != tc.kept {
				t.Errorf("kept %d nodes, want %d", len(kept), tc.kept)
			}
		})
	}
}

// TestPruneKeepsSiblingOrder: the children of a kept node stay in start
// order when a pinned one comes from far down the list.
func TestPruneKeepsSiblingOrder(t *testing.T) {
	var spans []schema.Span
	spans = append(spans, schema.Span{TraceID: "t", SpanID: "root", StartNs: 0, EndNs: 1000})
	for i := 1; i <= 50; i++ {
		spans = append(spans, schema.Span{TraceID: "t", SpanID: fmt.Sprintf("k%02d", i), ParentSpanID: "root",
			StartNs: uint64(i), EndNs: uint64(i + 1)})
	}
	roots, _ := prune(BuildTree(spans), 4, []string{"k40"})
	var ids []string
	for _, c := range roots[0].Children {
		ids = append(ids, c.SpanID)
	}
	if want := []string{"k01", "k02", "k40"}; !slices.Equal(ids, want) {
		t.Errorf("children %v, want %v", ids, want)
	}
	if r := roots[0]; r.HiddenChildren != 47 || r.HiddenSpans != 47 {
		t.Errorf("root hides %d children, %d spans; want 47, 47", r.HiddenChildren, r.HiddenSpans)
	}
}

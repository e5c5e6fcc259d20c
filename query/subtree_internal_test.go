package query

import (
	"math"
	"testing"

	"github.com/tallyhq/tally/schema"
)

// TestSubtreeFigures: each span node carries the inclusive usage and cost
// of its subtree, counting each call once. The run:
//
//	agent (root, no usage)
//	├── llm-a          in 100 out 10  $0.001
//	├── tool           (no usage)
//	└── sub-agent      (no usage)
//	    └── wrapper    in 200 out 20  $0.002   (repeats llm-b: not counted)
//	        └── llm-b  in 200 out 20  $0.002
//
// Hand-computed: llm-b's subtree is its own 200/20/$0.002; the wrapper's
// and the sub-agent's the same (the wrapper is the same call); the root's
// 100+200 = 300 in, 10+20 = 30 out, $0.001 + $0.002 = $0.003, which is the
// run's total.
func TestSubtreeFigures(t *testing.T) {
	ms := uint64(1_000_000)
	span := func(id, parent, typ string, start, end uint64) schema.Span {
		return schema.Span{TraceID: "t", SpanID: id, ParentSpanID: parent, Name: id, SpanType: typ,
			StartNs: start * ms, EndNs: end * ms, DurationNs: (end - start) * ms}
	}
	llm := func(s schema.Span, in, out uint64, cost float64) schema.Span {
		s.InputTokens, s.OutputTokens, s.UsageMode = in, out, schema.UsageInclusive
		s.CostTotal, s.CostInput, s.CostSource = cost, cost, schema.CostCatalog
		return s
	}
	spans := []schema.Span{
		span("agent", "", schema.TypeAgent, 0, 100),
		llm(span("llm-a", "agent", schema.TypeInference, 1, 10), 100, 10, 0.001),
		span("tool", "agent", schema.TypeTool, 11, 20),
		span("sub", "agent", schema.TypeAgent, 21, 90),
		llm(span("wrapper", "sub", schema.TypeInference, 22, 80), 200, 20, 0.002),
		llm(span("llm-b", "wrapper", schema.TypeInference, 23, 79), 200, 20, 0.002),
	}
	d := runDetail(spans)
	nodes := nodesByID(d.Roots)
	for _, c := range []struct {
		span    string
		in, out uint64
		cost    float64
		none    bool
	}{
		{span: "agent", in: 300, out: 30, cost: 0.003},
		{span: "llm-a", in: 100, out: 10, cost: 0.001},
		{span: "tool", none: true},
		{span: "sub", in: 200, out: 20, cost: 0.002},
		{span: "wrapper", in: 200, out: 20, cost: 0.002},
		{span: "llm-b", in: 200, out: 20, cost: 0.002},
	} {
		n := nodes[c.span]
		if n == nil {
			t.Fatalf("span %s missing from the tree", c.span)
		}
		if c.none {
			if n.SubtreeUsage != nil || n.SubtreeCost != nil {
				t.Errorf("%s: subtree usage %+v cost %+v, want none", c.span, n.SubtreeUsage, n.SubtreeCost)
			}
			continue
		}
		if n.SubtreeUsage == nil || n.SubtreeUsage.Input != c.in || n.SubtreeUsage.Output != c.out {
			t.Errorf("%s: subtree usage %+v, want in %d out %d", c.span, n.SubtreeUsage, c.in, c.out)
		}
		if n.SubtreeCost == nil || math.Abs(n.SubtreeCost.Total-c.cost) > 1e-12 {
			t.Errorf("%s: subtree cost %+v, want $%g", c.span, n.SubtreeCost, c.cost)
		}
	}
	if nodes["wrapper"].Counted {
		t.Errorf("the wrapper of llm-b counted: the call would count twice")
	}
	if root := nodes["agent"].SubtreeCost; root == nil || math.Abs(root.Total-d.Summary.Cost.Total) > 1e-12 {
		t.Errorf("root subtree cost %+v, run cost %v: want equal", root, d.Summary.Cost.Total)
	}
}

package attribution

import "testing"

// A span delivered twice keeps its highest version whichever row comes
// first: reads of span_facts do not use FINAL and rely on this.
func TestAttributeKeepsHighestVersion(t *testing.T) {
	old := Span{Project: "p", TraceID: "t", SpanID: "s", StartNs: 10, Cost: Cost{Total: 1}, Version: 1}
	repriced := old
	repriced.Cost.Total, repriced.Version = 2.5, 2
	for _, order := range [][]Span{{old, repriced}, {repriced, old}} {
		got := Attribute(order)
		if len(got) != 1 || got[0].Cost.Total != 2.5 || got[0].Version != 2 {
			t.Fatalf("attribute(versions %d, %d) = %+v, want one span costing 2.5 (version 2)",
				order[0].Version, order[1].Version, got)
		}
	}
}

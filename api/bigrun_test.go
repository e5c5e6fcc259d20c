package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/tools/demo"
)

// TestBigRun: a run of 10,000 spans is listed, and its list figures (the
// SQL counting rule) equal its detail's (the Go rule). The counting SQL
// once compared every pair of a run's calls inside ClickHouse and exceeded
// the query memory limit here, failing the whole list. Then the run is
// read in parts (see bigRunInParts).
func TestBigRun(t *testing.T) {
	tally := tallytest.Start(t)
	sum, err := demo.Send(context.Background(), demo.Config{Endpoint: tally.URL, Runs: 1, Seed: 11, Spans: 10000})
	if err != nil {
		t.Fatal(err)
	}
	id := sum.TraceIDs[0]
	code, _, body := get(t, tally.URL+"/api/v1/runs?since=400d", "")
	if code != http.StatusOK {
		t.Fatalf("run list: %d %s", code, body)
	}
	var page query.RunPage
	if err := json.Unmarshal(body, &page); err != nil || len(page.Runs) != 1 || page.Runs[0].TraceID != id {
		t.Fatalf("run list: %v %.300s", err, body)
	}
	code, _, body = get(t, tally.URL+"/api/v1/runs/"+id, "")
	if code != http.StatusOK {
		t.Fatalf("run: %d %.300s", code, body)
	}
	var d query.RunDetail
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	l, g := page.Runs[0], d.Summary
	if l.Spans != 10000 || g.Spans != 10000 {
		t.Errorf("spans: list %d, detail %d; want 10000", l.Spans, g.Spans)
	}
	if l.LLMCalls != g.LLMCalls || l.Usage != g.Usage || math.Abs(l.Cost.Total-g.Cost.Total) > 1e-9 {
		t.Errorf("list and detail disagree:\n list   calls %d usage %+v cost %v\n detail calls %d usage %+v cost %v",
			l.LLMCalls, l.Usage, l.Cost.Total, g.LLMCalls, g.Usage, g.Cost.Total)
	}
	bigRunInParts(t, tally.URL, d)
}

// bigRunInParts reads the run of whole in parts of 500 nodes: the answer
// holds 500 span nodes, and each root's nodes in the answer plus its
// hidden_spans are its whole subtree, so they add up to the run's 10,000
// spans; the landmarks and the figures of every node answered equal the
// whole answer's. Expanding each node that hides children, page by page,
// brings exactly its hidden children. Bad bounds are refused.
func bigRunInParts(t *testing.T, base string, whole query.RunDetail) {
	id := whole.Summary.TraceID
	byID := map[string]*query.SpanNode{}
	var walk func(ns []*query.SpanNode, f func(*query.SpanNode))
	walk = func(ns []*query.SpanNode, f func(*query.SpanNode)) {
		for _, n := range ns {
			f(n)
			walk(n.Children, f)
		}
	}
	walk(whole.Roots, func(n *query.SpanNode) { byID[n.SpanID] = n })
	code, _, body := get(t, base+"/api/v1/runs/"+id+"?max_nodes=500", "")
	if code != http.StatusOK {
		t.Fatalf("run in part: %d %.300s", code, body)
	}
	var part query.RunDetail
	if err := json.Unmarshal(body, &part); err != nil {
		t.Fatal(err)
	}
	if part.Partial == nil || part.Partial.TotalSpans != 10000 || part.Partial.ReturnedSpans != 500 {
		t.Fatalf("partial %+v, want 500 of 10000", part.Partial)
	}
	nodes, total := 0, 0
	var hiders []*query.SpanNode
	for _, r := range part.Roots {
		walk([]*query.SpanNode{r}, func(n *query.SpanNode) {
			nodes++
			if n.HiddenChildren > 0 {
				hiders = append(hiders, n)
			}
			w := byID[n.SpanID]
			if w == nil {
				t.Fatalf("span %s is not in the whole answer", n.SpanID)
			}
			// Every member but the children and what is hidden below: a
			// node answered in part is built from the run's outline and
			// its own whole row, the whole answer from every column.
			if got, want := nodeJSON(t, n), nodeJSON(t, w); got != want {
				t.Fatalf("span %s differs from the whole answer's:\n part  %s\n whole %s", n.SpanID, got, want)
			}
			if len(n.Children)+n.HiddenChildren != len(w.Children) {
				t.Fatalf("span %s: %d children + %d hidden, whole answer %d", n.SpanID, len(n.Children), n.HiddenChildren, len(w.Children))
			}
		})
		total++
		walk(r.Children, func(*query.SpanNode) { total++ })
		total += r.HiddenSpans
	}
	if nodes != 500 || total != 10000 {
		t.Errorf("answer: %d nodes (want 500), roots' subtrees %d spans (want 10000)", nodes, total)
	}
	if got, want := mustJSON(t, part.Summary), mustJSON(t, whole.Summary); got != want {
		t.Errorf("summary in part:\n %s\nwhole:\n %s", got, want)
	}
	if part.CostliestSpanID == "" || part.CostliestSpanID != whole.CostliestSpanID || part.FirstErrorSpanID != whole.FirstErrorSpanID {
		t.Errorf("landmarks %s / %s, whole answer %s / %s", part.CostliestSpanID, part.FirstErrorSpanID, whole.CostliestSpanID, whole.FirstErrorSpanID)
	}
	if len(hiders) == 0 {
		t.Fatal("no node hides children")
	}
	for _, n := range hiders[:min(3, len(hiders))] {
		got := map[string]bool{}
		for off := 0; ; {
			code, _, body := get(t, fmt.Sprintf("%s/api/v1/runs/%s/spans/%s/children?offset=%d&max_nodes=200", base, id, n.SpanID, off), "")
			if code != http.StatusOK {
				t.Fatalf("children: %d %.300s", code, body)
			}
			var page query.ChildrenPart
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			if page.ChildrenTotal != len(byID[n.SpanID].Children) {
				t.Fatalf("children_total %d, want %d", page.ChildrenTotal, len(byID[n.SpanID].Children))
			}
			for _, c := range page.Children {
				got[c.SpanID] = true
			}
			if page.NextOffset == nil {
				break
			}
			off = *page.NextOffset
		}
		for _, c := range n.Children {
			delete(got, c.SpanID)
		}
		if len(got) != n.HiddenChildren {
			t.Errorf("span %s: pages brought %d children not in the answer, want its %d hidden", n.SpanID, len(got), n.HiddenChildren)
		}
	}
	sid := hiders[0].SpanID
	for _, u := range []string{"?max_nodes=0", "?max_nodes=10001", "?max_nodes=x", "?focus=zz",
		"/spans/" + sid + "/children?limit=0", "/spans/" + sid + "/children?offset=-1", "/spans/zz/children"} {
		if code, _, body := get(t, base+"/api/v1/runs/"+id+u, ""); code != http.StatusBadRequest {
			t.Errorf("%s: %d %.200s, want 400", u, code, body)
		}
	}
	if code, _, _ := get(t, base+"/api/v1/runs/"+id+"/spans/00000000000000ff/children", ""); code != http.StatusNotFound {
		t.Errorf("children of a span not in the run: %d, want 404", code)
	}
}

// nodeJSON is a span node's JSON without its children and hidden counts.
func nodeJSON(t *testing.T, n *query.SpanNode) string {
	t.Helper()
	c := *n
	c.Children, c.HiddenChildren, c.HiddenSpans = nil, 0, 0
	return mustJSON(t, &c)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

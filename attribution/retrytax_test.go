package attribution

import (
	"testing"

	"github.com/tallyhq/tally/schema"
)

// fact builds a span of run "t" under parent over [start, end) seconds.
func fact(id, parent, typ string, start, end uint64, opts ...func(*Span)) Span {
	s := Span{Project: "p", TraceID: "t", SpanID: id, ParentSpanID: parent, SpanType: typ, Status: "ok",
		StartNs: start * 1e9, EndNs: end * 1e9, Version: 1}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func tool(name string) func(*Span) { return func(s *Span) { s.ToolName = name } }
func errored(s *Span)              { s.Status = "error" }
func costs(usd float64) func(*Span) {
	return func(s *Span) {
		s.Usage, s.UsageMode, s.Cost = Usage{Input: 100, Output: 10}, schema.UsageInclusive, Cost{Total: usd}
	}
}

func TestRetryTax(t *testing.T) {
	type want struct {
		tax       bool
		tool      string
		toolRetry bool
		toolError bool
	}
	for _, c := range []struct {
		name  string
		spans []Span
		want  map[string]want
	}{
		{"the model call between a failed attempt and its retry is tax, charged to the retried tool",
			[]Span{
				fact("root", "", schema.TypeAgent, 0, 100),
				fact("llm1", "root", schema.TypeInference, 1, 2, costs(0.1)),
				fact("s1", "root", schema.TypeTool, 3, 4, tool("search"), errored),
				fact("llm2", "root", schema.TypeInference, 5, 6, costs(0.2)),
				fact("s2", "root", schema.TypeTool, 7, 8, tool("search")),
				fact("llm3", "root", schema.TypeInference, 9, 10, costs(0.3)),
			},
			map[string]want{
				"llm1": {}, "llm2": {tax: true, tool: "search"}, "llm3": {},
				"s1": {tool: "search", toolError: true}, "s2": {tool: "search", toolRetry: true},
			}},
		{"a model call inside a failed attempt is tax, charged to the enclosing tool",
			[]Span{
				fact("root", "", schema.TypeAgent, 0, 100),
				fact("s1", "root", schema.TypeTool, 1, 5, tool("research"), errored),
				fact("llm1", "s1", schema.TypeInference, 2, 3, costs(0.1)),
			},
			map[string]want{"llm1": {tax: true, tool: "research"}, "s1": {tool: "research", toolError: true}}},
		{"a model call inside the previous attempt of a retry by call id is tax",
			[]Span{
				fact("root", "", schema.TypeAgent, 0, 100),
				fact("s1", "root", schema.TypeTool, 1, 5, tool("fetch"), func(s *Span) { s.ToolCallID = "c1" }),
				fact("llm1", "s1", schema.TypeInference, 2, 3, costs(0.1)),
				fact("s2", "root", schema.TypeTool, 6, 8, tool("fetch"), func(s *Span) { s.ToolCallID = "c1" }),
				fact("llm2", "s2", schema.TypeInference, 6, 7, costs(0.1)),
			},
			map[string]want{"llm1": {tax: true, tool: "fetch"}, "llm2": {tool: "fetch"},
				"s1": {tool: "fetch"}, "s2": {tool: "fetch", toolRetry: true}}},
		{"no failure, no retry: no tax",
			[]Span{
				fact("root", "", schema.TypeAgent, 0, 100),
				fact("s1", "root", schema.TypeTool, 1, 2, tool("search")),
				fact("llm1", "root", schema.TypeInference, 3, 4, costs(0.1)),
				fact("s2", "root", schema.TypeTool, 5, 6, tool("search")),
			},
			map[string]want{"llm1": {}, "s1": {tool: "search"}, "s2": {tool: "search"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]want{}
			for _, a := range Attribute(c.spans) {
				got[a.SpanID] = want{a.RetryTax, a.Tool, a.ToolRetry, a.ToolError}
			}
			for id, w := range c.want {
				if got[id] != w {
					t.Errorf("%s: got %+v, want %+v", id, got[id], w)
				}
			}
		})
	}
}

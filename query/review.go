package query

import (
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// httpStatusAttribute is the semantic conventions' HTTP response status,
// which a tool span making an HTTP call carries.
const httpStatusAttribute = "http.response.status_code"

// reviewSteps sets each tool node's effect class and terminal status and
// returns the run's safety signals. The tree's retry classes must be set
// (classifyRunTools). An outline read keeps tool spans' attributes, so big
// runs are reviewed whole.
func reviewSteps(spans []schema.Span, roots []*SpanNode, effects *safety.Policy) []safety.Signal {
	nodes := map[string]*SpanNode{}
	stack := append([]*SpanNode(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		stack = append(stack, n.Children...)
		if n.Type == schema.TypeTool {
			nodes[n.SpanID] = n
		}
	}
	var steps []safety.Step
	for i := range spans {
		s := &spans[i]
		n := nodes[s.SpanID]
		if n == nil || n.StepStatus != "" {
			continue // not a tool span, or a duplicate delivery
		}
		attr := func(k string) string {
			for j, key := range s.AttrKeys {
				if key == k && j < len(s.AttrValues) {
					return s.AttrValues[j]
				}
			}
			return ""
		}
		n.Effect = effects.Effect(s.Project, s.ToolName, attr(safety.EffectAttribute))
		n.StepStatus = safety.StepStatus(safety.StepFacts{Error: s.Status == "error", ErrorType: s.ErrorType,
			Message: s.StatusMessage, HTTPStatus: attr(httpStatusAttribute), Declared: attr(safety.StatusAttribute)})
		steps = append(steps, safety.Step{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Tool: s.ToolName, Effect: n.Effect,
			Status: n.StepStatus, Retry: n.RetryClass.Retry(), CallID: s.ToolCallID, StepID: s.StepID, ArgsHash: s.ArgsHash,
			StartNs: s.StartNs})
	}
	return safety.Signals(steps)
}

package attribution

import "github.com/tallyhq/tally/schema"

// Retry tax is the cost of the inference calls a run spent on tool-call
// attempts that did not stick: what the run paid because a tool failed or had
// to be called again. It is computed per run, from what the spans show:
//
//  1. A tool span is a retry as ClassifyRetries decides (docs/design.md's rules:
//     attempt ≥ 2, a repeated call id, a repeated step id, or the previous
//     sibling call of the same tool ended in error). Its previous attempt is
//     the latest earlier tool span of the run with the same call id, else the
//     same step id, else the same parent and tool, following the rule that
//     matched.
//  2. A tool span is a wasted attempt when it ended in error, or when it is
//     the previous attempt of a retry.
//  3. An inference span is retry tax when
//     a. it is a descendant of a wasted attempt (a tool that calls a model,
//     or an agent used as a tool, spent it inside the attempt that failed),
//     or
//     b. it is a child of a retry's parent and started after the previous
//     attempt ended and before the retry started, when both attempts share
//     that parent (the model call that read the failure and issued the
//     call again).
//
// Each inference span is counted at most once, at its own cost (cost_total),
// attributed to its own agent and, for the tool dimension, to the tool of the
// attempt (3a: the enclosing tool; 3b: the retried tool). Retries that leave
// no separate span (an SDK retrying inside one span) are invisible here, as
// they are to every other figure.

// chargeRetryTax classifies the run's tool spans (with ClassifyRetries, the
// same rules as the tool statistics) and marks retry-tax spans. run is in
// start order; byID indexes it by span id.
func chargeRetryTax(run []Attributed, byID map[string]int) {
	var calls []ToolCall
	var index []int // run index of each call
	for i := range run {
		s := &run[i]
		if s.SpanType != schema.TypeTool {
			continue
		}
		s.ToolError = s.Status == schema.StatusError
		calls = append(calls, ToolCall{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
			Tool: s.ToolName, CallID: s.ToolCallID, StepID: s.StepID, Error: s.ToolError,
			StartNs: s.StartNs, DurationNs: s.EndNs - min(s.StartNs, s.EndNs), Attempt: s.Attempt})
		index = append(index, i)
	}
	if len(calls) == 0 {
		return
	}
	classes := ClassifyRetries(calls)

	type retryPair struct{ prev, retry int }
	var pairs []retryPair
	wasted := map[int]bool{}
	lastByCall := map[string]int{}
	lastByStep := map[string]int{}
	lastSibling := map[siblingKey]int{}
	for ci, i := range index { // calls are in run (start) order
		s := &run[i]
		key := siblingKey{s.ParentSpanID, s.ToolName}
		byCall, hasCall := lastByCall[s.ToolCallID]
		hasCall = hasCall && s.ToolCallID != ""
		byStep, hasStep := lastByStep[s.StepID]
		hasStep = hasStep && s.StepID != ""
		sib, hasSib := lastSibling[key]
		prev := -1
		switch classes[ci] {
		case ClassRetryAttempt, ClassRetryCallID, ClassRetryStep, ClassRetryAfterError:
			s.ToolRetry = true
			switch {
			case classes[ci] == ClassRetryCallID || (classes[ci] == ClassRetryAttempt && hasCall):
				prev = byCall
			case classes[ci] == ClassRetryStep || (classes[ci] == ClassRetryAttempt && hasStep):
				prev = byStep
			case hasSib:
				prev = sib
			}
		}
		if prev >= 0 {
			wasted[prev] = true
			pairs = append(pairs, retryPair{prev, i})
		}
		if s.ToolError {
			wasted[i] = true
		}
		if s.ToolCallID != "" {
			lastByCall[s.ToolCallID] = i
		}
		if s.StepID != "" {
			lastByStep[s.StepID] = i
		}
		lastSibling[key] = i
	}
	if len(wasted) == 0 {
		return
	}

	// 3a: inference spans below a wasted attempt, charged to the nearest
	// wasted ancestor's tool (already their Tool: the nearest enclosing tool
	// span is at or below that ancestor, and charging the inner tool is the
	// more precise answer).
	for i := range run {
		s := &run[i]
		if s.SpanType != schema.TypeInference {
			continue
		}
		seen := 0
		for p, ok := byID[s.ParentSpanID]; ok && seen <= len(run); p, ok = byID[run[p].ParentSpanID] {
			if wasted[p] {
				s.RetryTax = true
				break
			}
			seen++
		}
	}
	// 3b: inference siblings between a wasted attempt and its retry.
	for _, pr := range pairs {
		prev, retry := &run[pr.prev], &run[pr.retry]
		if prev.ParentSpanID != retry.ParentSpanID {
			continue
		}
		for i := range run {
			s := &run[i]
			if s.SpanType != schema.TypeInference || s.RetryTax || s.ParentSpanID != retry.ParentSpanID {
				continue
			}
			if s.StartNs >= prev.EndNs && s.StartNs < retry.StartNs {
				s.RetryTax = true
				if s.Tool == "" {
					s.Tool = retry.ToolName
				}
			}
		}
	}
}

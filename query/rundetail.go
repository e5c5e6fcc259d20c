package query

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/schema"
)

// RunDetail is one run: its summary and its span tree.
type RunDetail struct {
	Summary RunSummary  `json:"summary"`
	Roots   []*SpanNode `json:"roots"`
	// Truncated is set when the tree holds only the run's earliest spans
	// (see RunWithin).
	Truncated *Truncation `json:"truncated,omitempty"`
	// Partial is set when the tree holds a part of the run's spans, chosen
	// by RunTree: the nodes with HiddenSpans have more below them.
	Partial *Partial `json:"partial,omitempty"`
	// CostliestSpanID is the span whose own cost counts most in the run's
	// total; FirstErrorSpanID the earliest span that ended in error. Both
	// are in every answer, a partial one included.
	CostliestSpanID string `json:"costliest_span_id,omitempty"`
	// CostConfidence lists the rules that rated the cost of the run's
	// counted spans other than exact (ingest.ConfidenceRules): why
	// Summary.CostConfidence is what it is.
	CostConfidence   []ingest.Confidence `json:"cost_confidence_rules,omitempty"`
	FirstErrorSpanID string              `json:"first_error_span_id,omitempty"`
}

// Truncation says that a run's answer holds only its earliest spans.
type Truncation struct {
	TotalSpans    int `json:"total_spans"`
	ReturnedSpans int `json:"returned_spans"`
}

// RunWithin is Run holding at most maxSpans spans (0: no bound), so that
// one request for a huge run cannot take the server's memory. A run with
// more spans answers its earliest maxSpans as the tree, with Truncated set;
// its summary (spans, tokens, cost, errors) still covers the whole run,
// computed by ClickHouse, while retries are classified and the counted
// flags set within the returned spans only.
func (r TreeReader) RunWithin(ctx context.Context, project, traceID string, maxSpans int) (*RunDetail, error) {
	spans, more, err := r.spans(ctx, project, traceID, maxSpans)
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return nil, ErrNotFound
	}
	d := runDetail(spans)
	if more {
		if err := r.summarizeWhole(ctx, project, traceID, d, spans); err != nil {
			return nil, err
		}
	}
	if err := r.reviewDetail(ctx, project, d, spans); err != nil {
		return nil, err
	}
	return d, nil
}

// summarizeWhole replaces the summary of d, built from the earliest spans
// of a run that has more, by the whole run's, computed by ClickHouse, and
// marks d truncated.
func (r *core) summarizeWhole(ctx context.Context, project, traceID string, d *RunDetail, spans []schema.Span) error {
	q, args := summarizeWholeSQL(r.store, project, traceID, spans[0].Start)
	var rr runRow
	if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(rr.dest()...); err != nil {
		return fmt.Errorf("summarize run %s: %w", traceID, err)
	}
	d.Summary = rr.summary()
	d.Truncated = &Truncation{TotalSpans: d.Summary.Spans, ReturnedSpans: len(spans)}
	return nil
}

// summarizeWholeSQL builds summarizeWhole's statement: the run's summary
// (runColumns) over its spans starting from start, its first span's.
func summarizeWholeSQL(t tables, project, traceID string, start time.Time) (string, []any) {
	return runSummarySQL(t, runSelection{where: []string{"project = ?", "trace_id = ?", "start >= ?"},
		whereArgs: []any{project, strings.ToLower(traceID), start}})
}

// Run loads one run's summary and span tree.
func (r TreeReader) Run(ctx context.Context, project, traceID string) (*RunDetail, error) {
	return r.RunWithin(ctx, project, traceID, 0)
}

// runDetail builds a run's tree and summary from its spans; the safety
// review is applied after (reviewDetail), since it reads more than spans.
func runDetail(spans []schema.Span) *RunDetail {
	roots := BuildTree(spans)
	summary, counted := summarize(spans)
	stack := append([]*SpanNode(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n.Counted = counted[n.SpanID]
		stack = append(stack, n.Children...)
	}
	sumSubtrees(roots)
	retries, repeats := classifyRunTools(spans, roots)
	summary.ToolRetries, summary.ToolRepeats = &retries, &repeats
	d := &RunDetail{Summary: summary, Roots: roots}
	d.CostliestSpanID, d.FirstErrorSpanID = landmarks(roots)
	d.CostConfidence = confidenceRules(spans, counted)
	return d
}

// confidenceRules are the confidence rules named on the spans whose cost
// counts (the rule attribute, ingest.AttrCostConfidenceRule), once each, in
// the order first met, with their reasons.
func confidenceRules(spans []schema.Span, counted map[string]bool) []ingest.Confidence {
	var out []ingest.Confidence
	seen := map[string]bool{}
	for i := range spans {
		s := &spans[i]
		if s.CostConfidence == "" || s.CostConfidence == schema.ConfidenceExact || !attribution.CostCounts(counted[s.SpanID], s.UsageMode) {
			continue
		}
		for k, key := range s.AttrKeys {
			if key != ingest.AttrCostConfidenceRule || k >= len(s.AttrValues) {
				continue
			}
			for _, name := range strings.Split(s.AttrValues[k], "; ") {
				if seen[name] {
					continue
				}
				seen[name] = true
				if r, ok := ingest.ConfidenceRuleNamed(name); ok {
					out = append(out, r.Describe())
				}
			}
		}
	}
	return out
}

// landmarks finds the span whose own cost counts most in the run's total
// (the earliest of equals) and the earliest span that ended in error.
func landmarks(roots []*SpanNode) (costliest, firstError string) {
	var top, firstErr *SpanNode
	stack := append([]*SpanNode(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		stack = append(stack, n.Children...)
		if n.Cost != nil && n.Cost.Total > 0 && attribution.CostCounts(n.Counted, n.UsageMode) &&
			(top == nil || n.Cost.Total > top.Cost.Total || n.Cost.Total == top.Cost.Total && earlier(n, top)) {
			top = n
		}
		if n.Status == schema.StatusError && (firstErr == nil || earlier(n, firstErr)) {
			firstErr = n
		}
	}
	if top != nil {
		costliest = top.SpanID
	}
	if firstErr != nil {
		firstError = firstErr.SpanID
	}
	return costliest, firstError
}

// earlier orders spans by start, then span id.
func earlier(a, b *SpanNode) bool {
	if !a.Start.Equal(b.Start) {
		return a.Start.Before(b.Start)
	}
	return a.SpanID < b.SpanID
}

// classifyRunTools marks each tool span of a run tree with its retry class
// and counts retries and repeats.
func classifyRunTools(spans []schema.Span, roots []*SpanNode) (retries, repeats int) {
	bySpan, retries, repeats := runToolClasses(spans)
	stack := append([]*SpanNode(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c, ok := bySpan[n.SpanID]; ok {
			n.RetryClass = c
		}
		stack = append(stack, n.Children...)
	}
	return retries, repeats
}

// runToolClasses classifies the tool calls of a run's spans (each span
// once): each call's retry class by span id, and the retries and repeats.
func runToolClasses(spans []schema.Span) (bySpan map[string]attribution.Class, retries, repeats int) {
	var calls []attribution.ToolCall
	seen := map[string]bool{}
	for i := range spans {
		s := &spans[i]
		if s.SpanType != schema.TypeTool || seen[s.SpanID] {
			continue
		}
		seen[s.SpanID] = true
		calls = append(calls, attribution.ToolCall{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
			Tool: s.ToolName, CallID: s.ToolCallID, StepID: s.StepID, ArgsHash: s.ArgsHash,
			Error: s.Status == schema.StatusError, StartNs: s.StartNs, DurationNs: s.DurationNs, Attempt: s.Attempt})
	}
	classes := attribution.ClassifyRetries(calls)
	bySpan = make(map[string]attribution.Class, len(calls))
	for i, c := range classes {
		bySpan[calls[i].SpanID] = c
		switch {
		case c.Retry():
			retries++
		case c == attribution.ClassRepeat:
			repeats++
		}
	}
	return bySpan, retries, repeats
}

// summarize computes a run's summary from its spans with the same rules as
// the run list (see attribution/counted.go: each call counted once,
// aggregated usage only when no inference span carries any), and which
// spans (by id) count.
func summarize(spans []schema.Span) (RunSummary, map[string]bool) {
	rr, counted := summarizeRow(spans)
	return rr.summary(), counted
}

// summarizeRow is summarize's figures as the run list's aggregation
// (runAggregates) has them, before they become a summary: what a live
// run's place in a list and its filters are computed from (livesummary.go).
func summarizeRow(spans []schema.Span) (runRow, map[string]bool) {
	seen := make(map[string]bool, len(spans))
	var rr runRow
	rr.StartNs = ^uint64(0)
	var rootStart, firstStart uint64 = ^uint64(0), ^uint64(0)
	// The outcome (runRow.RunErr): the earliest root's status, or without a
	// root whether a span ending last errored (run_err in runAggregates).
	hasRoot, rootErr := false, false
	var errEnd uint64
	agents, models := map[string]bool{}, map[string]bool{}
	uniq := make([]*schema.Span, 0, len(spans))
	us := make([]attribution.UsageSpan, 0, len(spans))
	for i := range spans {
		s := &spans[i]
		if seen[s.SpanID] {
			continue
		}
		seen[s.SpanID] = true
		if rr.TraceID == "" {
			rr.TraceID = s.TraceID
		}
		if s.ParentSpanID == "" && s.StartNs < rootStart {
			rootStart, rr.RootName = s.StartNs, s.Name
			hasRoot, rootErr = true, s.Status == schema.StatusError
		}
		if s.StartNs < firstStart {
			firstStart, rr.FirstName, rr.Service = s.StartNs, s.Name, s.Service
		}
		if rr.Task == "" && s.TaskName != "" {
			rr.Task = s.TaskName
		}
		if s.AgentName != "" {
			agents[s.AgentName] = true
		}
		if s.Model != "" && s.SpanType == schema.TypeInference {
			models[s.Model] = true
		}
		if rr.Conv == "" {
			rr.Conv = s.ConversationID
		}
		if rr.User == "" {
			rr.User = s.UserID
		}
		rr.StartNs = min(rr.StartNs, s.StartNs)
		rr.EndNs = max(rr.EndNs, s.EndNs)
		rr.Spans++
		switch s.SpanType {
		case schema.TypeInference:
			rr.LLM++
		case schema.TypeTool:
			rr.Tool++
		}
		if s.Status == schema.StatusError {
			rr.Err++
			errEnd = max(errEnd, s.EndNs)
		}
		if s.CostSource == schema.CostUnpriced && s.UsageMode != schema.UsageAggregated {
			rr.Unpriced++
		}
		if s.UsageUnreconciled == 1 {
			rr.Unrec++
		}
		uniq = append(uniq, s)
		us = append(us, attribution.UsageSpan{ID: s.SpanID, ParentID: s.ParentSpanID, SpanType: s.SpanType, UsageMode: s.UsageMode, Record: s.UsageRecord == 1,
			StartNs: s.StartNs, EndNs: s.EndNs, Input: s.InputTokens, CacheRead: s.CacheReadTokens,
			CacheWrite: s.CacheWriteTokens, Output: s.OutputTokens})
	}
	if rootErr || !hasRoot && rr.Err > 0 && errEnd == rr.EndNs {
		rr.RunErr = 1
	}
	counted, fromAgg := attribution.CountedUsage(us)
	if fromAgg {
		rr.FromAgg = 1
	}
	for _, r := range attribution.RecordedCalls(us) {
		if r {
			rr.LLM-- // a record of another span's call: one call, counted once
		}
	}
	byID := make(map[string]bool, len(uniq))
	for i, s := range uniq {
		byID[s.SpanID] = counted[i]
		if s.SpanType == schema.TypeInference && attribution.HasOwnUsage(s.UsageMode) && !counted[i] {
			rr.LLM-- // a wrapper of another span's call: one call, counted once
		}
		if counted[i] {
			if attribution.HasOwnUsage(s.UsageMode) {
				rr.NUsage++
			}
			rr.In += s.InputTokens
			rr.CR += s.CacheReadTokens
			rr.CW += s.CacheWriteTokens
			rr.Out += s.OutputTokens
			rr.RS += s.ReasoningTokens
		}
		if attribution.CostCounts(counted[i], s.UsageMode) {
			rr.Conf.Add(s.CostConfidence, s.CostTotal)
			rr.CTotal += s.CostTotal
			rr.CIn += s.CostInput
			rr.CCR += s.CostCacheRead
			rr.CCW += s.CostCacheWrite
			rr.COut += s.CostOutput
		}
	}
	rr.Agents, rr.Models = sortedKeys(agents), sortedKeys(models)
	return rr, byID
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func decodeObject(s string) map[string]any {
	if s == "" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		return map[string]any{"raw": s}
	}
	return m
}

package query

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
	"golang.org/x/sync/errgroup"
)

// httpStatusAttribute is the semantic conventions' HTTP response status,
// which a tool span making an HTTP call carries.
const httpStatusAttribute = "http.response.status_code"

// reviewAttrs are the span attributes the review reads (besides
// OpenInference's llm.tools.* on inference spans).
var reviewAttrs = []string{safety.EffectAttribute, safety.StatusAttribute, httpStatusAttribute,
	safety.ApprovalDecisionAttribute, safety.ApprovalByAttribute, safety.ApprovalToolAttribute, safety.IncompleteAttribute,
	safety.GuardrailTriggeredAttribute, safety.GuardrailNameAttribute, safety.OIGuardrailTriggeredAttribute, safety.OISpanKindAttribute,
	deferralAttribute, ingest.AttrCostConfidenceRule}

// deferralAttribute is pydantic-ai's record of a tool call deferred
// (ApprovalRequired: handed to a human; pydantic_ai/_instrumentation.py).
const deferralAttribute = "pydantic_ai.tool.deferral.name"

// runReview is one run's review: what it read and what it found.
type runReview struct {
	run     safety.Run
	signals []safety.Signal
}

// reviewConfig is the review's configuration under the reader's options.
func (r *core) reviewConfig() safety.Config {
	return safety.Config{Effects: r.effects, Registry: r.registry, Limits: r.limits, Caps: r.caps, Validator: r.validator}
}

// reviewChunk is how many runs one review read names. A chunk's spans and
// content are held while it is reviewed (about 50 KB a run on agent
// traffic), so it bounds the review's memory, whatever the number of runs.
const reviewChunk = 250

// reviewRuns reviews runs (a chunk at a time): it reads their tool and
// inference spans, roots, approvals and partial results (reviewSpans) and
// the tool arguments and definitions they recorded (reviewContent), runs
// package safety's review on each and hands it to each, in the order of
// runs. Runs with no spans read are reviewed empty. A review is not kept
// after each returns, so only one chunk is in memory at a time.
func (r *core) reviewRuns(ctx context.Context, project string, runs []RunSummary, each func(run *RunSummary, rv *runReview)) error {
	cfg := r.reviewConfig()
	for start := 0; start < len(runs); start += reviewChunk {
		chunk := runs[start:min(start+reviewChunk, len(runs))]
		ids, lo, hi := runsExtent(len(chunk), func(i int) *RunSummary { return &chunk[i] })
		spans, err := r.reviewSpans(ctx, project, ids, lo, hi)
		if err != nil {
			return err
		}
		content, err := r.reviewContent(ctx, project, ids, lo, hi, false)
		if err != nil {
			return err
		}
		for i := range chunk {
			sum := &chunk[i]
			run := buildReview(project, sum, spans[sum.TraceID], content, r.effects)
			each(sum, &runReview{run: run, signals: safety.Review(run, cfg)})
		}
	}
	return nil
}

// reviewSpans reads the spans a review needs of runs, by trace id in start
// order: tool and inference spans, roots, and spans carrying an approval,
// a partial result or a framework's limit error; with only the attributes
// and events the review reads.
func (r *core) reviewSpans(ctx context.Context, project string, ids []string, lo, hi time.Time) (map[string][]schema.Span, error) {
	q, args := reviewSpansSQL(r.store, project, ids, lo, hi)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read spans to review: %w", err)
	}
	spans, err := scanAll(rows, func(s *schema.Span) []any {
		return []any{&s.TraceID, &s.SpanID, &s.ParentSpanID, &s.SpanType, &s.Name, &s.Operation, &s.ToolName, &s.ToolCallID, &s.StepID, &s.ArgsHash,
			&s.Status, &s.ErrorType, &s.StatusMessage, &s.StartNs, &s.DurationNs, &s.Attempt, &s.InputTokens, &s.OutputTokens,
			&s.CostTotal, &s.AttrKeys, &s.AttrValues, &s.EventNames, &s.EventTimeNs, &s.EventAttrs}
	})
	if err != nil {
		return nil, fmt.Errorf("read spans to review: %w", err)
	}
	out := map[string][]schema.Span{}
	for _, s := range spans {
		out[s.TraceID] = append(out[s.TraceID], s)
	}
	return out, nil
}

// reviewSpansSQL builds reviewSpans' statement: the spans of the runs ids
// whose spans start in [lo, hi] that a review reads, with only the
// attributes and events it reads. The runs' key is a PREWHERE: with FINAL,
// 18.16 does not move a WHERE there itself, and read the wide columns of
// every row of the granules the key found (the review of ~100 runs in
// flight on a 100M-density store: 260 ms, 24 ms so).
func reviewSpansSQL(t tables, project string, ids []string, lo, hi time.Time) (string, []any) {
	set := traceSet(ids)
	keep := "(has(['" + strings.Join(reviewAttrs, "', '") + "'], k) OR (span_type = 'inference' AND k LIKE 'llm.tools.%'))"
	limitErrors := make([]string, 0, len(safety.IncompleteErrors))
	for e := range safety.IncompleteErrors {
		limitErrors = append(limitErrors, e)
	}
	slices.Sort(limitErrors)
	approvalEvent := "has(event_names, '" + safety.ApprovalEvent + "')"
	guardrail := "operation = '" + safety.GuardrailOperation + "' OR has(attr_keys, '" + safety.GuardrailTriggeredAttribute +
		"') OR has(attr_keys, '" + safety.OIGuardrailTriggeredAttribute + "') OR attr_values[indexOf(attr_keys, '" +
		safety.OISpanKindAttribute + "')] IN ('GUARDRAIL', 'guardrail')"
	q := "SELECT trace_id, span_id, parent_span_id, span_type, name, operation, tool_name, tool_call_id, step_id, args_hash, status, error_type, " +
		"status_message, start_ns, duration_ns, attempt, input_tokens, output_tokens, cost_total, " +
		"arrayFilter(k -> " + keep + ", attr_keys), arrayFilter((v, k) -> " + keep + ", attr_values, attr_keys), " +
		"if(" + approvalEvent + ", event_names, emptyArrayString()), if(" + approvalEvent + ", event_time_ns, emptyArrayUInt64()), if(" + approvalEvent + ", event_attrs, emptyArrayString())\nFROM " +
		final(t.Table(schema.TableSpans)) + "\nPREWHERE project = ? AND trace_id IN ?\nWHERE start >= ? AND start <= ?" +
		" AND (span_type IN ('tool', 'inference') OR parent_span_id = '' OR has(attr_keys, '" + safety.ApprovalDecisionAttribute + "')" +
		" OR has(attr_keys, '" + safety.IncompleteAttribute + "') OR " + approvalEvent + " OR error_type IN ('" + strings.Join(limitErrors, "', '") + "')" +
		" OR " + guardrail + ")" +
		"\nORDER BY trace_id, start_ns, span_id"
	return q, []any{project, set, lo.UTC().Truncate(time.Second), hi.UTC()}
}

// reviewedContent is what runs' spans recorded of tool calls: each tool
// span's arguments ("" when withheld) and each inference span's offered
// tools.
type reviewedContent struct {
	args    map[string]string       // span id → arguments
	offered map[string]safety.Tools // span id → tools
}

// reviewContent reads runs' recorded tool arguments and tool definitions.
// Arguments truncated at ingest, redacted or hashed by privacy rules are
// withheld: they cannot be checked. Definitions repeat on every call of a
// run (the same tools offered each turn), so each span reads only their
// hash, each distinct text is read and parsed once, and spans offered the
// same text share one parsed value.
func (r *core) reviewContent(ctx context.Context, project string, ids []string, lo, hi time.Time, latest bool) (*reviewedContent, error) {
	q, args := reviewContentSQL(r.store, project, ids, lo, hi, latest)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read tool content to review: %w", err)
	}
	c := &reviewedContent{args: map[string]string{}, offered: map[string]safety.Tools{}}
	defsOf := map[string][]uint64{} // span id → hashes of its definitions, in order read
	for rows.Next() {
		var spanID, kind, value string
		var hash uint64
		var truncated uint8
		if err := rows.Scan(&spanID, &kind, &value, &hash, &truncated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read tool content to review: %w", err)
		}
		switch kind {
		case schema.ContentToolArguments:
			if _, seen := c.args[spanID]; seen {
				continue
			}
			if truncated != 0 || value == ingest.RedactedValue || strings.HasPrefix(value, ingest.HashPrefix) {
				value = ""
			}
			c.args[spanID] = value
		case schema.ContentToolDefinitions:
			if truncated == 0 {
				defsOf[spanID] = append(defsOf[spanID], hash)
			}
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("read tool content to review: %w", err)
	}
	if len(defsOf) == 0 {
		return c, nil
	}
	dq, dargs := reviewDefinitionsSQL(r.store, project, ids, lo, hi)
	drows, err := r.store.Conn().Query(ctx, dq, dargs...)
	if err != nil {
		return nil, fmt.Errorf("read tool definitions to review: %w", err)
	}
	parsed := map[uint64]safety.Tools{}
	for drows.Next() {
		var h uint64
		var value string
		if err := drows.Scan(&h, &value); err != nil {
			drows.Close()
			return nil, fmt.Errorf("read tool definitions to review: %w", err)
		}
		if tools := (safety.Tools{}); tools.AddDefinitions(value) {
			parsed[h] = tools
		}
	}
	err = drows.Err()
	drows.Close()
	if err != nil {
		return nil, fmt.Errorf("read tool definitions to review: %w", err)
	}
	for spanID, hashes := range defsOf {
		var tools safety.Tools
		for _, h := range hashes {
			p, ok := parsed[h]
			switch {
			case !ok:
			case tools == nil:
				tools = p // shared: read-only from here on
			default:
				merged := maps.Clone(tools)
				maps.Copy(merged, p)
				tools = merged
			}
		}
		if tools != nil {
			c.offered[spanID] = tools
		}
	}
	return c, nil
}

// reviewContentSQL builds reviewContent's first statement: the tool
// arguments the runs ids recorded, and the hashes of their tool
// definitions, per span.
//
// latest (a single run's read on a modern server: see latestRunRows) picks
// each row's newest version with latestOf instead of FINAL.
func reviewContentSQL(t tables, project string, ids []string, lo, hi time.Time, latest bool) (string, []any) {
	args := []any{schema.ContentToolArguments, schema.ContentToolDefinitions, project, traceSet(ids), lo.UTC().Truncate(time.Second), hi.UTC(),
		schema.ContentToolArguments, schema.ContentToolDefinitions}
	const where = " PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? WHERE kind IN (?, ?) "
	const list = "SELECT span_id, kind, if(kind = ?, value, ''), if(kind = ?, cityHash64(value), 0), truncated FROM "
	if latest {
		return list + "(SELECT span_id, kind, source_key, value, truncated FROM " + t.Table(schema.TableContent) + where +
			latestOf("trace_id, span_id, kind, source_key") + ") ORDER BY span_id, source_key", args
	}
	return list + final(t.Table(schema.TableContent)) + where + "ORDER BY span_id, source_key", args
}

// reviewDefinitionsSQL builds reviewContent's second statement: each
// distinct tool definition text the runs ids recorded whole, once, by its
// hash. A copy of a row cannot change what it answers (a hash's text is
// the same in every copy; a hash only an older version has is never looked
// up), so it reads without FINAL.
func reviewDefinitionsSQL(t tables, project string, ids []string, lo, hi time.Time) (string, []any) {
	q := "SELECT cityHash64(value) AS h, any(value) FROM " + t.Table(schema.TableContent) +
		" PREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ? WHERE kind = ? AND truncated = 0 GROUP BY h"
	return q, []any{project, traceSet(ids), lo.UTC().Truncate(time.Second), hi.UTC(), schema.ContentToolDefinitions}
}

// spanAttr looks up a span's attributes by key ("" when absent), as the
// safety review's readers take them.
func spanAttr(s *schema.Span) func(string) string {
	return func(k string) string {
		for j, key := range s.AttrKeys {
			if key == k && j < len(s.AttrValues) {
				return s.AttrValues[j]
			}
		}
		return ""
	}
}

// buildReview assembles one run's review input from its summary, the
// spans reviewSpans read and the recorded content.
func buildReview(project string, sum *RunSummary, spans []schema.Span, content *reviewedContent, effects *safety.Policy) safety.Run {
	run := safety.Run{Project: project, Task: sum.Task, Agents: sum.Agents, Iterations: sum.LLMCalls, Tokens: sum.Usage.Input + sum.Usage.Output,
		CostUSD: sum.Cost.Total, StartNs: uint64(sum.Start.UnixNano()), EndNs: uint64(sum.End.UnixNano())}
	// Guardrails first: a tripped one under a tool step denies it.
	tripped := map[string]bool{}
	seen := map[string]bool{}
	for i := range spans {
		s := &spans[i]
		if seen[s.SpanID] {
			continue
		}
		seen[s.SpanID] = true
		if g, ok := safety.GuardrailOf(s.SpanID, s.ParentSpanID, s.Name, s.Operation, spanAttr(s)); ok {
			run.Guardrails = append(run.Guardrails, g)
			if g.Triggered != nil && *g.Triggered {
				tripped[g.ParentSpanID] = true
			}
		}
	}
	seen = map[string]bool{}
	var calls []attribution.ToolCall
	for i := range spans {
		s := &spans[i]
		if seen[s.SpanID] {
			continue
		}
		seen[s.SpanID] = true
		attr := spanAttr(s)
		end := s.StartNs + s.DurationNs
		if s.ParentSpanID == "" && run.RootSpanID == "" {
			run.RootSpanID = s.SpanID
		}
		switch s.SpanType {
		case schema.TypeTool:
			run.Steps = append(run.Steps, safety.Step{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Tool: s.ToolName,
				Effect: effects.Effect(project, s.ToolName, attr(safety.EffectAttribute)),
				Status: safety.StepStatus(safety.StepFacts{Error: s.Status == schema.StatusError, ErrorType: s.ErrorType,
					Message: s.StatusMessage, HTTPStatus: attr(httpStatusAttribute), Declared: attr(safety.StatusAttribute),
					Deferral: attr(deferralAttribute), GuardrailTriggered: tripped[s.SpanID] || strings.EqualFold(attr(safety.GuardrailTriggeredAttribute), "true")}),
				CallID: s.ToolCallID, StepID: s.StepID, ArgsHash: s.ArgsHash, StartNs: s.StartNs, EndNs: end,
				Args: content.args[s.SpanID]})
			calls = append(calls, attribution.ToolCall{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
				Tool: s.ToolName, CallID: s.ToolCallID, StepID: s.StepID, ArgsHash: s.ArgsHash,
				Error: s.Status == schema.StatusError, StartNs: s.StartNs, DurationNs: s.DurationNs, Attempt: s.Attempt})
		case schema.TypeInference:
			offered := content.offered[s.SpanID] // shared between spans: not changed here
			unreadable := false
			var fromAttrs safety.Tools
			for j, k := range s.AttrKeys {
				if strings.HasPrefix(k, "llm.tools.") && j < len(s.AttrValues) {
					if fromAttrs == nil {
						fromAttrs = safety.Tools{}
					}
					// A definition cut at ingest's attribute limit, redacted
					// or hashed hides a tool: the offer is then not known.
					if !fromAttrs.AddDefinitions(s.AttrValues[j]) {
						unreadable = true
					}
				}
			}
			if fromAttrs != nil {
				merged := maps.Clone(offered)
				if merged == nil {
					merged = safety.Tools{}
				}
				maps.Copy(merged, fromAttrs)
				offered = merged
			}
			if len(offered) == 0 || unreadable {
				offered = nil
			}
			run.Calls = append(run.Calls, safety.Call{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, StartNs: s.StartNs, EndNs: end,
				Tokens: s.InputTokens + s.OutputTokens, CostUSD: s.CostTotal, Offered: offered})
		}
		run.Approvals = append(run.Approvals, spanApprovals(s, attr)...)
		if v := attr(safety.IncompleteAttribute); v != "" {
			run.Incomplete = append(run.Incomplete, safety.Incomplete{SpanID: s.SpanID, StartNs: s.StartNs, Reason: v})
		} else if v := safety.IncompleteErrors[s.ErrorType]; v != "" {
			run.Incomplete = append(run.Incomplete, safety.Incomplete{SpanID: s.SpanID, StartNs: s.StartNs, Reason: v + " (" + s.ErrorType + ")"})
		}
	}
	classes := attribution.ClassifyRetries(calls)
	for i := range run.Steps {
		run.Steps[i].Retry = classes[i].Retry()
	}
	return run
}

// spanApprovals are the approvals a span records: itself, when it carries
// a decision (asked at its start, decided at its end), and its
// tally.approval events.
func spanApprovals(s *schema.Span, attr func(string) string) []safety.Approval {
	var out []safety.Approval
	if d, ok := safety.ParseDecision(attr(safety.ApprovalDecisionAttribute)); ok {
		a := safety.Approval{SpanID: s.SpanID, Decision: d, By: attr(safety.ApprovalByAttribute),
			Tool: attr(safety.ApprovalToolAttribute), RequestedNs: s.StartNs, DecidedNs: s.StartNs + s.DurationNs}
		if d == safety.DecisionPending {
			a.DecidedNs = 0
		}
		out = append(out, a)
	}
	for j, name := range s.EventNames {
		if name != safety.ApprovalEvent || j >= len(s.EventTimeNs) || j >= len(s.EventAttrs) {
			continue
		}
		if a, ok := approvalEvent(s.SpanID, s.EventTimeNs[j], s.EventAttrs[j]); ok {
			out = append(out, a)
		}
	}
	return out
}

// runApprovals reads only the approvals of runs, by trace id: what caps
// need of them (their waits), without the rest of the review's reads.
func (r *core) runApprovals(ctx context.Context, project string, runs []RunSummary) (map[string][]safety.Approval, error) {
	out := map[string][]safety.Approval{}
	for start := 0; start < len(runs); start += outcomeChunk {
		chunk := runs[start:min(start+outcomeChunk, len(runs))]
		ids, lo, hi := runsExtent(len(chunk), func(i int) *RunSummary { return &chunk[i] })
		q, args := runApprovalsSQL(r.store, project, ids, lo, hi)
		rows, err := r.store.Conn().Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("read approvals: %w", err)
		}
		spans, err := scanAll(rows, func(s *schema.Span) []any {
			return []any{&s.TraceID, &s.SpanID, &s.StartNs, &s.DurationNs, &s.AttrKeys, &s.AttrValues, &s.EventNames, &s.EventTimeNs, &s.EventAttrs}
		})
		if err != nil {
			return nil, fmt.Errorf("read approvals: %w", err)
		}
		for i := range spans {
			s := &spans[i]
			out[s.TraceID] = append(out[s.TraceID], spanApprovals(s, spanAttr(s))...)
		}
	}
	return out, nil
}

// runApprovalsSQL builds runApprovals' statement for the runs ids, whose
// spans start in [lo, hi]: the spans carrying a decision or an approval
// event, with only the approval attributes.
func runApprovalsSQL(t tables, project string, ids []string, lo, hi time.Time) (string, []any) {
	approvalAttrs := []string{safety.ApprovalDecisionAttribute, safety.ApprovalByAttribute, safety.ApprovalToolAttribute}
	keep := "has(['" + strings.Join(approvalAttrs, "', '") + "'], k)"
	event := "has(event_names, '" + safety.ApprovalEvent + "')"
	q := "SELECT trace_id, span_id, start_ns, duration_ns, arrayFilter(k -> " + keep + ", attr_keys), " +
		"arrayFilter((v, k) -> " + keep + ", attr_values, attr_keys), if(" + event + ", event_names, emptyArrayString()), " +
		"if(" + event + ", event_time_ns, emptyArrayUInt64()), if(" + event + ", event_attrs, emptyArrayString())\nFROM " +
		final(t.Table(schema.TableSpans)) + "\nPREWHERE project = ? AND trace_id IN ? AND start >= ? AND start <= ?" +
		"\nWHERE has(attr_keys, '" + safety.ApprovalDecisionAttribute + "') OR " + event
	return q, []any{project, traceSet(ids), lo.UTC().Truncate(time.Second), hi.UTC()}
}

// approvalEvent reads a tally.approval event: its decision, who made it,
// the tool and the wait (tally.approval.wait_ms before the event's time).
func approvalEvent(spanID string, at uint64, attrsJSON string) (safety.Approval, bool) {
	var attrs map[string]any
	if json.Unmarshal([]byte(attrsJSON), &attrs) != nil {
		return safety.Approval{}, false
	}
	str := func(k string) string {
		switch v := attrs[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return ""
	}
	d, ok := safety.ParseDecision(str(safety.ApprovalDecisionAttribute))
	if !ok {
		return safety.Approval{}, false
	}
	a := safety.Approval{SpanID: spanID, Decision: d, By: str(safety.ApprovalByAttribute), Tool: str(safety.ApprovalToolAttribute),
		RequestedNs: at, DecidedNs: at}
	if wait, err := strconv.ParseFloat(str(safety.ApprovalWaitAttribute), 64); err == nil && wait > 0 {
		a.RequestedNs = at - min(at, uint64(wait*1e6))
	}
	if d == safety.DecisionPending {
		a.DecidedNs = 0
	}
	return a, true
}

// applyReview sets each tool node's effect class and terminal status from
// the run's review, and the summary's signals.
func applyReview(d *RunDetail, rv *runReview) {
	steps := make(map[string]*safety.Step, len(rv.run.Steps))
	for i := range rv.run.Steps {
		steps[rv.run.Steps[i].SpanID] = &rv.run.Steps[i]
	}
	stack := append([]*SpanNode(nil), d.Roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		stack = append(stack, n.Children...)
		if st := steps[n.SpanID]; st != nil {
			n.Effect, n.StepStatus = st.Effect, st.Status
		}
	}
	d.Summary.Signals = rv.signals
	d.Summary.Guardrails = rv.run.Guardrails
}

// reviewOutline is what a run's outline keeps of its spans' wide columns
// for the review: the attributes it reads, OpenInference's offered tools
// on inference spans, approval events.
func reviewOutline() schema.OutlineKeep {
	return schema.OutlineKeep{Attrs: reviewAttrs, InferencePrefix: "llm.tools.", Event: safety.ApprovalEvent}
}

// stepFacts sets the effect class and terminal status of the tool nodes
// under roots from the run's spans: what a page of children shows, without
// the review's content read and signals.
func (r *core) stepFacts(project string, sum RunSummary, roots []*SpanNode, spans []schema.Span) {
	run := buildReview(project, &sum, spans, &reviewedContent{}, r.effects)
	applyReview(&RunDetail{Summary: sum, Roots: roots}, &runReview{run: run})
}

// reviewDetail reviews the run of a detail from the spans it was built
// from (read whole, or as an outline keeping reviewOutline) and the run's
// recorded tool content, and applies the review.
func (r *core) reviewDetail(ctx context.Context, project string, d *RunDetail, spans []schema.Span) error {
	ids, lo, hi := runsExtent(1, func(int) *RunSummary { return &d.Summary })
	content, err := r.reviewContent(ctx, project, ids, lo, hi, false)
	if err != nil {
		return err
	}
	r.applyContentReview(project, d, spans, content)
	return nil
}

// applyContentReview reviews the run of a detail from its spans and its
// recorded tool content, read already, and applies the review.
func (r *core) applyContentReview(project string, d *RunDetail, spans []schema.Span, content *reviewedContent) {
	run := buildReview(project, &d.Summary, spans, content, r.effects)
	applyReview(d, &runReview{run: run, signals: safety.Review(run, r.reviewConfig())})
}

// SignalFilter selects the runs whose signals GET /signals counts: those
// that started in the range, of a task or agent;
// Kind and Tool keep those signals only. By groups them by kind and tool
// (default), task or agent.
type SignalFilter struct {
	Project      string
	Since, Until time.Time
	Kind         safety.SignalKind
	Tool         string
	Agent, Task  string
	By           string
}

// SignalGroup counts one kind of signal on one tool (or task, or agent):
// how many, in how many runs, and the newest runs it was raised in (up to
// 5).
type SignalGroup struct {
	Kind        safety.SignalKind `json:"kind"`
	Tool        string            `json:"tool,omitempty"`
	Task        string            `json:"task,omitempty"`
	Agent       string            `json:"agent,omitempty"`
	Signals     int               `json:"signals"`
	Runs        int               `json:"runs"`
	ExampleRuns []string          `json:"example_runs"`
	Reason      string            `json:"reason"` // the newest signal's
}

// ToolReview is one tool's steps in the reviewed runs: its effect class
// (the most common among its steps), how many steps, how they ended and
// how many signals point at them.
type ToolReview struct {
	Tool     string                `json:"tool"`
	Effect   safety.Effect         `json:"effect"`
	Steps    int                   `json:"steps"`
	Statuses map[safety.Status]int `json:"statuses"`
	Signals  int                   `json:"signals"`
}

// SignalsReport is the answer of Signals: the groups, most signals first;
// the signals by kind; the reviewed tools, most steps first; and the runs
// read by task (the denominators of rates).
type SignalsReport struct {
	Since           time.Time                 `json:"since,omitzero"`
	Until           time.Time                 `json:"until,omitzero"`
	By              string                    `json:"by"`
	RunsRead        int                       `json:"runs_read"`
	Truncated       bool                      `json:"truncated,omitempty"`
	Signals         int                       `json:"signals"`
	RunsWithSignals int                       `json:"runs_with_signals"`
	Kinds           map[safety.SignalKind]int `json:"kinds"`
	Groups          []SignalGroup             `json:"groups"`
	Tools           []ToolReview              `json:"tools"`
	RunsByTask      map[string]int            `json:"runs_by_task"`
	// FlaggedByTask counts, per kind and task, the runs raising the kind:
	// with RunsByTask, the rate of runs per task (budget_exceeded alerts).
	FlaggedByTask map[safety.SignalKind]map[string]int `json:"flagged_by_task"`
	// FlaggedRunsByTask are, per kind and task, the newest of those runs
	// (up to 5).
	FlaggedRunsByTask map[safety.SignalKind]map[string][]string `json:"flagged_runs_by_task"`
	// PerMinute counts the signals by kind, tool and their run's start
	// minute, for the metrics' counters (not in the JSON answer).
	PerMinute []SignalMinute `json:"-"`
}

// SignalMinute is the signals of one kind on one tool in the runs that
// started in one minute.
type SignalMinute struct {
	Kind    safety.SignalKind
	Tool    string
	Minute  time.Time
	Signals int
}

// Signals reviews the runs f selects, as a run's detail does, and counts
// their signals by kind and tool (or task or agent), and their tools'
// steps by terminal status.
func (r ReviewReader) Signals(ctx context.Context, f SignalFilter) (*SignalsReport, error) {
	f.By = cmp.Or(f.By, "tool")
	if f.By != "tool" && f.By != "task" && f.By != "agent" {
		return nil, fmt.Errorf("by %q: want tool, task or agent", f.By)
	}
	rep := &SignalsReport{Since: f.Since, Until: f.Until, By: f.By, Kinds: map[safety.SignalKind]int{}, Groups: []SignalGroup{},
		Tools: []ToolReview{}, RunsByTask: map[string]int{}, FlaggedByTask: map[safety.SignalKind]map[string]int{},
		FlaggedRunsByTask: map[safety.SignalKind]map[string][]string{}}
	for _, k := range safety.Kinds() {
		rep.Kinds[k] = 0
	}
	sel, err := selectRuns(r.store, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until, Agent: f.Agent, Task: f.Task})
	if err != nil {
		return nil, err
	}
	lv, err := r.liveRuns(ctx, f.Project, f.Since)
	if err != nil {
		return nil, err
	}
	tools := map[string]*ToolReview{}
	effects := map[string]map[safety.Effect]int{}
	addSteps := func(tool string, status safety.Status, effect safety.Effect, n int) {
		t := tools[tool]
		if t == nil {
			t = &ToolReview{Tool: tool, Statuses: map[safety.Status]int{}}
			tools[tool], effects[tool] = t, map[safety.Effect]int{}
		}
		t.Steps += n
		t.Statuses[status] += n
		effects[tool][effect] += n
	}
	// Live runs (few: in flight) are reviewed from their spans; the
	// settled runs' reviews were stored when they settled, and are added
	// up in ClickHouse (runs by task, steps by tool, status and effect),
	// but for the runs that raised signals, which are read one by one.
	// While the settler catches up (a restart under load) the live runs
	// are not few: they are read in parts by trace id (liveShards), each
	// part counted as it is reviewed, and only its runs that raised a
	// signal kept. The settled runs are read while the live ones are
	// reviewed.
	var (
		settled settledReview
		live    []windowRun // the live runs that raised a signal
	)
	// A window of many runs reads the settled runs' counts from the run
	// rollup (reviewrollup.go).
	var plan *rollupPlan
	if !lv.all {
		grain := schema.RunGrainTask
		if f.Agent != "" {
			grain = schema.RunGrainAgent
		}
		if plan, err = r.planRollup(ctx, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until, Task: f.Task, Agent: f.Agent}, grain, &lv); err != nil {
			return nil, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	if !lv.all {
		g.Go(func() (err error) {
			if plan != nil {
				settled, err = r.settledReviewRolled(gctx, f, plan, lv)
				return err
			}
			settled, err = r.settledReview(gctx, f.Project, sel, lv, f.Tool)
			return err
		})
	}
	g.Go(func() (err error) {
		live, err = r.reviewLive(gctx, f, sel, lv, addSteps, rep)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for task, n := range settled.runsByTask {
		rep.RunsRead += n
		rep.RunsByTask[task] += n
	}
	for _, c := range settled.steps {
		addSteps(c.tool, c.status, c.effect, c.n)
	}
	type key struct {
		kind safety.SignalKind
		by   string
	}
	groups := map[key]*SignalGroup{}
	runsOf := map[key]map[string]bool{}
	type minuteKey struct {
		kind   safety.SignalKind
		tool   string
		minute time.Time
	}
	perMinute := map[minuteKey]int{}
	// The live runs and the settled runs that raised signals, merged
	// newest first: example runs come out newest first too.
	reviewed := slices.Concat(live, settled.flagged)
	slices.SortStableFunc(reviewed, func(a, b windowRun) int { return newer(&a.RunSummary, &b.RunSummary) })
	for i := range reviewed {
		run, rv := &reviewed[i].RunSummary, reviewed[i].facts
		raised := false
		kindsRaised := map[safety.SignalKind]bool{}
		for _, sig := range rv.signals {
			if (f.Kind != "" && sig.Kind != f.Kind) || (f.Tool != "" && sig.Tool != f.Tool) {
				continue
			}
			if t := tools[sig.Tool]; t != nil && sig.Tool != "" {
				t.Signals++
			}
			rep.Kinds[sig.Kind]++
			perMinute[minuteKey{sig.Kind, sig.Tool, run.Start.UTC().Truncate(time.Minute)}]++
			raised = true
			if !kindsRaised[sig.Kind] {
				kindsRaised[sig.Kind] = true
				if rep.FlaggedByTask[sig.Kind] == nil {
					rep.FlaggedByTask[sig.Kind], rep.FlaggedRunsByTask[sig.Kind] = map[string]int{}, map[string][]string{}
				}
				rep.FlaggedByTask[sig.Kind][run.Task]++
				if ids := rep.FlaggedRunsByTask[sig.Kind][run.Task]; len(ids) < exampleRuns {
					rep.FlaggedRunsByTask[sig.Kind][run.Task] = append(ids, run.TraceID)
				}
			}
			for _, by := range signalKeys(f.By, sig, run) {
				k := key{sig.Kind, by}
				g := groups[k]
				if g == nil {
					g = &SignalGroup{Kind: sig.Kind, ExampleRuns: []string{}, Reason: sig.Reason}
					switch f.By {
					case "tool":
						g.Tool = by
					case "task":
						g.Task = by
					case "agent":
						g.Agent = by
					}
					groups[k], runsOf[k] = g, map[string]bool{}
				}
				g.Signals++
				if !runsOf[k][run.TraceID] {
					runsOf[k][run.TraceID] = true
					g.Runs++
					if len(g.ExampleRuns) < 5 {
						g.ExampleRuns = append(g.ExampleRuns, run.TraceID)
					}
				}
			}
			rep.Signals++
		}
		if raised {
			rep.RunsWithSignals++
		}
	}
	for _, g := range groups {
		rep.Groups = append(rep.Groups, *g)
	}
	for k, n := range perMinute {
		rep.PerMinute = append(rep.PerMinute, SignalMinute{Kind: k.kind, Tool: k.tool, Minute: k.minute, Signals: n})
	}
	slices.SortFunc(rep.Groups, func(a, b SignalGroup) int {
		return cmp.Or(cmp.Compare(b.Signals, a.Signals), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Tool+a.Task+a.Agent, b.Tool+b.Task+b.Agent))
	})
	for name, t := range tools {
		best := 0
		t.Effect = safety.EffectUnknown
		for e, n := range effects[name] {
			if n > best || (n == best && e < t.Effect) {
				t.Effect, best = e, n
			}
		}
		rep.Tools = append(rep.Tools, *t)
	}
	slices.SortFunc(rep.Tools, func(a, b ToolReview) int { return cmp.Or(cmp.Compare(b.Steps, a.Steps), cmp.Compare(a.Tool, b.Tool)) })
	return rep, nil
}

// reviewLive reviews the live runs lv of sel in parts (liveShards),
// counting them and their steps into rep and through addSteps as each part
// is reviewed, and returns the ones that raised a signal.
func (r *core) reviewLive(ctx context.Context, f SignalFilter, sel runSelection, lv liveSet,
	addSteps func(tool string, status safety.Status, effect safety.Effect, n int), rep *SignalsReport) ([]windowRun, error) {
	shards, err := r.liveShards(ctx, lv)
	if err != nil {
		return nil, err
	}
	var live []windowRun
	for i := range shards {
		part, err := r.liveWindowRuns(ctx, sel, lv, Shard{Index: i, Of: shards}, nil)
		if err != nil {
			return nil, err
		}
		summaries := make([]RunSummary, len(part))
		for j := range part {
			summaries[j] = part[j].RunSummary
			rep.RunsRead++
			rep.RunsByTask[part[j].Task]++
		}
		if err := r.reviewRuns(ctx, f.Project, summaries, func(run *RunSummary, rv *runReview) {
			for _, st := range rv.run.Steps {
				if f.Tool == "" || st.Tool == f.Tool {
					addSteps(st.Tool, st.Status, st.Effect, 1)
				}
			}
			if len(rv.signals) > 0 {
				live = append(live, windowRun{RunSummary: *run, facts: &runFacts{signals: rv.signals}})
			}
		}); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// liveShardRuns is about how many live runs one part of a review of the
// live runs holds (liveShards): their summaries and reviews in tally, and
// their aggregation in the store (a read of 30,000 unsettled runs' summaries
// held 200 MiB in the embedded engine, a part of 5,000 of them 60 MiB under
// the bench's 2× overload: with 2,000, 20–25).
const liveShardRuns = 2000

// liveShards is how many parts the live runs lv are reviewed in, by trace
// id: one while they are few, else one per liveShardRuns of them (or of
// the reader's WithLiveShardRuns).
func (r *core) liveShards(ctx context.Context, lv liveSet) (int, error) {
	per := cmp.Or(r.liveShardRuns, liveShardRuns)
	n := len(lv.ids)
	if lv.sub != "" {
		var count uint64
		if err := r.store.Conn().QueryRow(ctx, "SELECT count() FROM ("+lv.sub+")", lv.subArgs...).Scan(&count); err != nil {
			return 0, fmt.Errorf("count live runs: %w", err)
		}
		n = int(count)
	}
	return max(1, (n+per-1)/per), nil
}

// settledReview is what Signals reads of the settled runs of its window:
// the runs by task and the steps by tool, status and effect, added up in
// ClickHouse, and the runs that raised a signal, newest first, each with
// its signals (facts.signals only).
type settledReview struct {
	runsByTask map[string]int
	steps      []stepCount
	flagged    []windowRun
}

// stepCount is how many steps of one tool ended in one status under one
// effect class.
type stepCount struct {
	tool   string
	status safety.Status
	effect safety.Effect
	n      int
}

// settledReview reads the settled runs sel selects that are not live
// (lv), their steps of tool only when tool is set. Three statements over
// the window's current rows, each reading a few columns: a window of
// 117k runs read whole (each run's steps and signals, to add them up in
// Go) took 0.45 s, most of it moving the rows. They run at once: each
// deduplicates the window's rows (FINAL), which ClickHouse 18.16 does on
// one thread, so one after the other they left the second core idle.
func (r *core) settledReview(ctx context.Context, project string, sel runSelection, lv liveSet, tool string) (settledReview, error) {
	out := settledReview{runsByTask: map[string]int{}}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		q, args := settledTasksSQL(r.store, project, sel, lv)
		rows, err := r.store.Conn().Query(gctx, q, args...)
		if err != nil {
			return fmt.Errorf("count settled runs: %w", err)
		}
		type taskCount struct {
			task string
			n    uint64
		}
		tasks, err := scanAll(rows, func(c *taskCount) []any { return []any{&c.task, &c.n} })
		if err != nil {
			return fmt.Errorf("count settled runs: %w", err)
		}
		for _, c := range tasks {
			out.runsByTask[c.task] += int(c.n)
		}
		return nil
	})
	g.Go(func() error {
		q, args := settledStepsSQL(r.store, project, sel, lv, tool)
		rows, err := r.store.Conn().Query(gctx, q, args...)
		if err != nil {
			return fmt.Errorf("count settled steps: %w", err)
		}
		type stepRow struct {
			tool, status, effect string
			n                    uint64
		}
		steps, err := scanAll(rows, func(c *stepRow) []any { return []any{&c.tool, &c.status, &c.effect, &c.n} })
		if err != nil {
			return fmt.Errorf("count settled steps: %w", err)
		}
		for _, c := range steps {
			out.steps = append(out.steps, stepCount{c.tool, safety.Status(c.status), safety.Effect(c.effect), int(c.n)})
		}
		return nil
	})
	g.Go(func() error {
		q, args := settledSignalsSQL(r.store, project, sel, lv)
		rows, err := r.store.Conn().Query(gctx, q, args...)
		if err != nil {
			return fmt.Errorf("read settled signals: %w", err)
		}
		type flaggedRow struct {
			traceID, task, signals string
			agents                 []string
			startNs                uint64
		}
		found, err := scanAll(rows, func(f *flaggedRow) []any { return []any{&f.traceID, &f.startNs, &f.task, &f.agents, &f.signals} })
		if err != nil {
			return fmt.Errorf("read settled signals: %w", err)
		}
		out.flagged = make([]windowRun, len(found))
		for i, f := range found {
			run := &out.flagged[i]
			run.TraceID, run.Start, run.Task, run.Agents, run.Settled = f.traceID, nsTime(f.startNs), f.task, nonNil(f.agents), true
			run.facts = &runFacts{}
			if err := decodeFact(f.signals, &run.facts.signals); err != nil {
				return fmt.Errorf("run %s: signals: %w", f.traceID, err)
			}
		}
		return nil
	})
	return out, g.Wait()
}

// settledTask is a settled row's task as its summary gives it (runRow.summary).
const settledTask = "if(task != '', task, root_name)"

// settledTasksSQL builds settledReview's count of runs by task.
func settledTasksSQL(t tables, project string, sel runSelection, lv liveSet) (string, []any) {
	sub, args := settledCurrentSQL(t, project, sel, lv, "")
	return "SELECT " + settledTask + " AS run_task, count() FROM (" + sub + ")\nGROUP BY run_task", args
}

// settledStepsSQL builds settledReview's count of steps by tool (only
// tool's when set), terminal status and effect class.
func settledStepsSQL(t tables, project string, sel runSelection, lv liveSet, tool string) (string, []any) {
	sub, args := settledCurrentSQL(t, project, sel, lv, "step_tools, step_statuses, step_effects")
	where := ""
	if tool != "" {
		where = "\nWHERE step_tool = ?"
		args = append(args, tool)
	}
	return "SELECT step_tool, step_status, step_effect, count() FROM (" + sub + ")" +
		"\nARRAY JOIN step_tools AS step_tool, step_statuses AS step_status, step_effects AS step_effect" + where +
		"\nGROUP BY step_tool, step_status, step_effect", args
}

// settledSignalsSQL builds settledReview's read of the runs that raised
// a signal, newest first (newer's order).
func settledSignalsSQL(t tables, project string, sel runSelection, lv liveSet) (string, []any) {
	sub, args := settledCurrentSQL(t, project, sel, lv, "signal_kinds, signals")
	return "SELECT trace_id, s_ns, " + settledTask + ", agents, signals FROM (" + sub + ")\nWHERE notEmpty(signal_kinds)" +
		"\nORDER BY s_ns DESC, trace_id DESC", args
}

// signalKeys are what a signal is grouped under: its tool, its run's task,
// or each of its run's agents.
func signalKeys(by string, sig safety.Signal, run *RunSummary) []string {
	switch by {
	case "task":
		return []string{run.Task}
	case "agent":
		if len(run.Agents) == 0 {
			return []string{""}
		}
		return run.Agents
	}
	return []string{sig.Tool}
}

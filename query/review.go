package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// httpStatusAttribute is the semantic conventions' HTTP response status,
// which a tool span making an HTTP call carries.
const httpStatusAttribute = "http.response.status_code"

// stepsOf builds the safety steps of one run's tool spans (others are
// skipped, duplicate deliveries too), given each span's retry class.
func stepsOf(spans []schema.Span, class func(spanID string) attribution.Class, effects *safety.Policy) []safety.Step {
	var steps []safety.Step
	seen := map[string]bool{}
	for i := range spans {
		s := &spans[i]
		if s.SpanType != schema.TypeTool || seen[s.SpanID] {
			continue
		}
		seen[s.SpanID] = true
		attr := func(k string) string {
			for j, key := range s.AttrKeys {
				if key == k && j < len(s.AttrValues) {
					return s.AttrValues[j]
				}
			}
			return ""
		}
		steps = append(steps, safety.Step{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Tool: s.ToolName,
			Effect: effects.Effect(s.Project, s.ToolName, attr(safety.EffectAttribute)),
			Status: safety.StepStatus(safety.StepFacts{Error: s.Status == "error", ErrorType: s.ErrorType,
				Message: s.StatusMessage, HTTPStatus: attr(httpStatusAttribute), Declared: attr(safety.StatusAttribute)}),
			Retry: class(s.SpanID).Retry(), CallID: s.ToolCallID, StepID: s.StepID, ArgsHash: s.ArgsHash, StartNs: s.StartNs,
			EndNs: s.StartNs + s.DurationNs})
	}
	return steps
}

// reviewSteps sets each tool node's effect class and terminal status and
// returns the run's safety signals. The tree's retry classes must be set
// (classifyRunTools). An outline read keeps tool spans' attributes, so big
// runs are reviewed whole.
func reviewSteps(spans []schema.Span, roots []*SpanNode, effects *safety.Policy, limits safety.Limits) []safety.Signal {
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
	steps := stepsOf(spans, func(id string) attribution.Class {
		if n := nodes[id]; n != nil {
			return n.RetryClass
		}
		return ""
	}, effects)
	for _, st := range steps {
		if n := nodes[st.SpanID]; n != nil {
			n.Effect, n.StepStatus = st.Effect, st.Status
		}
	}
	return safety.Signals(steps, limits)
}

// SignalFilter selects the runs whose signals GET /signals counts: those
// that started in the range (the newest MaxTaskRuns), of a task or agent;
// Kind and Tool keep those signals only.
type SignalFilter struct {
	Project      string
	Since, Until time.Time
	Kind, Tool   string
	Agent, Task  string
}

// SignalGroup counts one kind of signal on one tool: how many, in how many
// runs, and the newest runs it was raised in (up to 5).
type SignalGroup struct {
	Kind        string   `json:"kind"`
	Tool        string   `json:"tool"`
	Signals     int      `json:"signals"`
	Runs        int      `json:"runs"`
	ExampleRuns []string `json:"example_runs"`
	Reason      string   `json:"reason"` // the newest signal's
}

// SignalsReport is the answer of Signals: the groups, most signals first.
type SignalsReport struct {
	Since     time.Time     `json:"since,omitzero"`
	Until     time.Time     `json:"until,omitzero"`
	RunsRead  int           `json:"runs_read"`
	Truncated bool          `json:"truncated,omitempty"`
	Signals   int           `json:"signals"`
	Groups    []SignalGroup `json:"groups"`
}

// Signals reviews the runs f selects, as a run's detail does, and counts
// their signals by kind and tool.
func (r *Reader) Signals(ctx context.Context, f SignalFilter) (*SignalsReport, error) {
	rep := &SignalsReport{Since: f.Since, Until: f.Until, Groups: []SignalGroup{}}
	page, err := r.runList(ctx, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until, Agent: f.Agent, Task: f.Task, Limit: MaxTaskRuns}, false)
	if err != nil {
		return nil, err
	}
	runs := page.Runs
	rep.RunsRead, rep.Truncated = len(runs), page.NextCursor != ""
	if len(runs) == 0 {
		return rep, nil
	}
	type key struct{ kind, tool string }
	groups := map[key]*SignalGroup{}
	runsOf := map[key]map[string]bool{}
	// Runs are newest first: example runs come out newest first too.
	for start := 0; start < len(runs); start += outcomeChunk {
		chunk := runs[start:min(start+outcomeChunk, len(runs))]
		byRun, err := r.toolSpans(ctx, f.Project, chunk)
		if err != nil {
			return nil, err
		}
		for _, run := range chunk {
			spans := byRun[run.TraceID]
			if len(spans) == 0 {
				continue
			}
			calls := make([]attribution.ToolCall, len(spans))
			for i := range spans {
				s := &spans[i]
				calls[i] = attribution.ToolCall{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
					Tool: s.ToolName, CallID: s.ToolCallID, StepID: s.StepID, ArgsHash: s.ArgsHash,
					Error: s.Status == "error", StartNs: s.StartNs, DurationNs: s.DurationNs, Attempt: s.Attempt}
			}
			classes := attribution.ClassifyRetries(calls)
			bySpan := make(map[string]attribution.Class, len(calls))
			for i, c := range classes {
				bySpan[calls[i].SpanID] = c
			}
			for _, sig := range safety.Signals(stepsOf(spans, func(id string) attribution.Class { return bySpan[id] }, r.effects), r.limits) {
				if (f.Kind != "" && sig.Kind != f.Kind) || (f.Tool != "" && sig.Tool != f.Tool) {
					continue
				}
				k := key{sig.Kind, sig.Tool}
				g := groups[k]
				if g == nil {
					g = &SignalGroup{Kind: sig.Kind, Tool: sig.Tool, ExampleRuns: []string{}, Reason: sig.Reason}
					groups[k], runsOf[k] = g, map[string]bool{}
				}
				g.Signals++
				rep.Signals++
				if !runsOf[k][run.TraceID] {
					runsOf[k][run.TraceID] = true
					g.Runs++
					if len(g.ExampleRuns) < 5 {
						g.ExampleRuns = append(g.ExampleRuns, run.TraceID)
					}
				}
			}
		}
	}
	for _, g := range groups {
		rep.Groups = append(rep.Groups, *g)
	}
	slices.SortFunc(rep.Groups, func(a, b SignalGroup) int {
		return cmp.Or(cmp.Compare(b.Signals, a.Signals), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Tool, b.Tool))
	})
	return rep, nil
}

// toolSpans reads the tool spans of runs (their review's columns, and the
// attributes the review reads), by trace id, in start order.
func (r *Reader) toolSpans(ctx context.Context, project string, runs []RunSummary) (map[string][]schema.Span, error) {
	set := clickhouse.GroupSet{Value: make([]any, len(runs))}
	lo, hi := runs[0].Start, runs[0].End
	for i := range runs {
		set.Value[i] = runs[i].TraceID
		lo, hi = minTime(lo, runs[i].Start), maxTime(hi, runs[i].End)
	}
	keep := "has(['" + strings.Join([]string{safety.EffectAttribute, safety.StatusAttribute, httpStatusAttribute}, "', '") + "'], k)"
	q := "SELECT project, trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash, status, error_type, status_message, " +
		"start_ns, duration_ns, attempt, arrayFilter(k -> " + keep + ", attr_keys), arrayFilter((v, k) -> " + keep + ", attr_values, attr_keys)\nFROM " +
		final(r.store.Table(schema.TableSpans)) + "\nWHERE project = ? AND span_type = 'tool' AND trace_id IN ? AND start >= ? AND start <= ?" +
		"\nORDER BY trace_id, start_ns, span_id"
	rows, err := r.store.Conn().Query(ctx, q, project, set, lo.UTC().Truncate(time.Second), hi.UTC())
	if err != nil {
		return nil, fmt.Errorf("read tool spans: %w", err)
	}
	spans, err := scanAll(rows, func(s *schema.Span) []any {
		return []any{&s.Project, &s.TraceID, &s.SpanID, &s.ParentSpanID, &s.ToolName, &s.ToolCallID, &s.StepID, &s.ArgsHash,
			&s.Status, &s.ErrorType, &s.StatusMessage, &s.StartNs, &s.DurationNs, &s.Attempt, &s.AttrKeys, &s.AttrValues}
	})
	if err != nil {
		return nil, fmt.Errorf("read tool spans: %w", err)
	}
	out := map[string][]schema.Span{}
	for _, s := range spans {
		s.SpanType = schema.TypeTool
		out[s.TraceID] = append(out[s.TraceID], s)
	}
	return out, nil
}

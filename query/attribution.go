package query

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/schema"
)

// DefaultTraceWindow is how far before and after a time range the spans of
// the runs touching the range are loaded to attribute them (see loadSpans).
const DefaultTraceWindow = time.Hour

// spanFact is the part of a span row that cost attribution reads.
type spanFact struct {
	Project      string
	TraceID      string
	SpanID       string
	ParentSpanID string
	StartNs      uint64
	EndNs        uint64
	Name         string
	Status       string
	Service      string
	SpanType     string
	Provider     string
	Model        string
	AgentName    string
	Conversation string
	User         string
	TaskName     string
	ToolName     string
	ToolCallID   string
	StepID       string
	Attempt      uint32
	Usage        Usage
	UsageMode    string
	Cost         Cost
	CostSource   string
	Version      uint64
}

const factColumns = `project, trace_id, span_id, parent_span_id, start_ns, end_ns, name, status, service,
	span_type, provider, model, agent_name, conversation_id, user_id, task_name, tool_name, tool_call_id,
	step_id, attempt, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
	usage_mode, cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_source, version`

func (f *spanFact) dest() []any {
	return []any{&f.Project, &f.TraceID, &f.SpanID, &f.ParentSpanID, &f.StartNs, &f.EndNs, &f.Name,
		&f.Status, &f.Service, &f.SpanType, &f.Provider, &f.Model, &f.AgentName, &f.Conversation,
		&f.User, &f.TaskName, &f.ToolName, &f.ToolCallID, &f.StepID, &f.Attempt,
		&f.Usage.Input, &f.Usage.CacheRead, &f.Usage.CacheWrite, &f.Usage.Output, &f.Usage.Reasoning,
		&f.UsageMode, &f.Cost.Total, &f.Cost.Input, &f.Cost.CacheRead, &f.Cost.CacheWrite, &f.Cost.Output,
		&f.CostSource, &f.Version}
}

// attributed is a span with the run-level facts cost attribution derives
// from its run.
type attributed struct {
	*spanFact
	// Agent is the span's agent name, else the name of its nearest ancestor
	// that carries one.
	Agent string
	// Task is the run's task: task.name on any span of the run (the earliest
	// carrying it), else the root span's name, else the earliest span's name.
	Task string
	// Tool is the name of the nearest enclosing tool span (the span itself
	// when it is one); for an inference span that is retry tax between two
	// attempts of a tool call, that tool.
	Tool string
	// Conversation and User are the span's own, else the run's (the first
	// non-empty value in start order).
	Conversation string
	User         string
	// UsageCounted says the span's tokens count in totals, and CostCounted
	// its cost (the rule of counted.go, shared with Summarize and the run
	// list).
	UsageCounted bool
	CostCounted  bool
	// ToolRetry and ToolError classify tool spans (see classifyRetries).
	ToolRetry bool
	ToolError bool
	// RetryTax says the span's cost is retry tax (see retrytax.go).
	RetryTax bool
}

// loadSpans loads, deduplicated (FINAL), the spans of every run that has a
// span starting in [from, to), limited to spans starting within window of
// that range, and attributes them. Only the spans starting in [from, to) are
// returned. project "" loads every project.
//
// Attribution needs whole runs: the agent of a span may be named on an
// ancestor that started earlier, the task on the root, the retry a tax is
// charged for on a sibling. A run is loaded only as far as window reaches
// around the range, which bounds the cost of a load; a run longer than the
// window may lose an ancestor and fall back to the nearest one loaded.
func (r *Reader) loadSpans(ctx context.Context, project string, from, to time.Time, window time.Duration) ([]attributed, error) {
	if !to.After(from) {
		return nil, nil
	}
	fromSec := from.UTC().Truncate(time.Second)
	toSec := to.UTC().Truncate(time.Second)
	projectCond, args := "", []any{}
	if project != "" {
		projectCond = " AND project = ?"
	}
	// span_facts is sorted by hour first: these reads cover an hour or a
	// few, which in the spans table (sorted by run) would read whole days.
	table := r.store.Table(schema.TableSpanFacts)
	// No FINAL: attributeFacts keeps each span's latest version itself. On
	// ClickHouse 18.16 FINAL merges in one thread and made this read 3–4×
	// slower (0.12–0.2 s against 0.04 s for a report's first hour at 10M
	// spans).
	q := "SELECT " + factColumns + "\nFROM " + table + "\nWHERE start >= ? AND start <= ?" + projectCond +
		"\n  AND (project, trace_id) IN (SELECT project, trace_id FROM " + table +
		" WHERE start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ?" + projectCond + ")"
	args = append(args, fromSec.Add(-window), toSec.Add(window))
	if project != "" {
		args = append(args, project)
	}
	args = append(args, fromSec, toSec, uint64(from.UnixNano()), uint64(to.UnixNano()))
	if project != "" {
		args = append(args, project)
	}
	return r.attributeFacts(ctx, q, args, from, to)
}

// loadRunSpans is loadSpans for the given runs of one project only.
func (r *Reader) loadRunSpans(ctx context.Context, project string, traces []string, from, to time.Time, window time.Duration) ([]attributed, error) {
	if !to.After(from) || len(traces) == 0 {
		return nil, nil
	}
	ids := clickhouse.GroupSet{Value: make([]any, len(traces))}
	for i, t := range traces {
		ids.Value[i] = t
	}
	q := "SELECT " + factColumns + "\nFROM " + r.store.Table(schema.TableSpans) + " FINAL\nWHERE project = ? AND trace_id IN ?" +
		" AND start >= ? AND start <= ?"
	args := []any{project, ids, from.UTC().Truncate(time.Second).Add(-window), to.UTC().Truncate(time.Second).Add(window)}
	return r.attributeFacts(ctx, q, args, from, to)
}

// attributeFacts runs q (which selects factColumns), attributes the spans
// and returns those starting in [from, to). Attribution keeps each span's
// highest version, what FINAL would keep, so q need not use FINAL.
func (r *Reader) attributeFacts(ctx context.Context, q string, args []any, from, to time.Time) ([]attributed, error) {
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("load spans %s–%s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	defer rows.Close()
	var facts []spanFact
	for rows.Next() {
		var f spanFact
		if err := rows.Scan(f.dest()...); err != nil {
			return nil, fmt.Errorf("scan span: %w", err)
		}
		facts = append(facts, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load spans: %w", err)
	}
	all := attribute(facts)
	fromNs, toNs := uint64(from.UnixNano()), uint64(to.UnixNano())
	out := all[:0]
	for _, a := range all {
		if a.StartNs >= fromNs && a.StartNs < toNs {
			out = append(out, a)
		}
	}
	return out, nil
}

// attribute groups spans by run and derives each span's attribution. A span
// identity seen twice keeps its row with the highest version.
func attribute(facts []spanFact) []attributed {
	byRun := make(map[string][]*spanFact)
	var order []string
	for i := range facts {
		key := facts[i].Project + "\x00" + facts[i].TraceID
		if _, ok := byRun[key]; !ok {
			order = append(order, key)
		}
		byRun[key] = append(byRun[key], &facts[i])
	}
	out := make([]attributed, 0, len(facts))
	for _, key := range order {
		out = append(out, attributeRun(byRun[key])...)
	}
	return out
}

// attributeRun attributes the spans of one run.
func attributeRun(spans []*spanFact) []attributed {
	sort.SliceStable(spans, func(i, j int) bool {
		if spans[i].StartNs != spans[j].StartNs {
			return spans[i].StartNs < spans[j].StartNs
		}
		return spans[i].SpanID < spans[j].SpanID
	})
	byID := make(map[string]int, len(spans))
	run := make([]attributed, 0, len(spans))
	for _, s := range spans {
		if i, dup := byID[s.SpanID]; dup {
			if s.Version > run[i].Version {
				run[i].spanFact = s
			}
			continue
		}
		byID[s.SpanID] = len(run)
		run = append(run, attributed{spanFact: s})
	}

	var task, rootName, conv, user string
	us := make([]usageSpan, len(run))
	for i := range run {
		s := run[i].spanFact
		if task == "" && s.TaskName != "" {
			task = s.TaskName
		}
		if rootName == "" && s.ParentSpanID == "" {
			rootName = s.Name
		}
		if conv == "" {
			conv = s.Conversation
		}
		if user == "" {
			user = s.User
		}
		us[i] = usageSpan{id: s.SpanID, parent: s.ParentSpanID, spanType: s.SpanType, mode: s.UsageMode,
			start: s.StartNs, end: s.EndNs, in: s.Usage.Input, cr: s.Usage.CacheRead, cw: s.Usage.CacheWrite, out: s.Usage.Output}
	}
	counted, _ := countedUsage(us)
	if task == "" {
		task = rootName
	}
	if task == "" && len(run) > 0 {
		task = run[0].Name
	}

	agents := make([]string, len(run))
	tools := make([]string, len(run))
	resolved := make([]bool, len(run))
	// resolve walks up the parents of span i to the nearest span naming an
	// agent (and the nearest tool span), memoizing along the way; a parent
	// cycle stops the walk.
	var resolve func(i, depth int)
	resolve = func(i, depth int) {
		if resolved[i] {
			return
		}
		resolved[i] = true
		s := run[i].spanFact
		agents[i] = s.AgentName
		if s.SpanType == schema.TypeTool {
			tools[i] = s.ToolName
		}
		p, ok := byID[s.ParentSpanID]
		if !ok || depth > len(run) {
			return
		}
		resolve(p, depth+1)
		if agents[i] == "" {
			agents[i] = agents[p]
		}
		if s.SpanType != schema.TypeTool {
			tools[i] = tools[p]
		}
	}
	for i := range run {
		resolve(i, 0)
	}
	for i := range run {
		a := &run[i]
		a.Agent, a.Tool, a.Task = agents[i], tools[i], task
		a.Conversation, a.User = a.spanFact.Conversation, a.spanFact.User
		if a.Conversation == "" {
			a.Conversation = conv
		}
		if a.User == "" {
			a.User = user
		}
		a.UsageCounted = counted[i]
		a.CostCounted = costCounts(counted[i], a.UsageMode)
	}
	chargeRetryTax(run, byID)
	return run
}

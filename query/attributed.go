package query

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/schema"
)

// DefaultTraceWindow is how far before and after a time range the spans of
// the runs touching the range are loaded to attribute them (see loadSpans).
const DefaultTraceWindow = time.Hour

// factColumns are the span columns attribution.Span holds, in factDest's
// order.
const factColumns = `project, trace_id, span_id, parent_span_id, start_ns, end_ns, name, status, service,
	span_type, provider, model, agent_name, conversation_id, user_id, task_name, tool_name, tool_call_id,
	step_id, attempt, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
	usage_mode, cost_total, cost_input, cost_cache_read, cost_cache_write, cost_output, cost_source,
	cost_confidence, usage_record, version`

// factDest is the scan destination of factColumns in f.
func factDest(f *attribution.Span) []any {
	return []any{&f.Project, &f.TraceID, &f.SpanID, &f.ParentSpanID, &f.StartNs, &f.EndNs, &f.Name,
		&f.Status, &f.Service, &f.SpanType, &f.Provider, &f.Model, &f.AgentName, &f.Conversation,
		&f.User, &f.TaskName, &f.ToolName, &f.ToolCallID, &f.StepID, &f.Attempt,
		&f.Usage.Input, &f.Usage.CacheRead, &f.Usage.CacheWrite, &f.Usage.Output, &f.Usage.Reasoning,
		&f.UsageMode, &f.Cost.Total, &f.Cost.Input, &f.Cost.CacheRead, &f.Cost.CacheWrite, &f.Cost.Output,
		&f.CostSource, &f.Confidence, &f.Record, &f.Version}
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
func (r *core) loadSpans(ctx context.Context, project string, from, to time.Time, window time.Duration) ([]attribution.Attributed, error) {
	return r.loadSpansShard(ctx, project, from, to, window, Shard{})
}

// loadSpansShard is loadSpans for the runs of one shard.
func (r *core) loadSpansShard(ctx context.Context, project string, from, to time.Time, window time.Duration, shard Shard) ([]attribution.Attributed, error) {
	if !to.After(from) {
		return nil, nil
	}
	q, args := loadSpansShardSQL(r.store, project, from, to, window, shard)
	return r.attributeFacts(ctx, q, args, from, to)
}

// loadSpansShardSQL builds loadSpansShard's statement: the spans (no
// FINAL) of shard's runs with a span starting in [from, to), within window
// of the range; project "" reads every project.
func loadSpansShardSQL(t tables, project string, from, to time.Time, window time.Duration, shard Shard) (string, []any) {
	fromSec := from.UTC().Truncate(time.Second)
	toSec := to.UTC().Truncate(time.Second)
	projectCond, args := "", []any{}
	if project != "" {
		projectCond = " AND project = ?"
	}
	shardCond, shardArgs := shard.cond()
	if shardCond != "" {
		shardCond = " AND " + shardCond
	}
	// span_facts is sorted by hour first: these reads cover an hour or a
	// few, which in the spans table (sorted by run) would read whole days.
	table := t.Table(schema.TableSpanFacts)
	// No FINAL: attribution.Attribute keeps each span's latest version itself. On
	// ClickHouse 18.16 FINAL merges in one thread and made this read 3–4×
	// slower (0.12–0.2 s against 0.04 s for a report's first hour at 10M
	// spans).
	q := "SELECT " + factColumns + "\nFROM " + table + "\nWHERE start >= ? AND start <= ?" + projectCond + shardCond +
		"\n  AND (project, trace_id) IN (SELECT project, trace_id FROM " + table +
		" WHERE start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ?" + projectCond + shardCond + ")"
	args = append(args, fromSec.Add(-window), toSec.Add(window))
	if project != "" {
		args = append(args, project)
	}
	args = append(args, shardArgs...)
	args = append(args, fromSec, toSec, uint64(from.UnixNano()), uint64(to.UnixNano()))
	if project != "" {
		args = append(args, project)
	}
	return q, append(args, shardArgs...)
}

// loadRunSpans is loadSpans for the given runs of one project only.
func (r *core) loadRunSpans(ctx context.Context, project string, traces []string, from, to time.Time, window time.Duration) ([]attribution.Attributed, error) {
	if !to.After(from) || len(traces) == 0 {
		return nil, nil
	}
	q, args := loadRunSpansSQL(r.store, project, traces, from, to, window)
	return r.attributeFacts(ctx, q, args, from, to)
}

// loadRunSpansSQL builds loadRunSpans' statement: the spans (FINAL) of the
// given runs starting within window of [from, to), the runs' key a
// PREWHERE (see reviewSpansSQL).
func loadRunSpansSQL(t tables, project string, traces []string, from, to time.Time, window time.Duration) (string, []any) {
	ids := clickhouse.GroupSet{Value: make([]any, len(traces))}
	for i, id := range traces {
		ids.Value[i] = id
	}
	q := "SELECT " + factColumns + "\nFROM " + final(t.Table(schema.TableSpans)) + "\nPREWHERE project = ? AND trace_id IN ?" +
		"\nWHERE start >= ? AND start <= ?"
	return q, []any{project, ids, from.UTC().Truncate(time.Second).Add(-window), to.UTC().Truncate(time.Second).Add(window)}
}

// attributeFacts runs q (which selects factColumns), attributes the spans
// (attribution.Attribute) and returns those starting in [from, to).
// Attribution keeps each span's highest version, what FINAL would keep, so q
// need not use FINAL.
func (r *core) attributeFacts(ctx context.Context, q string, args []any, from, to time.Time) ([]attribution.Attributed, error) {
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("load spans %s–%s: %w", from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	facts, err := scanAll(rows, factDest)
	if err != nil {
		return nil, fmt.Errorf("load spans: %w", err)
	}
	all := attribution.Attribute(facts)
	fromNs, toNs := uint64(from.UnixNano()), uint64(to.UnixNano())
	out := all[:0]
	for _, a := range all {
		if a.StartNs >= fromNs && a.StartNs < toNs {
			out = append(out, a)
		}
	}
	return out, nil
}

package query

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/schema"
)

// runsByRetries lists the runs sel selects sorted by retries, at most
// f.Limit+1 after the cursor, with their keys. Retries are classified by
// Go's rules (classifyRunTools, as on a run's detail), so ClickHouse lists
// the matching runs' ids and their tool spans, Go orders them, and the
// page's summaries are read by id.
func (r *core) runsByRetries(ctx context.Context, f RunFilter, sel runSelection, order runListOrder, after *cursor) ([]keyedRun, error) {
	matching, args := matchingRunsSQL(r.store, sel)
	rows, err := r.store.Conn().Query(ctx, matching, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	ids, err := scanAll(rows, func(s *string) []any { return []any{s} })
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	counts, err := r.runRetries(ctx, f.Project, "trace_id IN ("+matching+")", args)
	if err != nil {
		return nil, err
	}
	sort.Slice(ids, func(a, b int) bool {
		ra, rb := counts[ids[a]].retries, counts[ids[b]].retries
		if ra != rb {
			return (ra < rb) != order.desc
		}
		return (ids[a] < ids[b]) != order.desc
	})
	if after != nil {
		i := sort.Search(len(ids), func(i int) bool { return order.after(uint64(counts[ids[i]].retries), ids[i], *after) })
		ids = ids[i:]
	}
	ids = ids[:min(len(ids), f.Limit+1)]
	if len(ids) == 0 {
		return nil, nil
	}
	set := clickhouse.GroupSet{Value: make([]any, len(ids))}
	for i, id := range ids {
		set.Value[i] = id
	}
	q, args := runsByIDSQL(r.store, f.Project, set)
	rows, err = r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	found, err := scanAll(rows, (*runRow).dest)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	byID := make(map[string]RunSummary, len(found))
	for i := range found {
		byID[found[i].TraceID] = found[i].summary()
	}
	out := make([]keyedRun, 0, len(ids))
	for _, id := range ids {
		s, ok := byID[id]
		if !ok {
			continue // deleted between the two reads
		}
		c := counts[id]
		s.ToolRetries, s.ToolRepeats = &c.retries, &c.repeats
		out = append(out, keyedRun{s, uint64(c.retries)})
	}
	return out, nil
}

// retryCount is a run's classified tool calls.
type retryCount struct{ retries, repeats int }

// addRetries sets each run's ToolRetries and ToolRepeats.
func (r *core) addRetries(ctx context.Context, project string, runs []RunSummary) error {
	// In chunks: an IN list of every run of a big page would pass
	// ClickHouse's 256 KiB max_query_size.
	for len(runs) > 0 {
		chunk := runs[:min(outcomeChunk, len(runs))]
		runs = runs[len(chunk):]
		set := clickhouse.GroupSet{Value: make([]any, len(chunk))}
		lo, hi := chunk[0].Start, chunk[0].End
		for i := range chunk {
			set.Value[i] = chunk[i].TraceID
			lo, hi = minTime(lo, chunk[i].Start), maxTime(hi, chunk[i].End)
		}
		// Every span of a run starts within the run: bounding start prunes
		// the partitions of other days (without it, 1,000 runs took 1.5 s
		// over 30 days of 2M spans).
		counts, err := r.runRetries(ctx, project, "trace_id IN ? AND start >= ? AND start <= ?",
			[]any{set, lo.UTC().Truncate(time.Second), hi.UTC()})
		if err != nil {
			return err
		}
		for i := range chunk {
			c := counts[chunk[i].TraceID]
			chunk[i].ToolRetries, chunk[i].ToolRepeats = &c.retries, &c.repeats
		}
	}
	return nil
}

// runRetries classifies the tool calls of project's runs that cond (over
// trace_id, with args) selects, run by run, as a run's detail does
// (classifyRunTools over its tool spans in start order). Runs without tool
// calls are absent.
func (r *core) runRetries(ctx context.Context, project, cond string, args []any) (map[string]retryCount, error) {
	q, qargs := runRetriesSQL(r.store, project, cond, args)
	rows, err := r.store.Conn().Query(ctx, q, qargs...)
	if err != nil {
		return nil, fmt.Errorf("classify runs' tool calls: %w", err)
	}
	spans, err := scanAll(rows, func(s *schema.Span) []any {
		return []any{&s.TraceID, &s.SpanID, &s.ParentSpanID, &s.ToolName, &s.ToolCallID, &s.StepID, &s.ArgsHash,
			&s.Status, &s.StartNs, &s.DurationNs, &s.Attempt}
	})
	if err != nil {
		return nil, fmt.Errorf("classify runs' tool calls: %w", err)
	}
	out := map[string]retryCount{}
	for i := 0; i < len(spans); {
		j := i
		for j < len(spans) && spans[j].TraceID == spans[i].TraceID {
			spans[j].SpanType = schema.TypeTool
			j++
		}
		var c retryCount
		c.retries, c.repeats = classifyRunTools(spans[i:j], nil)
		out[spans[i].TraceID] = c
		i = j
	}
	return out, nil
}

// runRetriesSQL builds runRetries' statement: the tool spans of project's
// runs that cond (with args) selects, run by run in start order.
func runRetriesSQL(t tables, project, cond string, args []any) (string, []any) {
	q := "SELECT trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash, status, start_ns, duration_ns, attempt\nFROM " +
		final(t.Table(schema.TableSpans)) + "\nWHERE project = ? AND span_type = 'tool' AND " + cond +
		"\nORDER BY trace_id, start_ns, span_id"
	return q, append([]any{project}, args...)
}

// matchingRunsSQL builds the statement of the selected runs' trace ids,
// in no order.
func matchingRunsSQL(t tables, sel runSelection) (string, []any) {
	return "SELECT trace_id FROM (" + runAggregation(t, sel, "") + ")", sel.args()
}

// runsByIDSQL builds the statement of the summaries (runColumns) of the
// project's runs whose ids are in set.
func runsByIDSQL(t tables, project string, set clickhouse.GroupSet) (string, []any) {
	return runSummarySQL(t, runSelection{where: []string{"project = ?", "trace_id IN ?"}, whereArgs: []any{project, set}})
}

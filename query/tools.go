package query

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/tallyhq/tally/schema"
)

// Percentiles in this file come from ClickHouse's quantilesExact, which sorts
// the group's values and returns the one at 0-based position ⌊q·n⌋ (the
// largest value for q = 1). Tolerance: the result is exact for the samples it
// saw, but it may sit one rank above the textbook nearest-rank percentile
// (the ⌈q·n⌉-th smallest value): p95 of 100 samples is the 96th smallest,
// where nearest-rank says the 95th. quantileExact holds every value of a group
// in memory; groups are bounded by one tool or model over one time window.

// exampleRuns is how many example run ids a statistic carries per list.
const exampleRuns = 5

// Class says what a tool call was, as DESIGN.md defines retries. Exactly one
// class applies to each call: the retry rules are tried in order and the
// first that matches decides; a call no retry rule matches is a repeat when
// the same tool already succeeded with the same arguments, else an original.
type Class string

// The classes of a tool call.
const (
	// ClassOriginal is a first call: no retry rule matched and it repeats no
	// earlier successful call.
	ClassOriginal Class = "original"
	// ClassRetryAttempt is a call whose attempt attribute says attempt ≥ 2.
	ClassRetryAttempt Class = "retry_attempt"
	// ClassRetryCallID is a call whose tool call id an earlier tool span of the
	// same run already carried.
	ClassRetryCallID Class = "retry_call_id"
	// ClassRetryStep is a call whose step id an earlier tool span of the same
	// run already carried.
	ClassRetryStep Class = "retry_step"
	// ClassRetryAfterError is a call of a tool whose previous call under the
	// same parent span ended in error before this one started.
	ClassRetryAfterError Class = "retry_after_error"
	// ClassRepeat is a call with the same tool and arguments hash as an earlier
	// successful call of the run: a loop signal, not a retry.
	ClassRepeat Class = "repeat"
)

// Retry reports whether the class counts as a retry.
func (c Class) Retry() bool {
	switch c {
	case ClassRetryAttempt, ClassRetryCallID, ClassRetryStep, ClassRetryAfterError:
		return true
	}
	return false
}

// ToolCall is the part of a tool span that retry classification and tool
// statistics need.
type ToolCall struct {
	TraceID      string
	SpanID       string
	ParentSpanID string
	Tool         string
	CallID       string
	StepID       string
	ArgsHash     string
	Error        bool // the span's status is error
	StartNs      uint64
	DurationNs   uint64
	Attempt      uint32 // 0 unknown, 1 first try, ≥ 2 a retry
}

type siblingKey struct{ parent, tool string }
type argsKey struct{ tool, args string }

// ClassifyRetries classifies each call (the result is parallel to calls).
// Calls may come from many runs in any order; within a run they are taken
// in start order (ties broken by span id). The rules, first match deciding:
//
//  1. the attempt attribute says attempt ≥ 2;
//  2. an earlier tool span of the run has the same (non-empty) call id;
//  3. an earlier tool span of the run has the same (non-empty) step id;
//  4. the previous call of the same tool under the same parent span ended in
//     error before this call started. Only the latest earlier sibling call
//     counts: after a failed call was retried successfully, a later call of
//     the tool is a fresh call, not another retry.
//
// A call no rule matches is a repeat when an earlier call of the run with the
// same tool and (non-empty) arguments hash succeeded, else an original.
func ClassifyRetries(calls []ToolCall) []Class {
	out := make([]Class, len(calls))
	byTrace := map[string][]int{}
	for i := range calls {
		byTrace[calls[i].TraceID] = append(byTrace[calls[i].TraceID], i)
	}
	for _, idx := range byTrace {
		sort.SliceStable(idx, func(a, b int) bool {
			ca, cb := &calls[idx[a]], &calls[idx[b]]
			if ca.StartNs != cb.StartNs {
				return ca.StartNs < cb.StartNs
			}
			return ca.SpanID < cb.SpanID
		})
		seenCallID := map[string]bool{}
		seenStep := map[string]bool{}
		lastSibling := map[siblingKey]*ToolCall{}
		succeeded := map[argsKey]bool{}
		for _, i := range idx {
			c := &calls[i]
			prev := lastSibling[siblingKey{c.ParentSpanID, c.Tool}]
			switch {
			case c.Attempt >= 2:
				out[i] = ClassRetryAttempt
			case c.CallID != "" && seenCallID[c.CallID]:
				out[i] = ClassRetryCallID
			case c.StepID != "" && seenStep[c.StepID]:
				out[i] = ClassRetryStep
			case prev != nil && prev.Error && prev.StartNs+prev.DurationNs <= c.StartNs:
				out[i] = ClassRetryAfterError
			case c.ArgsHash != "" && succeeded[argsKey{c.Tool, c.ArgsHash}]:
				out[i] = ClassRepeat
			default:
				out[i] = ClassOriginal
			}
			if c.CallID != "" {
				seenCallID[c.CallID] = true
			}
			if c.StepID != "" {
				seenStep[c.StepID] = true
			}
			lastSibling[siblingKey{c.ParentSpanID, c.Tool}] = c
			if !c.Error && c.ArgsHash != "" {
				succeeded[argsKey{c.Tool, c.ArgsHash}] = true
			}
		}
	}
	return out
}

// Window selects spans of one project by start time: Since inclusive, Until
// exclusive. A zero Until means now; a zero Since means 24 hours before Until.
type Window struct {
	Project      string
	Since, Until time.Time
}

func (w Window) bounds() (since, until time.Time) {
	until = w.Until
	if until.IsZero() {
		until = time.Now()
	}
	since = w.Since
	if since.IsZero() {
		since = until.Add(-24 * time.Hour)
	}
	return since.UTC(), until.UTC()
}

// where is the WHERE clause selecting the window's spans: the DateTime
// column prunes partitions, the nanosecond columns make the bounds exact.
func (w Window) where() (string, []any) {
	since, until := w.bounds()
	return "project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ?",
		[]any{w.Project, since.Truncate(time.Second), until, uint64(since.UnixNano()), uint64(until.UnixNano())}
}

// ToolCalls loads the tool spans of a window, deduplicated, ordered by run
// and start time. Retries whose earlier attempt started before the window are
// still seen through the attempt attribute, but not through the other rules.
func (r *Reader) ToolCalls(ctx context.Context, w Window) ([]ToolCall, error) {
	where, args := w.where()
	q := "SELECT trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash," +
		" status = 'error', start_ns, duration_ns, attempt FROM " + r.store.Table(schema.TableSpans) +
		" FINAL WHERE " + where + " AND span_type = 'tool' ORDER BY trace_id, start_ns, span_id"
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("load tool calls: %w", err)
	}
	defer rows.Close()
	var calls []ToolCall
	for rows.Next() {
		var c ToolCall
		var isErr uint8
		if err := rows.Scan(&c.TraceID, &c.SpanID, &c.ParentSpanID, &c.Tool, &c.CallID, &c.StepID,
			&c.ArgsHash, &isErr, &c.StartNs, &c.DurationNs, &c.Attempt); err != nil {
			return nil, fmt.Errorf("scan tool call: %w", err)
		}
		c.Error = isErr == 1
		if c.Tool == "" {
			c.Tool = UnknownName
		}
		calls = append(calls, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load tool calls: %w", err)
	}
	return calls, nil
}

// UnknownName stands for a tool or model name a span did not carry.
const UnknownName = "unknown"

// ToolStats are one tool's figures over a window.
type ToolStats struct {
	Tool      string  `json:"tool"`
	Calls     int     `json:"calls"`
	Errors    int     `json:"errors"`
	Retries   int     `json:"retries"`
	Repeats   int     `json:"repeats"`
	RetryRate float64 `json:"retry_rate"` // Retries / Calls
	ErrorRate float64 `json:"error_rate"` // Errors / Calls
	// Duration percentiles in milliseconds (quantilesExact, see the tolerance
	// note at the top of this file).
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
	// Example runs, most recent first: runs with a retried call, runs with a
	// failed call, and the runs of the slowest calls.
	RetriedRuns []string `json:"retried_runs"`
	FailedRuns  []string `json:"failed_runs"`
	SlowestRuns []string `json:"slowest_runs"`
	// PerMinute splits the counts by the minute the calls started, oldest
	// first; filled only when ToolFilter.PerMinute is set.
	PerMinute []ToolMinute `json:"per_minute,omitempty"`
}

// ToolMinute counts one tool's calls that started in one minute.
type ToolMinute struct {
	Minute  time.Time `json:"minute"`
	Calls   int       `json:"calls"`
	Errors  int       `json:"errors"`
	Retries int       `json:"retries"`
}

// ToolFilter selects the tool statistics to compute.
type ToolFilter struct {
	Window
	Tool      string // only this tool when set
	PerMinute bool   // also split counts by minute
}

// Tools computes per-tool statistics over a window, sorted by tool name:
// counts and retry classification from the window's tool calls, duration
// percentiles in ClickHouse.
func (r *Reader) Tools(ctx context.Context, f ToolFilter) ([]ToolStats, error) {
	calls, err := r.ToolCalls(ctx, f.Window)
	if err != nil {
		return nil, err
	}
	classes := ClassifyRetries(calls)
	byTool := map[string]*ToolStats{}
	type example struct {
		trace string
		start uint64
		dur   uint64
	}
	retried, failed, all := map[string][]example{}, map[string][]example{}, map[string][]example{}
	minutes := map[string]map[time.Time]*ToolMinute{}
	for i := range calls {
		c := &calls[i]
		if f.Tool != "" && c.Tool != f.Tool {
			continue
		}
		s := byTool[c.Tool]
		if s == nil {
			s = &ToolStats{Tool: c.Tool}
			byTool[c.Tool] = s
			minutes[c.Tool] = map[time.Time]*ToolMinute{}
		}
		ex := example{c.TraceID, c.StartNs, c.DurationNs}
		s.Calls++
		all[c.Tool] = append(all[c.Tool], ex)
		var m *ToolMinute
		if f.PerMinute {
			at := nsTime(c.StartNs).Truncate(time.Minute)
			if m = minutes[c.Tool][at]; m == nil {
				m = &ToolMinute{Minute: at}
				minutes[c.Tool][at] = m
			}
			m.Calls++
		}
		if c.Error {
			s.Errors++
			failed[c.Tool] = append(failed[c.Tool], ex)
			if m != nil {
				m.Errors++
			}
		}
		switch {
		case classes[i].Retry():
			s.Retries++
			retried[c.Tool] = append(retried[c.Tool], ex)
			if m != nil {
				m.Retries++
			}
		case classes[i] == ClassRepeat:
			s.Repeats++
		}
	}
	recent := func(exs []example) []string {
		sort.SliceStable(exs, func(a, b int) bool { return exs[a].start > exs[b].start })
		return distinctTraces(exs, func(e example) string { return e.trace })
	}
	slowest := func(exs []example) []string {
		sort.SliceStable(exs, func(a, b int) bool { return exs[a].dur > exs[b].dur })
		return distinctTraces(exs, func(e example) string { return e.trace })
	}
	out := make([]ToolStats, 0, len(byTool))
	for tool, s := range byTool {
		s.RetryRate = float64(s.Retries) / float64(s.Calls)
		s.ErrorRate = float64(s.Errors) / float64(s.Calls)
		s.RetriedRuns = recent(retried[tool])
		s.FailedRuns = recent(failed[tool])
		s.SlowestRuns = slowest(all[tool])
		if f.PerMinute {
			for _, m := range minutes[tool] {
				s.PerMinute = append(s.PerMinute, *m)
			}
			sort.Slice(s.PerMinute, func(a, b int) bool { return s.PerMinute[a].Minute.Before(s.PerMinute[b].Minute) })
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Tool < out[b].Tool })
	if len(out) == 0 {
		return out, nil
	}
	if err := r.toolPercentiles(ctx, f, out); err != nil {
		return nil, err
	}
	return out, nil
}

// distinctTraces returns up to exampleRuns distinct trace ids in order.
func distinctTraces[E any](exs []E, trace func(E) string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, e := range exs {
		t := trace(e)
		if seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
		if len(out) == exampleRuns {
			break
		}
	}
	return out
}

// toolPercentiles fills the duration percentiles of stats (sorted by tool).
func (r *Reader) toolPercentiles(ctx context.Context, f ToolFilter, stats []ToolStats) error {
	where, args := f.where()
	q := "SELECT if(tool_name = '', ?, tool_name) AS tool, quantilesExact(0.5, 0.95, 0.99)(duration_ns / 1e6)" +
		" FROM " + r.store.Table(schema.TableSpans) + " FINAL WHERE " + where + " AND span_type = 'tool'" +
		" GROUP BY tool"
	rows, err := r.store.Conn().Query(ctx, q, append([]any{UnknownName}, args...)...)
	if err != nil {
		return fmt.Errorf("tool percentiles: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tool string
		var qs []float64
		if err := rows.Scan(&tool, &qs); err != nil {
			return fmt.Errorf("scan tool percentiles: %w", err)
		}
		i := sort.Search(len(stats), func(i int) bool { return stats[i].Tool >= tool })
		if i < len(stats) && stats[i].Tool == tool && len(qs) == 3 {
			stats[i].P50Ms, stats[i].P95Ms, stats[i].P99Ms = finite(qs[0]), finite(qs[1]), finite(qs[2])
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tool percentiles: %w", err)
	}
	return nil
}

// finite maps NaN and infinities (an empty group's quantile) to 0, which JSON
// can encode.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// ModelStats are one model's inference latency figures over a window.
type ModelStats struct {
	Model string `json:"model"`
	Calls int    `json:"calls"`
	// Duration percentiles of inference spans, milliseconds.
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
	P99Ms float64 `json:"p99_ms"`
	// Time-to-first-chunk percentiles over the calls that reported one.
	TTFCCalls int     `json:"ttfc_calls"`
	TTFCP50Ms float64 `json:"ttfc_p50_ms"`
	TTFCP95Ms float64 `json:"ttfc_p95_ms"`
	TTFCP99Ms float64 `json:"ttfc_p99_ms"`
	// SlowestRuns are the runs of the slowest calls, slowest first.
	SlowestRuns []string `json:"slowest_runs"`
}

// Models computes per-model inference latency over a window, sorted by model.
func (r *Reader) Models(ctx context.Context, w Window) ([]ModelStats, error) {
	where, args := w.where()
	spans := r.store.Table(schema.TableSpans)
	q := "SELECT if(model = '', ?, model) AS m, count()," +
		" quantilesExact(0.5, 0.95, 0.99)(duration_ns / 1e6), countIf(ttfc_ms > 0)," +
		" quantilesExactIf(0.5, 0.95, 0.99)(ttfc_ms, ttfc_ms > 0)" +
		" FROM " + spans + " FINAL WHERE " + where + " AND span_type = 'inference' GROUP BY m ORDER BY m"
	rows, err := r.store.Conn().Query(ctx, q, append([]any{UnknownName}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("model latency: %w", err)
	}
	defer rows.Close()
	out := []ModelStats{}
	for rows.Next() {
		var s ModelStats
		var calls, ttfcCalls uint64
		var d, t []float64
		if err := rows.Scan(&s.Model, &calls, &d, &ttfcCalls, &t); err != nil {
			return nil, fmt.Errorf("scan model latency: %w", err)
		}
		s.Calls, s.TTFCCalls = int(calls), int(ttfcCalls)
		if len(d) == 3 {
			s.P50Ms, s.P95Ms, s.P99Ms = finite(d[0]), finite(d[1]), finite(d[2])
		}
		if len(t) == 3 && ttfcCalls > 0 {
			s.TTFCP50Ms, s.TTFCP95Ms, s.TTFCP99Ms = finite(t[0]), finite(t[1]), finite(t[2])
		}
		s.SlowestRuns = []string{}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("model latency: %w", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	// The slowest calls' runs, a few per model.
	q = "SELECT if(model = '', ?, model) AS m, trace_id FROM " + spans + " FINAL WHERE " + where +
		" AND span_type = 'inference' ORDER BY duration_ns DESC, trace_id LIMIT " +
		fmt.Sprint(exampleRuns*4) + " BY m"
	rows2, err := r.store.Conn().Query(ctx, q, append([]any{UnknownName}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("slowest model calls: %w", err)
	}
	defer rows2.Close()
	for rows2.Next() {
		var m, trace string
		if err := rows2.Scan(&m, &trace); err != nil {
			return nil, fmt.Errorf("scan slowest model call: %w", err)
		}
		i := sort.Search(len(out), func(i int) bool { return out[i].Model >= m })
		if i < len(out) && out[i].Model == m && len(out[i].SlowestRuns) < exampleRuns &&
			!contains(out[i].SlowestRuns, trace) {
			out[i].SlowestRuns = append(out[i].SlowestRuns, trace)
		}
	}
	if err := rows2.Err(); err != nil {
		return nil, fmt.Errorf("slowest model calls: %w", err)
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// RunCost is one run's cost within a window.
type RunCost struct {
	TraceID string    `json:"trace_id"`
	Start   time.Time `json:"start"`
	CostUSD float64   `json:"cost_usd"`
}

// RunsOverBudget lists the runs whose spans in the window cost more than
// budgetUSD in total (cost_total summed per run), most expensive first, at
// most limit. A run straddling the window's start counts only its spans
// inside the window.
func (r *Reader) RunsOverBudget(ctx context.Context, w Window, budgetUSD float64, limit int) ([]RunCost, error) {
	where, args := w.where()
	q := "SELECT trace_id, min(start_ns) AS s, sum(cost_total) AS c FROM " + r.store.Table(schema.TableSpans) +
		" FINAL WHERE " + where + " GROUP BY trace_id HAVING c > ? ORDER BY c DESC, trace_id LIMIT " + fmt.Sprint(max(limit, 1))
	rows, err := r.store.Conn().Query(ctx, q, append(args, budgetUSD)...)
	if err != nil {
		return nil, fmt.Errorf("runs over budget: %w", err)
	}
	defer rows.Close()
	out := []RunCost{}
	for rows.Next() {
		var rc RunCost
		var start uint64
		if err := rows.Scan(&rc.TraceID, &start, &rc.CostUSD); err != nil {
			return nil, fmt.Errorf("scan run cost: %w", err)
		}
		rc.Start = nsTime(start)
		out = append(out, rc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("runs over budget: %w", err)
	}
	return out, nil
}

// RepeatLoop is a run that called one tool with the same arguments, and
// succeeded, Calls times.
type RepeatLoop struct {
	Tool     string `json:"tool"`
	TraceID  string `json:"trace_id"`
	ArgsHash string `json:"args_hash"`
	Calls    int    `json:"calls"`
}

// RepeatLoops lists (run, tool, arguments) triples with at least minCalls
// successful calls in the window, most calls first, at most limit. Failed
// calls are left out: retrying a failing call is not a no-progress loop.
func (r *Reader) RepeatLoops(ctx context.Context, w Window, minCalls, limit int) ([]RepeatLoop, error) {
	where, args := w.where()
	q := "SELECT if(tool_name = '', ?, tool_name) AS tool, trace_id, args_hash, count() AS n FROM " +
		r.store.Table(schema.TableSpans) + " FINAL WHERE " + where +
		" AND span_type = 'tool' AND args_hash != '' AND status != 'error'" +
		" GROUP BY tool, trace_id, args_hash HAVING n >= ? ORDER BY n DESC, tool, trace_id LIMIT " + fmt.Sprint(max(limit, 1))
	rows, err := r.store.Conn().Query(ctx, q, append(append([]any{UnknownName}, args...), uint64(max(minCalls, 1)))...)
	if err != nil {
		return nil, fmt.Errorf("repeat loops: %w", err)
	}
	defer rows.Close()
	out := []RepeatLoop{}
	for rows.Next() {
		var l RepeatLoop
		var n uint64
		if err := rows.Scan(&l.Tool, &l.TraceID, &l.ArgsHash, &n); err != nil {
			return nil, fmt.Errorf("scan repeat loop: %w", err)
		}
		l.Calls = int(n)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("repeat loops: %w", err)
	}
	return out, nil
}

// UsageMinute is the cache-read tokens and cost of one (agent, model) in one
// minute.
type UsageMinute struct {
	Agent           string
	Model           string
	Minute          time.Time
	CacheReadTokens uint64
	CostUSD         float64
}

// UsageByMinute sums cache-read tokens (inference spans with their own usage,
// as in run totals) and cost (every span) per agent, model and minute.
func (r *Reader) UsageByMinute(ctx context.Context, w Window) ([]UsageMinute, error) {
	where, args := w.where()
	q := "SELECT agent_name, model, toStartOfMinute(start) AS minute," +
		" sumIf(cache_read_tokens, usage_mode NOT IN ('', 'aggregated')), sum(cost_total)" +
		" FROM " + r.store.Table(schema.TableSpans) + " FINAL WHERE " + where +
		" AND (usage_mode NOT IN ('', 'aggregated') OR cost_total != 0)" +
		" GROUP BY agent_name, model, minute ORDER BY minute, agent_name, model"
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("usage by minute: %w", err)
	}
	defer rows.Close()
	var out []UsageMinute
	for rows.Next() {
		var u UsageMinute
		if err := rows.Scan(&u.Agent, &u.Model, &u.Minute, &u.CacheReadTokens, &u.CostUSD); err != nil {
			return nil, fmt.Errorf("scan usage minute: %w", err)
		}
		u.Minute = u.Minute.UTC()
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("usage by minute: %w", err)
	}
	return out, nil
}

// Projects lists the projects with spans started at or after since.
func (r *Reader) Projects(ctx context.Context, since time.Time) ([]string, error) {
	q := "SELECT DISTINCT project FROM " + r.store.Table(schema.TableSpans) + " WHERE start >= ? ORDER BY project"
	rows, err := r.store.Conn().Query(ctx, q, since.UTC().Truncate(time.Second))
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("scan project: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return out, nil
}

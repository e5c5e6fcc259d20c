package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/schema"
)

// Percentiles in this file follow ClickHouse's quantilesExact, which sorts
// the group's values and returns the one at 0-based position ⌊q·n⌋ (the
// largest value for q = 1): the models' in ClickHouse, the tools' in Go
// by the same rule (exactMs). Tolerance: the result is exact for the samples
// it saw, but it may sit one rank above the textbook nearest-rank percentile
// (the ⌈q·n⌉-th smallest value): p95 of 100 samples is the 96th smallest,
// where nearest-rank says the 95th. Both hold every value of a group in
// memory (8 bytes a call); groups are bounded by one tool or model over one
// time window.

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

// where is the WHERE clause selecting the window's spans in span_facts
// (sorted by hour first): the DateTime column prunes partitions and selects
// the hours' key ranges, the nanosecond columns make the bounds exact.
func (w Window) where() (string, []any) {
	since, until := w.bounds()
	return "project = ? AND start >= ? AND start <= ? AND start_ns >= ? AND start_ns < ?",
		[]any{w.Project, since.Truncate(time.Second), until, uint64(since.UnixNano()), uint64(until.UnixNano())}
}

// ToolCalls loads the tool spans of a window, deduplicated, ordered by run
// and start time. Retries whose earlier attempt started before the window are
// still seen through the attempt attribute, but not through the other rules.
func (r ToolReader) ToolCalls(ctx context.Context, w Window) ([]attribution.ToolCall, error) {
	q, args := toolCallsSQL(r.store, w)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("load tool calls: %w", err)
	}
	type row struct {
		call  attribution.ToolCall
		isErr uint8
	}
	read, err := scanAll(rows, func(x *row) []any {
		c := &x.call
		return []any{&c.TraceID, &c.SpanID, &c.ParentSpanID, &c.Tool, &c.CallID, &c.StepID,
			&c.ArgsHash, &x.isErr, &c.StartNs, &c.DurationNs, &c.Attempt}
	})
	if err != nil {
		return nil, fmt.Errorf("load tool calls: %w", err)
	}
	var calls []attribution.ToolCall
	for _, x := range read {
		c := x.call
		c.Error = x.isErr == 1
		if c.Tool == "" {
			c.Tool = UnknownName
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// toolCallsSQL builds ToolCalls' statement: the window's tool spans
// (FINAL), by run and start time.
func toolCallsSQL(t tables, w Window) (string, []any) {
	where, args := w.where()
	q := "SELECT trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash," +
		" status = 'error', start_ns, duration_ns, attempt FROM " + final(t.Table(schema.TableSpanFacts)) +
		" WHERE " + where + " AND span_type = 'tool' ORDER BY trace_id, start_ns, span_id"
	return q, args
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

// exampleRuns is how many example run ids a statistic carries per list.
const exampleRuns = 5

// Tools computes per-tool statistics over a window, sorted by tool name, in
// one pass over the window's deduplicated tool spans (classifyWindow): the
// rows that retry classification loads anyway, every call of a run
// together, give calls, errors, duration percentiles, the per-minute split
// and the example runs as well. Retries and repeats are decided in one
// place, Go's attribution.RetryClassifier.
//
// One pass, not a statement per figure: each statement read every span row
// of the window (span_facts is sorted by hour, then run), so at a 100M-span
// store's density the hour's three statements cost three reads of its
// 137k rows. The percentiles need every duration at once: Go keeps them
// for a window of one part (classifyPartCalls calls, 8 bytes each); a
// larger window's come from ClickHouse (toolPercentilesSQL), read beside
// the classification, so that Go's memory stays bounded by a part.
func (r ToolReader) Tools(ctx context.Context, f ToolFilter) ([]ToolStats, error) {
	parts, err := r.classifyParts(ctx, f.Window)
	if err != nil {
		return nil, err
	}
	acc := newToolTally(f, len(parts) == 1)
	// A failed classification stops the percentiles' read too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		pct    map[string][3]float64
		pctErr error
		done   = make(chan struct{})
	)
	go func() {
		defer close(done)
		if len(parts) > 1 {
			pct, pctErr = r.toolPercentiles(ctx, f)
		}
	}()
	if err = r.classifyWindow(ctx, f.Window, parts, acc.add); err != nil {
		cancel()
	}
	<-done
	if err := errors.Join(err, pctErr); err != nil {
		return nil, err
	}
	return acc.stats(pct), nil
}

// toolPercentiles reads per tool the duration percentiles (p50, p95, p99,
// milliseconds) of the window's deduplicated tool spans.
func (r *core) toolPercentiles(ctx context.Context, f ToolFilter) (map[string][3]float64, error) {
	q, args := toolPercentilesSQL(r.store, f)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("tool percentiles: %w", err)
	}
	type row struct {
		tool string
		qs   []float64
	}
	found, err := scanAll(rows, func(x *row) []any { return []any{&x.tool, &x.qs} })
	if err != nil {
		return nil, fmt.Errorf("tool percentiles: %w", err)
	}
	out := make(map[string][3]float64, len(found))
	for _, x := range found {
		if len(x.qs) == 3 {
			out[x.tool] = [3]float64{finite(x.qs[0]), finite(x.qs[1]), finite(x.qs[2])}
		}
	}
	return out, nil
}

// toolPercentilesSQL builds toolPercentiles' statement.
func toolPercentilesSQL(t tables, f ToolFilter) (string, []any) {
	where, args := f.where()
	args = append([]any{UnknownName}, args...)
	if f.Tool != "" {
		where += " AND if(tool_name = '', ?, tool_name) = ?"
		args = append(args, UnknownName, f.Tool)
	}
	q := `SELECT if(tool_name = '', ?, tool_name) AS tool, quantilesExact(0.5, 0.95, 0.99)(duration_ns / 1e6)
FROM (
	SELECT trace_id, span_id, tool_name, duration_ns
	FROM ` + t.Table(schema.TableSpanFacts) + `
	WHERE ` + where + ` AND span_type = 'tool'
	` + onePerSpan + `)
GROUP BY tool`
	return q, args
}

// toolTally adds up Tools' figures call by call, as classifyWindow visits
// them (all of a run's calls one after the other).
type toolTally struct {
	f         ToolFilter
	durations bool // keep every call's duration, for the percentiles
	tools     map[string]*oneTool
	trace     string     // the run being visited
	inRun     []*oneTool // the tools the run being visited called
	scratch   ToolMinute // the minute counted into when minutes were not asked for
}

// oneTool is one tool's figures so far.
type oneTool struct {
	stats     ToolStats
	durations []uint64 // every call's duration, for the percentiles
	minutes   map[time.Time]*ToolMinute
	retried   []example
	slowest   topRuns // runs by their slowest call of the tool
	failed    topRuns // runs by their latest failed call of the tool
	// The run being visited: its slowest call, its latest failed call.
	runMax, runLastErr uint64
	runFailed, inRun   bool
}

// newToolTally starts the figures of f; durations says whether Go computes
// the percentiles (Tools).
func newToolTally(f ToolFilter, durations bool) *toolTally {
	return &toolTally{f: f, durations: durations, tools: map[string]*oneTool{}}
}

// add counts one classified call.
func (t *toolTally) add(c *windowCall, class attribution.Class) {
	if c.trace != t.trace {
		t.endRun()
		t.trace = c.trace
	}
	if t.f.Tool != "" && c.tool != t.f.Tool {
		return
	}
	o := t.tools[c.tool]
	if o == nil {
		o = &oneTool{stats: ToolStats{Tool: c.tool}, minutes: map[time.Time]*ToolMinute{}}
		t.tools[c.tool] = o
	}
	if !o.inRun {
		o.inRun, o.runMax, o.runLastErr, o.runFailed = true, 0, 0, false
		t.inRun = append(t.inRun, o)
	}
	call := &c.call
	m := &t.scratch
	if t.f.PerMinute {
		at := nsTime(call.StartNs).Truncate(time.Minute)
		if m = o.minutes[at]; m == nil {
			m = &ToolMinute{Minute: at}
			o.minutes[at] = m
		}
	}
	o.stats.Calls++
	m.Calls++
	if t.durations {
		o.durations = append(o.durations, call.DurationNs)
	}
	o.runMax = max(o.runMax, call.DurationNs)
	if call.Error {
		o.stats.Errors++
		m.Errors++
		o.runLastErr, o.runFailed = max(o.runLastErr, call.StartNs), true
	}
	switch class {
	case attribution.ClassRepeat:
		o.stats.Repeats++
	case attribution.ClassOriginal:
	default:
		o.stats.Retries++
		m.Retries++
		o.retried = append(o.retried, example{c.trace, call.StartNs})
	}
}

// endRun offers the run just visited to its tools' example runs.
func (t *toolTally) endRun() {
	for _, o := range t.inRun {
		o.slowest.offer(o.runMax, t.trace)
		if o.runFailed {
			o.failed.offer(o.runLastErr, t.trace)
		}
		o.inRun = false
	}
	t.inRun = t.inRun[:0]
}

// stats returns the tools' figures, sorted by tool name; pct are the
// percentiles per tool when Go did not keep the durations.
func (t *toolTally) stats(pct map[string][3]float64) []ToolStats {
	t.endRun()
	out := make([]ToolStats, 0, len(t.tools))
	for _, o := range t.tools {
		s := o.stats
		s.RetryRate = float64(s.Retries) / float64(s.Calls)
		s.ErrorRate = float64(s.Errors) / float64(s.Calls)
		if t.durations {
			slices.Sort(o.durations)
			s.P50Ms, s.P95Ms, s.P99Ms = exactMs(o.durations, 0.5), exactMs(o.durations, 0.95), exactMs(o.durations, 0.99)
		} else {
			q := pct[s.Tool]
			s.P50Ms, s.P95Ms, s.P99Ms = q[0], q[1], q[2]
		}
		s.SlowestRuns, s.FailedRuns, s.RetriedRuns = o.slowest.traces(), o.failed.traces(), recentRuns(o.retried)
		if t.f.PerMinute {
			for _, m := range o.minutes {
				s.PerMinute = append(s.PerMinute, *m)
			}
			sort.Slice(s.PerMinute, func(i, j int) bool { return s.PerMinute[i].Minute.Before(s.PerMinute[j].Minute) })
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// exactMs is ClickHouse's quantileExact of level q over sorted durations
// in nanoseconds, in milliseconds: the value at 0-based position ⌊q·n⌋
// (the largest for q = 1), as the note at the top of this file says; 0
// for no values.
func exactMs(sorted []uint64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := len(sorted) - 1
	if q < 1 {
		i = min(int(q*float64(len(sorted))), i)
	}
	return float64(sorted[i]) / 1e6
}

// topRuns keeps the exampleRuns runs of the greatest values, greatest
// first and, between equal values, the greatest trace id first: the order
// ClickHouse's arrayReverseSort of (value, trace_id) pairs gives.
type topRuns []example

// offer counts a run's value.
func (t *topRuns) offer(value uint64, trace string) {
	above := func(e example) bool { return e.start > value || e.start == value && e.trace > trace }
	i := 0
	for i < len(*t) && above((*t)[i]) {
		i++
	}
	if i == exampleRuns {
		return
	}
	if len(*t) < exampleRuns {
		*t = append(*t, example{})
	}
	copy((*t)[i+1:], (*t)[i:])
	(*t)[i] = example{trace, value}
}

// traces are the kept runs' ids, in order.
func (t topRuns) traces() []string {
	out := make([]string, len(t))
	for i, e := range t {
		out[i] = e.trace
	}
	return out
}

// example is a run in which a call of interest started at start (ns), or,
// in topRuns, a run and its value.
type example struct {
	trace string
	start uint64
}

// recentRuns returns up to exampleRuns distinct runs, most recent call first.
func recentRuns(exs []example) []string {
	sort.SliceStable(exs, func(a, b int) bool {
		if exs[a].start != exs[b].start {
			return exs[a].start > exs[b].start
		}
		return exs[a].trace < exs[b].trace
	})
	out := []string{}
	seen := map[string]bool{}
	for _, e := range exs {
		if seen[e.trace] {
			continue
		}
		seen[e.trace] = true
		out = append(out, e.trace)
		if len(out) == exampleRuns {
			break
		}
	}
	return out
}

// windowCall is one call of a run classifyWindow classified: its run, its
// tool's name and the call as the classifier saw it (times in ns).
type windowCall struct {
	trace, tool string
	call        attribution.KeyedCall
}

// classifyPartCalls is about how many tool calls one part of classifyWindow
// groups by run in the store. The grouping holds every call of its part
// until the last one is read: the alerts exporter's window under the
// bench's 2× overload (15 minutes of unsettled runs) held 117 MiB in the
// embedded engine in one statement, the engine's peak.
const classifyPartCalls = 100_000

// classifyWindow classifies the tool calls in the window of every run with
// attribution.RetryClassifier, the one place the retry rules are decided.
// Each pass over the window's deduplicated tool spans (LIMIT 1 BY, see
// onePerSpan) groups them per run and unfolds them again (ARRAY JOIN),
// so a run's calls arrive together as compact rows: ids and arguments come as
// cityHash64 keys (see attribution.KeyedCall). A window of more than
// classifyPartCalls calls is read in parts of the runs by trace id
// (classifyParts), each run whole in one of them. visit sees every call.
func (r *core) classifyWindow(ctx context.Context, w Window, parts []Shard, visit func(c *windowCall, class attribution.Class)) error {
	rc := attribution.NewRetryClassifier()
	toolKeys := map[string]uint64{}
	for _, part := range parts {
		if err := r.classifyPart(ctx, w, part, rc, toolKeys, visit); err != nil {
			return err
		}
	}
	return nil
}

// classifyParts is the parts classifyWindow reads w's calls in: one while
// the window holds at most classifyPartCalls (or the reader's
// WithClassifyPartCalls) tool span rows, duplicate deliveries not yet
// merged included; else ranges of trace ids of at most that many rows
// each (prefixShards). A range, unlike a shard by hash, lets each part's
// read skip the granules of every hour outside it: a day at a 100M-span
// store's density in 12 parts by hash read its 3.4M rows 13 times.
func (r *core) classifyParts(ctx context.Context, w Window) ([]Shard, error) {
	q, args := windowToolRowsSQL(r.store, w)
	var n uint64
	if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return nil, fmt.Errorf("count tool calls: %w", err)
	}
	per := uint64(cmp.Or(r.classifyPartCalls, classifyPartCalls))
	if n <= per {
		return []Shard{{}}, nil
	}
	where, args := w.where()
	q, args = prefixCountsSQL(r.store, where+" AND span_type = 'tool'", args)
	return r.prefixShards(ctx, q, args, per, n)
}

// windowToolRowsSQL builds classifyParts' count of the window's tool span
// rows.
func windowToolRowsSQL(t tables, w Window) (string, []any) {
	where, args := w.where()
	return "SELECT count() FROM " + t.Table(schema.TableSpanFacts) + " WHERE " + where + " AND span_type = 'tool'", args
}

// classifyPart classifies the calls of one part of w's runs (classifyWindow),
// with rc and the tools' keys shared by the parts.
func (r *core) classifyPart(ctx context.Context, w Window, part Shard, rc *attribution.RetryClassifier,
	toolKeys map[string]uint64, visit func(c *windowCall, class attribution.Class)) error {
	q, args := classifyWindowSQL(r.store, w, part)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("classify tool calls: %w", err)
	}
	defer rows.Close()
	type row struct {
		windowCall
		spanID string
	}
	var (
		run     []row
		calls   []attribution.KeyedCall
		classes []attribution.Class
	)
	flush := func() {
		// slices.SortFunc, not sort.Slice: the rows are moved by the
		// compiler's code for their type rather than by reflection (a
		// fifth of the pass's CPU at a 100M-span store's density).
		slices.SortFunc(run, func(a, b row) int {
			return cmp.Or(cmp.Compare(a.call.StartNs, b.call.StartNs), strings.Compare(a.spanID, b.spanID))
		})
		calls, classes = calls[:0], classes[:0]
		for i := range run {
			calls = append(calls, run[i].call)
			classes = append(classes, "")
		}
		rc.ClassifyRun(calls, classes)
		for i := range run {
			visit(&run[i].windowCall, classes[i])
		}
		run = run[:0]
	}
	// Streamed, not scanAll: a window's tool calls are classified run by
	// run as they arrive, so only one run is held at a time.
	for rows.Next() {
		var x row
		var isErr uint8
		if err := rows.Scan(&x.trace, &x.spanID, &x.tool, &x.call.Parent, &x.call.CallID, &x.call.StepID,
			&x.call.ArgsHash, &isErr, &x.call.StartNs, &x.call.DurationNs, &x.call.Attempt); err != nil {
			return fmt.Errorf("scan tool call: %w", err)
		}
		if len(run) > 0 && run[0].trace != x.trace {
			flush()
		}
		k, ok := toolKeys[x.tool]
		if !ok {
			k = uint64(len(toolKeys) + 1)
			toolKeys[x.tool] = k
		}
		x.call.Tool, x.call.Error = k, isErr == 1
		run = append(run, x)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("classify tool calls: %w", err)
	}
	if len(run) > 0 {
		flush()
	}
	return nil
}

// classifyWindowSQL builds classifyPart's statement: the deduplicated tool
// spans of the window's runs in part grouped per run and unfolded again, as
// compact rows.
func classifyWindowSQL(t tables, w Window, part Shard) (string, []any) {
	where, args := w.where()
	if c, cargs := part.cond(); c != "" {
		where, args = where+" AND "+c, append(args, cargs...)
	}
	q := `SELECT trace_id, a_span, a_tool, a_parent, a_call, a_step, a_args, a_err, a_start, a_dur, a_attempt
FROM (
	SELECT trace_id, groupArray(span_id) AS a_span, groupArray(tool) AS a_tool, groupArray(parent) AS a_parent,
		groupArray(call) AS a_call, groupArray(step) AS a_step, groupArray(args) AS a_args, groupArray(err) AS a_err,
		groupArray(start_ns) AS a_start, groupArray(duration_ns) AS a_dur, groupArray(attempt) AS a_attempt
	FROM (
		SELECT trace_id, span_id, if(tool_name = '', ?, tool_name) AS tool, cityHash64(parent_span_id) AS parent,
			if(tool_call_id = '', toUInt64(0), cityHash64(tool_call_id)) AS call,
			if(step_id = '', toUInt64(0), cityHash64(step_id)) AS step,
			if(args_hash = '', toUInt64(0), cityHash64(args_hash)) AS args,
			status = 'error' AS err, start_ns, duration_ns, attempt
		FROM ` + t.Table(schema.TableSpanFacts) + `
		WHERE ` + where + ` AND span_type = 'tool'
		` + onePerSpan + `)
	GROUP BY trace_id)
ARRAY JOIN a_span, a_tool, a_parent, a_call, a_step, a_args, a_err, a_start, a_dur, a_attempt`
	return q, append([]any{UnknownName}, args...)
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

// Models computes per-model inference latency over a window, sorted by
// model: counts and percentiles over the window's deduplicated inference
// spans (LIMIT 1 BY, see onePerSpan) and the runs of the slowest calls, in
// one statement (modelLatencySQL).
func (r ToolReader) Models(ctx context.Context, w Window) ([]ModelStats, error) {
	q, args := modelLatencySQL(r.store, w)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("model latency: %w", err)
	}
	type row struct {
		model            string
		calls, ttfcCalls uint64
		d, t             []float64
		slowest          []string
	}
	found, err := scanAll(rows, func(r *row) []any {
		return []any{&r.model, &r.calls, &r.d, &r.ttfcCalls, &r.t, &r.slowest}
	})
	if err != nil {
		return nil, fmt.Errorf("model latency: %w", err)
	}
	out := make([]ModelStats, 0, len(found))
	for _, r := range found {
		s := ModelStats{Model: r.model, Calls: int(r.calls), TTFCCalls: int(r.ttfcCalls), SlowestRuns: nonNil(r.slowest)}
		if len(r.d) == 3 {
			s.P50Ms, s.P95Ms, s.P99Ms = finite(r.d[0]), finite(r.d[1]), finite(r.d[2])
		}
		if len(r.t) == 3 && r.ttfcCalls > 0 {
			s.TTFCP50Ms, s.TTFCP95Ms, s.TTFCP99Ms = finite(r.t[0]), finite(r.t[1]), finite(r.t[2])
		}
		out = append(out, s)
	}
	return out, nil
}

// modelLatencySQL builds Models' statement: the window's deduplicated
// inference spans grouped by model and run, then by model. The inner
// grouping gives each run's slowest call per model and the run's
// durations and positive times to first chunk as arrays, which the
// percentiles take whole (the -Array combinator): the same values as one
// row per call, and one read of the window's rows for both the figures
// and the slowest runs, where two statements read them twice.
func modelLatencySQL(t tables, w Window) (string, []any) {
	where, args := w.where()
	q := `SELECT m, sum(n), quantilesExactArray(0.5, 0.95, 0.99)(ds), sum(tn), quantilesExactArray(0.5, 0.95, 0.99)(ts),
	arrayMap(t -> tupleElement(t, 2), arraySlice(arrayReverseSort(groupArray((max_dur, trace_id))), 1, ` + fmt.Sprint(exampleRuns) + `))
FROM (
	SELECT if(model = '', ?, model) AS m, trace_id, count() AS n, groupArray(duration_ns / 1e6) AS ds,
		countIf(ttfc_ms > 0) AS tn, groupArrayIf(ttfc_ms, ttfc_ms > 0) AS ts, max(duration_ns) AS max_dur
	FROM (
		SELECT trace_id, span_id, model, duration_ns, ttfc_ms FROM ` + t.Table(schema.TableSpanFacts) + `
		WHERE ` + where + ` AND span_type = 'inference'
		` + onePerSpan + `)
	GROUP BY m, trace_id)
GROUP BY m ORDER BY m`
	return q, append([]any{UnknownName}, args...)
}

// RunCost is one run's cost within a window.
type RunCost struct {
	TraceID string    `json:"trace_id"`
	Start   time.Time `json:"start"`
	CostUSD float64   `json:"cost_usd"`
}

// RunsOverBudget lists the runs whose spans in the window cost more than
// budgetUSD in total (each call counted once, see attribution/counted.go), most expensive first, at
// most limit. A run straddling the window's start counts only its spans
// inside the window.
func (r ToolReader) RunsOverBudget(ctx context.Context, w Window, budgetUSD float64, limit int) ([]RunCost, error) {
	q, args := runsOverBudgetSQL(r.store, w, budgetUSD, limit)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("runs over budget: %w", err)
	}
	type row struct {
		cost  RunCost
		start uint64
	}
	read, err := scanAll(rows, func(x *row) []any { return []any{&x.cost.TraceID, &x.start, &x.cost.CostUSD} })
	if err != nil {
		return nil, fmt.Errorf("runs over budget: %w", err)
	}
	out := make([]RunCost, len(read))
	for i, x := range read {
		out[i] = x.cost
		out[i].Start = nsTime(x.start)
	}
	return out, nil
}

// runsOverBudgetSQL builds RunsOverBudget's statement.
func runsOverBudgetSQL(t tables, w Window, budgetUSD float64, limit int) (string, []any) {
	where, args := w.where()
	q := "SELECT trace_id, s, c_total FROM (SELECT trace_id, min(start_ns) AS s," + runCountedSQL + "\nFROM " + final(t.Table(schema.TableSpanFacts)) +
		" WHERE " + where + " GROUP BY trace_id HAVING c_total > ?) ORDER BY c_total DESC, trace_id LIMIT " + fmt.Sprint(max(limit, 1))
	return q, append(args, budgetUSD)
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
func (r ToolReader) RepeatLoops(ctx context.Context, w Window, minCalls, limit int) ([]RepeatLoop, error) {
	q, args := repeatLoopsSQL(r.store, w, minCalls, limit)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("repeat loops: %w", err)
	}
	type row struct {
		loop RepeatLoop
		n    uint64
	}
	read, err := scanAll(rows, func(x *row) []any { return []any{&x.loop.Tool, &x.loop.TraceID, &x.loop.ArgsHash, &x.n} })
	if err != nil {
		return nil, fmt.Errorf("repeat loops: %w", err)
	}
	out := make([]RepeatLoop, len(read))
	for i, x := range read {
		out[i] = x.loop
		out[i].Calls = int(x.n)
	}
	return out, nil
}

// repeatLoopsSQL builds RepeatLoops' statement.
func repeatLoopsSQL(t tables, w Window, minCalls, limit int) (string, []any) {
	where, args := w.where()
	// Deduplicated by counting distinct span ids: the rows of one span differ
	// only in version and cost, so a duplicate never changes the filters.
	q := "SELECT if(tool_name = '', ?, tool_name) AS tool, trace_id, args_hash, uniqExact(span_id) AS n FROM " +
		t.Table(schema.TableSpanFacts) + " WHERE " + where +
		" AND span_type = 'tool' AND args_hash != '' AND status != 'error'" +
		" GROUP BY tool, trace_id, args_hash HAVING n >= ? ORDER BY n DESC, tool, trace_id LIMIT " + fmt.Sprint(max(limit, 1))
	return q, append(append([]any{UnknownName}, args...), uint64(max(minCalls, 1)))
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
func (r ToolReader) UsageByMinute(ctx context.Context, w Window) ([]UsageMinute, error) {
	q, args := usageByMinuteSQL(r.store, w)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("usage by minute: %w", err)
	}
	out, err := scanAll(rows, func(u *UsageMinute) []any {
		return []any{&u.Agent, &u.Model, &u.Minute, &u.CacheReadTokens, &u.CostUSD}
	})
	if err != nil {
		return nil, fmt.Errorf("usage by minute: %w", err)
	}
	for i := range out {
		out[i].Minute = out[i].Minute.UTC()
	}
	return out, nil
}

// usageByMinuteSQL builds UsageByMinute's statement.
func usageByMinuteSQL(t tables, w Window) (string, []any) {
	where, args := w.where()
	q := "SELECT agent_name, model, toStartOfMinute(start) AS minute," +
		" sumIf(cache_read_tokens, usage_mode NOT IN ('', 'aggregated')), sumIf(cost_total, usage_mode != 'aggregated')" +
		" FROM " + final(t.Table(schema.TableSpanFacts)) + " WHERE " + where +
		" AND (usage_mode NOT IN ('', 'aggregated') OR (cost_total != 0 AND usage_mode = ''))" +
		" GROUP BY agent_name, model, minute ORDER BY minute, agent_name, model"
	return q, args
}

// Projects lists the projects with spans started at or after since.
func (r ToolReader) Projects(ctx context.Context, since time.Time) ([]string, error) {
	q, args := projectsSQL(r.store, since)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	out, err := scanAll(rows, func(p *string) []any { return []any{p} })
	if err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	return nonNil(out), nil
}

// projectsSQL builds Projects' statement.
func projectsSQL(t tables, since time.Time) (string, []any) {
	return "SELECT DISTINCT project FROM " + t.Table(schema.TableSpanFacts) + " WHERE start >= ? ORDER BY project",
		[]any{since.UTC().Truncate(time.Second)}
}

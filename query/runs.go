// Package query holds every read of tally's tables: run lists, run trees,
// cost rollups, tool statistics and cache health. It is the one source of
// truth for the figures the API, UI, CLI and alerts show.
package query

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// ErrNotFound is returned for a run that does not exist in the caller's project.
var ErrNotFound = errors.New("not found")

// Reader runs queries for one ClickHouse database.
type Reader struct {
	store    *schema.Store
	effects  *safety.Policy   // tool effect classes; nil: declared by spans only
	limits   safety.Limits    // the signals' thresholds; zero: the defaults
	registry *safety.Registry // the tools agents may call; nil: none configured
	caps     *safety.Caps     // run budgets; nil: none
	// validator checks tool arguments within bounds, keeping compiled
	// schemas and verdicts across reviews (NewReader makes one with the
	// default limits unless WithValidator gives one).
	validator *safety.Validator
}

// ReaderOption configures a Reader.
type ReaderOption func(*Reader)

// WithToolEffects gives the Reader the configured tool effect classes
// (tally serve --tool-effects), for the tool steps of run details and their
// safety signals.
func WithToolEffects(p *safety.Policy) ReaderOption { return func(r *Reader) { r.effects = p } }

// WithSignalLimits gives the Reader the safety signals' thresholds (tally
// serve --signal-min-backoff, --signal-max-repeats).
func WithSignalLimits(l safety.Limits) ReaderOption { return func(r *Reader) { r.limits = l } }

// WithToolRegistry sets the tools each project's agents may call (tally
// serve --tool-registry): a call of any other is an unknown_tool signal.
func WithToolRegistry(reg *safety.Registry) ReaderOption { return func(r *Reader) { r.registry = reg } }

// WithRunCaps sets the run budgets (tally serve --run-cap) budget_exceeded
// signals check.
func WithRunCaps(c *safety.Caps) ReaderOption { return func(r *Reader) { r.caps = c } }

// WithValidator sets the validator of tool arguments, and so its limits
// (tally serve --validation-max-steps, --validation-max-run-time,
// --validation-max-schema-bytes).
func WithValidator(v *safety.Validator) ReaderOption { return func(r *Reader) { r.validator = v } }

// NewReader returns a Reader over the store.
func NewReader(store *schema.Store, opts ...ReaderOption) *Reader {
	r := &Reader{store: store}
	for _, o := range opts {
		o(r)
	}
	if r.validator == nil {
		r.validator = safety.NewValidator(safety.ValidationLimits{})
	}
	return r
}

// RunSummary is one run (trace) with its totals.
type RunSummary struct {
	TraceID        string    `json:"trace_id"`
	Name           string    `json:"name"` // the root span's name
	Task           string    `json:"task"` // task.name if any span has it, else the root's name
	Service        string    `json:"service"`
	Agents         []string  `json:"agents"`
	Models         []string  `json:"models"`
	ConversationID string    `json:"conversation_id,omitempty"`
	UserID         string    `json:"user_id,omitempty"`
	Start          time.Time `json:"start"`
	End            time.Time `json:"end"`
	DurationMs     float64   `json:"duration_ms"`
	// Status is the run's outcome: "error" when its root span ended in error
	// (a run without a root: when its last span to end did), else "ok".
	// Errors inside a run that recovered do not make it an error.
	Status    RunStatus `json:"status"`
	Spans     int       `json:"spans"`
	LLMCalls  int       `json:"llm_calls"`
	ToolCalls int       `json:"tool_calls"`
	Errors    int       `json:"errors"` // spans with status error
	// RecoveredErrors are the errors of a run whose status is ok (a retry or
	// fallback recovered them): Errors when Status is "ok", else 0.
	RecoveredErrors int               `json:"recovered_errors"`
	Usage           attribution.Usage `json:"usage"`
	// UsageFromAggregate is true when no inference span carried usage and the
	// totals come from an agent span's aggregated usage instead.
	UsageFromAggregate bool             `json:"usage_from_aggregate,omitempty"`
	Cost               attribution.Cost `json:"cost"`
	UnpricedSpans      int              `json:"unpriced_spans"`
	UnreconciledSpans  int              `json:"unreconciled_spans,omitempty"`
	// ToolRetries and ToolRepeats classify the run's tool calls by docs/design.md's
	// retry rules (the same as /tools); set on a run's detail and in lists.
	ToolRetries *int `json:"tool_retries,omitempty"`
	ToolRepeats *int `json:"tool_repeats,omitempty"`
	// Signals are the safety review's findings on a run's detail
	// (package safety: duplicate side effects, unsafe retries); absent in
	// lists and when there are none.
	Signals []safety.Signal `json:"signals,omitempty"`
	// Guardrails are the guardrail checks the run's spans recorded and
	// their verdicts (triggered null when the span did not say), on a
	// run's detail.
	Guardrails []safety.Guardrail `json:"guardrails,omitempty"`
}

// RunFilter selects runs. Zero fields do not filter.
type RunFilter struct {
	Project      string
	Since, Until time.Time // on the run's start (its earliest span's start)
	Agent        string
	Model        string
	Service      string
	Task         string
	Conversation string
	Tool         string    // runs that called this tool ("unknown": a tool span without a name)
	Status       RunStatus // the run's outcome (RunSummary.Status); "" does not filter
	HasErrors    *bool     // true: runs with an error span; false: runs without; nil does not filter
	// HasRecoveredErrors true: runs that are ok with errors inside them;
	// false: runs without recovered errors; nil does not filter.
	HasRecoveredErrors *bool
	Search             string  // trace id prefix, conversation id or span name substring
	MinCost            float64 // runs costing at least this many USD; 0 does not filter
	Sort               RunSort // one of RunSortOptions; "" is SortStart
	Dir                SortDir // "" is Desc
	Cursor             string  // from a previous page's NextCursor under the same Sort and Dir
	Limit              int     // default 50, at most 1000
}

// RunPage is one page of runs in the filter's order (newest first by default).
type RunPage struct {
	Runs       []RunSummary `json:"runs"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// cursor is a keyset page position shared by the run and conversation
// lists: the sort time in nanoseconds and the tie-breaking id.
type cursor struct {
	Ns  uint64
	Key string
}

func (c cursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatUint(c.Ns, 10) + ":" + c.Key))
}

// ErrInvalidCursor is returned for a page cursor tally did not issue.
var ErrInvalidCursor = errors.New("invalid cursor")

func decodeCursor(s string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, fmt.Errorf("%w: %w", ErrInvalidCursor, err)
	}
	ns, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseUint(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return cursor{}, ErrInvalidCursor
	}
	return cursor{n, id}, nil
}

// runAggregates is the SELECT list that turns a run's deduplicated spans
// into a RunSummary (read through runColumns, which leaves out the counting
// rule's working columns).
const runAggregates = `
	trace_id,
	argMinIf(name, start_ns, parent_span_id = '') AS root_name,
	argMin(name, start_ns) AS first_name,
	anyIf(task_name, task_name != '') AS task,
	argMin(service, start_ns) AS svc,
	arraySort(groupUniqArrayIf(agent_name, agent_name != '')) AS agents,
	arraySort(groupUniqArrayIf(model, model != '' AND span_type = 'inference')) AS models,
	anyIf(conversation_id, conversation_id != '') AS conv,
	anyIf(user_id, user_id != '') AS usr,
	min(start_ns) AS s_ns,
	max(end_ns) AS e_ns,
	count() AS n_spans,
	toUInt64(countIf(span_type = 'inference') - length(_sup)) AS n_llm,
	countIf(span_type = 'tool') AS n_tool,
	countIf(status = 'error') AS n_err,
	toUInt8(if(countIf(parent_span_id = '') > 0, argMinIf(status, start_ns, parent_span_id = '') = 'error',
		n_err > 0 AND maxIf(end_ns, status = 'error') = e_ns)) AS run_err,
	` + runCountedSQL + `,
	countIf(cost_source = 'unpriced' AND usage_mode != 'aggregated') AS n_unpriced,
	countIf(usage_unreconciled = 1) AS n_unrec`

// runColumns are the columns of runAggregates a runRow scans, in its order.
const runColumns = `trace_id, root_name, first_name, task, svc, agents, models, conv, usr, s_ns, e_ns,
	n_spans, n_llm, n_tool, n_err, run_err, n_usage, from_agg, in_t, cr_t, cw_t, out_t, rs_t,
	c_total, c_in, c_cr, c_cw, c_out, n_unpriced, n_unrec`

type runRow struct {
	TraceID   string
	RootName  string
	FirstName string
	Task      string
	Service   string
	Agents    []string
	Models    []string
	Conv      string
	User      string
	StartNs   uint64
	EndNs     uint64
	Spans     uint64
	LLM       uint64
	Tool      uint64
	Err       uint64
	RunErr    uint8 // 1: the run's outcome is an error (see RunSummary.Status)
	NUsage    uint64
	FromAgg   uint8
	In        uint64
	CR        uint64
	CW        uint64
	Out       uint64
	RS        uint64
	CTotal    float64
	CIn       float64
	CCR       float64
	CCW       float64
	COut      float64
	Unpriced  uint64
	Unrec     uint64
}

func (r *runRow) dest() []any {
	return []any{&r.TraceID, &r.RootName, &r.FirstName, &r.Task, &r.Service, &r.Agents, &r.Models,
		&r.Conv, &r.User, &r.StartNs, &r.EndNs, &r.Spans, &r.LLM, &r.Tool, &r.Err, &r.RunErr, &r.NUsage, &r.FromAgg,
		&r.In, &r.CR, &r.CW, &r.Out, &r.RS, &r.CTotal, &r.CIn, &r.CCR, &r.CCW, &r.COut,
		&r.Unpriced, &r.Unrec}
}

func (r *runRow) summary() RunSummary {
	s := RunSummary{
		TraceID: r.TraceID, Name: r.RootName, Task: r.Task, Service: r.Service,
		Agents: nonNil(r.Agents), Models: nonNil(r.Models), ConversationID: r.Conv, UserID: r.User,
		Start: nsTime(r.StartNs), End: nsTime(r.EndNs), DurationMs: float64(r.EndNs-r.StartNs) / 1e6,
		Spans: int(r.Spans), LLMCalls: int(r.LLM), ToolCalls: int(r.Tool), Errors: int(r.Err),
		Usage: attribution.Usage{Input: r.In, CacheRead: r.CR, CacheWrite: r.CW, Output: r.Out, Reasoning: r.RS},
		Cost:  attribution.Cost{Total: r.CTotal, Input: r.CIn, CacheRead: r.CCR, CacheWrite: r.CCW, Output: r.COut}, UnpricedSpans: int(r.Unpriced),
		UnreconciledSpans: int(r.Unrec), Status: RunOK,
	}
	if s.Name == "" {
		s.Name = r.FirstName
	}
	if s.Task == "" {
		s.Task = s.Name
	}
	if r.RunErr == 1 {
		s.Status = RunError
	} else {
		s.RecoveredErrors = s.Errors
	}
	s.UsageFromAggregate = r.FromAgg == 1
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Runs lists runs newest first, one page at a time.
func (r *Reader) Runs(ctx context.Context, f RunFilter) (RunPage, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	return r.runList(ctx, f, true)
}

// runList is Runs with f.Limit as given: the reports that read every run
// of a range (tasks, versions) take up to MaxTaskRuns in one query, where
// pages would repeat the whole range's aggregation each. withRetries reads
// each run's ToolRetries and ToolRepeats (another read of its tool spans),
// which only the list and the comparisons show.
func (r *Reader) runList(ctx context.Context, f RunFilter, withRetries bool) (RunPage, error) {
	// A run is filed under its start (its earliest span's start) and its
	// figures are always the whole run's: the window picks runs, never
	// spans (see runsStartingIn).
	where := []string{"project = ?"}
	args := []any{f.Project}
	var having []string
	var hargs []any
	if !f.Since.IsZero() {
		sub, subArgs := r.runsStartingIn(f.Project, f.Since, f.Until)
		where = append(where, "trace_id IN ("+sub+")")
		args = append(args, subArgs...)
		having = append(having, "s_ns >= ?")
		hargs = append(hargs, uint64(f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		having = append(having, "s_ns <= ?")
		hargs = append(hargs, uint64(f.Until.UnixNano()))
	}
	if f.Agent != "" {
		having = append(having, "has(agents, ?)")
		hargs = append(hargs, f.Agent)
	}
	if f.Model != "" {
		having = append(having, "has(models, ?)")
		hargs = append(hargs, f.Model)
	}
	if f.Service != "" {
		having = append(having, "svc = ?")
		hargs = append(hargs, f.Service)
	}
	if f.Task != "" {
		having = append(having, "if(task != '', task, if(root_name != '', root_name, first_name)) = ?")
		hargs = append(hargs, f.Task)
	}
	if f.Conversation != "" {
		having = append(having, "conv = ?")
		hargs = append(hargs, f.Conversation)
	}
	if f.Tool != "" {
		// The tool statistics name a tool span without a tool name
		// UnknownName; the filter does too, so an alert's link finds its runs.
		having = append(having, "countIf(if(span_type = 'tool' AND tool_name = '', ?, tool_name) = ?) > 0")
		hargs = append(hargs, UnknownName, f.Tool)
	}
	switch f.Status {
	case "":
	case RunError:
		having = append(having, "run_err = 1")
	case RunOK:
		having = append(having, "run_err = 0")
	default:
		return RunPage{}, fmt.Errorf("status %q: want %s or %s", f.Status, RunOK, RunError)
	}
	for _, c := range []struct {
		v       *bool
		yes, no string
	}{
		{f.HasErrors, "n_err > 0", "n_err = 0"},
		{f.HasRecoveredErrors, "(run_err = 0 AND n_err > 0)", "(run_err = 1 OR n_err = 0)"},
	} {
		switch {
		case c.v == nil:
		case *c.v:
			having = append(having, c.yes)
		default:
			having = append(having, c.no)
		}
	}
	if f.MinCost > 0 {
		having = append(having, "c_total >= ?")
		hargs = append(hargs, f.MinCost)
	}
	if f.Search != "" {
		having = append(having, "(startsWith(trace_id, ?) OR conv = ? OR positionCaseInsensitive(arrayStringConcat(groupUniqArray(name), '\\n'), ?) > 0)")
		hargs = append(hargs, strings.ToLower(f.Search), f.Search, f.Search)
	}
	order, err := runOrder(f.Sort, f.Dir)
	if err != nil {
		return RunPage{}, err
	}
	var after *cursor
	if f.Cursor != "" {
		c, err := order.decode(f.Cursor)
		if err != nil {
			return RunPage{}, err
		}
		after = &c
	}
	args = append(args, hargs...)
	if order.sort == SortRetries {
		return r.runsByRetries(ctx, f, where, having, args, order, after)
	}
	if after != nil {
		having = append(having, "(sort_key "+order.op()+" ? OR (sort_key = ? AND trace_id "+order.op()+" ?))")
		args = append(args, after.Ns, after.Ns, after.Key)
	}
	orderBy := "\nORDER BY sort_key " + order.dir() + ", trace_id " + order.dir()
	q := "SELECT " + runAggregates + ",\n\t" + order.key() + " AS sort_key\nFROM " + final(r.store.Table(schema.TableSpans)) +
		"\nWHERE " + strings.Join(where, " AND ") + "\nGROUP BY trace_id"
	if len(having) > 0 {
		q += "\nHAVING " + strings.Join(having, " AND ")
	}
	q += orderBy + "\nLIMIT " + strconv.Itoa(f.Limit+1)
	q = "SELECT " + runColumns + ", sort_key FROM (" + q + ")" + orderBy

	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	type keyed struct {
		run runRow
		key uint64
	}
	found, err := scanAll(rows, func(k *keyed) []any { return append(k.run.dest(), &k.key) })
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	page := RunPage{Runs: make([]RunSummary, 0, len(found))}
	for i := range found {
		page.Runs = append(page.Runs, found[i].run.summary())
	}
	if len(page.Runs) > f.Limit {
		page.Runs = page.Runs[:f.Limit]
		page.NextCursor = order.encode(cursor{found[f.Limit-1].key, found[f.Limit-1].run.TraceID})
	}
	if !withRetries {
		return page, nil
	}
	if err := r.addRetries(ctx, f.Project, page.Runs); err != nil {
		return RunPage{}, err
	}
	return page, nil
}

// runListOrder is a validated sort and direction.
type runListOrder struct {
	sort RunSort
	desc bool
}

// runOrder validates a sort ("" is start) and direction ("" is desc).
func runOrder(sortBy RunSort, dir SortDir) (runListOrder, error) {
	s, err := ParseRunSort(string(sortBy))
	if err != nil {
		return runListOrder{}, err
	}
	d, err := ParseSortDir(string(dir))
	if err != nil {
		return runListOrder{}, err
	}
	return runListOrder{sort: s, desc: d == Desc}, nil
}

// key is the SQL sort key over runAggregates' columns, a UInt64 (the cost
// in nano-USD, so that float rounding of a sum cannot move a run across a
// page boundary between two reads).
func (o runListOrder) key() string {
	switch o.sort {
	case SortDuration:
		return "toUInt64(if(e_ns > s_ns, e_ns - s_ns, 0))"
	case SortCost:
		return "toUInt64(round(if(c_total > 0, c_total, 0) * 1e9))"
	case SortTokens:
		return "toUInt64(in_t + out_t)"
	case SortErrors:
		return "toUInt64(n_err)"
	}
	return "toUInt64(s_ns)"
}

func (o runListOrder) dir() string {
	if o.desc {
		return "DESC"
	}
	return "ASC"
}

// op is the comparison that keeps the runs after a cursor.
func (o runListOrder) op() string {
	if o.desc {
		return "<"
	}
	return ">"
}

// prefix tags a cursor's trace id with its order, so that a cursor is
// refused under another; the default order's cursors are bare trace ids.
func (o runListOrder) prefix() string {
	if o.sort == SortStart && o.desc {
		return ""
	}
	return string(o.sort) + ":" + strings.ToLower(o.dir()) + ":"
}

func (o runListOrder) encode(c cursor) string {
	c.Key = o.prefix() + c.Key
	return c.encode()
}

// decode reads a cursor this order issued.
func (o runListOrder) decode(s string) (cursor, error) {
	c, err := decodeCursor(s)
	if err != nil {
		return c, err
	}
	id, ok := strings.CutPrefix(c.Key, o.prefix())
	if !ok || len(id) != 32 {
		return cursor{}, ErrInvalidCursor
	}
	c.Key = id
	return c, nil
}

// after reports whether the run (key, id) comes after c in this order.
func (o runListOrder) after(key uint64, id string, c cursor) bool {
	if o.desc {
		return key < c.Ns || key == c.Ns && id < c.Key
	}
	return key > c.Ns || key == c.Ns && id > c.Key
}

// runsByRetries is Runs sorted by retries. Retries are classified by Go's
// rules (classifyRunTools, as on a run's detail), so ClickHouse lists the
// matching runs' ids and their tool spans, Go orders them, and the page's
// summaries are read by id.
func (r *Reader) runsByRetries(ctx context.Context, f RunFilter, where, having []string, args []any, order runListOrder, after *cursor) (RunPage, error) {
	matching := "SELECT trace_id FROM (SELECT " + runAggregates + "\nFROM " + final(r.store.Table(schema.TableSpans)) +
		"\nWHERE " + strings.Join(where, " AND ") + "\nGROUP BY trace_id"
	if len(having) > 0 {
		matching += "\nHAVING " + strings.Join(having, " AND ")
	}
	matching += ")"
	rows, err := r.store.Conn().Query(ctx, matching, args...)
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	ids, err := scanAll(rows, func(s *string) []any { return []any{s} })
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	counts, err := r.runRetries(ctx, f.Project, "trace_id IN ("+matching+")", args)
	if err != nil {
		return RunPage{}, err
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
	var page RunPage
	if len(ids) > f.Limit {
		last := ids[f.Limit-1]
		page.NextCursor = order.encode(cursor{uint64(counts[last].retries), last})
		ids = ids[:f.Limit]
	}
	page.Runs = make([]RunSummary, 0, len(ids))
	if len(ids) == 0 {
		return page, nil
	}
	set := clickhouse.GroupSet{Value: make([]any, len(ids))}
	for i, id := range ids {
		set.Value[i] = id
	}
	q := "SELECT " + runColumns + " FROM (SELECT " + runAggregates + "\nFROM " + final(r.store.Table(schema.TableSpans)) +
		"\nWHERE project = ? AND trace_id IN ?\nGROUP BY trace_id)"
	rows, err = r.store.Conn().Query(ctx, q, f.Project, set)
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	found, err := scanAll(rows, (*runRow).dest)
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs: %w", err)
	}
	byID := make(map[string]RunSummary, len(found))
	for i := range found {
		byID[found[i].TraceID] = found[i].summary()
	}
	for _, id := range ids {
		s, ok := byID[id]
		if !ok {
			continue // deleted between the two reads
		}
		c := counts[id]
		s.ToolRetries, s.ToolRepeats = &c.retries, &c.repeats
		page.Runs = append(page.Runs, s)
	}
	return page, nil
}

// retryCount is a run's classified tool calls.
type retryCount struct{ retries, repeats int }

// addRetries sets each run's ToolRetries and ToolRepeats.
func (r *Reader) addRetries(ctx context.Context, project string, runs []RunSummary) error {
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
func (r *Reader) runRetries(ctx context.Context, project, cond string, args []any) (map[string]retryCount, error) {
	q := "SELECT trace_id, span_id, parent_span_id, tool_name, tool_call_id, step_id, args_hash, status, start_ns, duration_ns, attempt\nFROM " +
		final(r.store.Table(schema.TableSpans)) + "\nWHERE project = ? AND span_type = 'tool' AND " + cond +
		"\nORDER BY trace_id, start_ns, span_id"
	rows, err := r.store.Conn().Query(ctx, q, append([]any{project}, args...)...)
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

// runsStartingIn is a subquery of the trace ids of project's runs that
// start in [since, until] (until zero: open), read from span_facts, which is
// sorted by hour: a window's runs are a few hours' key ranges there, where
// the spans table (sorted by run) would be read whole.
//
// A run starting in the window has all its spans at or after since, so its
// earliest span among those starting from DefaultTraceWindow before since
// is its start. A run started earlier still, with no span in that hour, may
// come through; the caller's HAVING on the whole run's start drops it.
func (r *Reader) runsStartingIn(project string, since, until time.Time) (string, []any) {
	q := "SELECT trace_id FROM " + r.store.Table(schema.TableSpanFacts) +
		" WHERE project = ? AND start >= ?"
	args := []any{project, since.UTC().Truncate(time.Second).Add(-DefaultTraceWindow)}
	having := "min(start_ns) >= ?"
	hargs := []any{uint64(since.UnixNano())}
	if !until.IsZero() {
		q += " AND start <= ?"
		args = append(args, until.UTC().Truncate(time.Second))
		having += " AND min(start_ns) <= ?"
		hargs = append(hargs, uint64(until.UnixNano()))
	}
	return q + " GROUP BY trace_id HAVING " + having, append(args, hargs...)
}

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
	CostliestSpanID  string `json:"costliest_span_id,omitempty"`
	FirstErrorSpanID string `json:"first_error_span_id,omitempty"`
}

// Spans loads a run's spans, deduplicated, ordered by start time.
//
// It reads in two steps. The sort key finds the run's granules in every daily
// partition, but reading every column of those granules costs far more than
// the run itself (wide rows, arrays). So first a PREWHERE on the key columns
// finds the days the run's spans started on (two narrow columns), then the
// rows are read from those partitions only, again filtered by PREWHERE
// before the wide columns are touched.
func (r *Reader) Spans(ctx context.Context, project, traceID string) ([]schema.Span, error) {
	spans, _, err := r.spans(ctx, project, traceID, 0)
	return spans, err
}

// spans is Spans reading at most limit spans (the earliest; 0: all), and
// whether the run has more.
func (r *Reader) spans(ctx context.Context, project, traceID string, limit int) ([]schema.Span, bool, error) {
	return r.readSpans(ctx, project, traceID, schema.SpanSelectList(), limit)
}

// readSpans is spans selecting list (schema.SpanSelectList or
// schema.SpanOutlineList).
func (r *Reader) readSpans(ctx context.Context, project, traceID, list string, limit int) ([]schema.Span, bool, error) {
	ext, err := r.locate(ctx, project, traceID)
	if err != nil || ext.rows == 0 {
		return nil, false, err
	}
	return r.readExtent(ctx, project, traceID, list, ext, limit)
}

// runExtent is where a run's spans are: the first and last start second
// (partition pruning for the wide read) and the rows stored, duplicate
// deliveries not yet merged included.
type runExtent struct {
	lo, hi time.Time
	rows   uint64
}

// locate finds a run's extent from the two narrow key columns.
func (r *Reader) locate(ctx context.Context, project, traceID string) (runExtent, error) {
	var ext runExtent
	if err := r.store.Conn().QueryRow(ctx, "SELECT min(start), max(start), count() FROM "+r.store.Table(schema.TableSpans)+
		" PREWHERE project = ? AND trace_id = ?", project, strings.ToLower(traceID)).Scan(&ext.lo, &ext.hi, &ext.rows); err != nil {
		return ext, fmt.Errorf("locate run %s: %w", traceID, err)
	}
	return ext, nil
}

// readExtent reads a located run's spans selecting list, at most limit
// (the earliest; 0: all), and whether the run has more.
func (r *Reader) readExtent(ctx context.Context, project, traceID, list string, ext runExtent, limit int) ([]schema.Span, bool, error) {
	traceID = strings.ToLower(traceID)
	q := "SELECT " + list + " FROM " + final(r.store.Table(schema.TableSpans)) +
		" PREWHERE project = ? AND trace_id = ? WHERE start >= ? AND start <= ? ORDER BY start_ns, span_id"
	// count() counts duplicate deliveries not yet merged: above the limit,
	// read one span more than it to know whether the run really has more.
	more := limit > 0 && ext.rows > uint64(limit)
	if more {
		q += " LIMIT " + strconv.Itoa(limit+1)
	}
	rows, err := r.store.Conn().Query(ctx, q, project, traceID, ext.lo, ext.hi)
	if err != nil {
		return nil, false, fmt.Errorf("load run %s: %w", traceID, err)
	}
	defer rows.Close()
	want := int(min(ext.rows, 1<<20))
	if more {
		want = limit + 1
	}
	spans, err := schema.ScanSpansCap(rows, want)
	if err != nil {
		return nil, false, fmt.Errorf("load run %s: %w", traceID, err)
	}
	if more && len(spans) <= limit {
		more = false
	}
	if more {
		spans = spans[:limit]
	}
	return spans, more, nil
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
func (r *Reader) RunWithin(ctx context.Context, project, traceID string, maxSpans int) (*RunDetail, error) {
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
func (r *Reader) summarizeWhole(ctx context.Context, project, traceID string, d *RunDetail, spans []schema.Span) error {
	q := "SELECT " + runColumns + " FROM (SELECT " + runAggregates + "\nFROM " + final(r.store.Table(schema.TableSpans)) +
		"\nWHERE project = ? AND trace_id = ? AND start >= ?\nGROUP BY trace_id)"
	var rr runRow
	if err := r.store.Conn().QueryRow(ctx, q, project, strings.ToLower(traceID), spans[0].Start).Scan(rr.dest()...); err != nil {
		return fmt.Errorf("summarize run %s: %w", traceID, err)
	}
	d.Summary = rr.summary()
	d.Truncated = &Truncation{TotalSpans: d.Summary.Spans, ReturnedSpans: len(spans)}
	return nil
}

// Run loads one run's summary and span tree.
func (r *Reader) Run(ctx context.Context, project, traceID string) (*RunDetail, error) {
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
	return d
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
	bySpan := make(map[string]attribution.Class, len(calls))
	for i, c := range classes {
		bySpan[calls[i].SpanID] = c
		switch {
		case c.Retry():
			retries++
		case c == attribution.ClassRepeat:
			repeats++
		}
	}
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

// summarize computes a run's summary from its spans with the same rules as
// the run list (see attribution/counted.go: each call counted once,
// aggregated usage only when no inference span carries any), and which
// spans (by id) count.
func summarize(spans []schema.Span) (RunSummary, map[string]bool) {
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
		us = append(us, attribution.UsageSpan{ID: s.SpanID, ParentID: s.ParentSpanID, SpanType: s.SpanType, UsageMode: s.UsageMode,
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
			rr.CTotal += s.CostTotal
			rr.CIn += s.CostInput
			rr.CCR += s.CostCacheRead
			rr.CCW += s.CostCacheWrite
			rr.COut += s.CostOutput
		}
	}
	rr.Agents, rr.Models = sortedKeys(agents), sortedKeys(models)
	return rr.summary(), byID
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

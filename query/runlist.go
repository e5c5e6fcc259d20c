package query

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

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
	// CostConfidence says how sure Cost is (schema.Confidence*: exact,
	// upper_bound, lower_bound, corrected, approximate, unpriced; "" when
	// nothing was rated), and CostByConfidence splits it.
	CostConfidence    string                 `json:"cost_confidence,omitempty"`
	CostByConfidence  schema.ConfidenceSpend `json:"cost_by_confidence"`
	UnpricedSpans     int                    `json:"unpriced_spans"`
	UnreconciledSpans int                    `json:"unreconciled_spans,omitempty"`
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
	// Settled is true when the run came from the run table: it had been
	// quiet (package settle) and its figures were computed once; false
	// when it was aggregated from its spans at this read (a run in flight,
	// or one whose late spans are not settled yet).
	Settled bool `json:"settled"`
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
	// TraceIDs, when set, keeps only these runs (lowercase hex ids): how
	// search reads the summaries of the runs it matched.
	TraceIDs []string
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
	toUInt64(countIf(span_type = 'inference') - length(_sup) - least(countIf(span_type = 'inference' AND usage_record = 1),
		countIf(span_type = 'inference' AND usage_record = 0 AND usage_mode = ''))) AS n_llm,
	countIf(span_type = 'tool') AS n_tool,
	countIf(status = 'error') AS n_err,
	toUInt8(if(countIf(parent_span_id = '') > 0, argMinIf(status, start_ns, parent_span_id = '') = 'error',
		n_err > 0 AND maxIf(end_ns, status = 'error') = e_ns)) AS run_err,
	` + runCountedSQL + `,` + runConfidenceSQL + `,
	countIf(cost_source = 'unpriced' AND usage_mode != 'aggregated') AS n_unpriced,
	countIf(usage_unreconciled = 1) AS n_unrec`

// runColumns are the columns of runAggregates a runRow scans, in its order.
const runColumns = `trace_id, root_name, first_name, task, svc, agents, models, conv, usr, s_ns, e_ns,
	n_spans, n_llm, n_tool, n_err, run_err, n_usage, from_agg, in_t, cr_t, cw_t, out_t, rs_t,
	c_total, c_in, c_cr, c_cw, c_out, cf_exact, cf_upper, cf_lower, cf_corr, cf_approx, n_unpriced, n_unrec`

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
	Conf      schema.ConfidenceSpend
	Unpriced  uint64
	Unrec     uint64
}

func (r *runRow) dest() []any {
	return []any{&r.TraceID, &r.RootName, &r.FirstName, &r.Task, &r.Service, &r.Agents, &r.Models,
		&r.Conv, &r.User, &r.StartNs, &r.EndNs, &r.Spans, &r.LLM, &r.Tool, &r.Err, &r.RunErr, &r.NUsage, &r.FromAgg,
		&r.In, &r.CR, &r.CW, &r.Out, &r.RS, &r.CTotal, &r.CIn, &r.CCR, &r.CCW, &r.COut,
		&r.Conf.CostExact, &r.Conf.CostUpperBound, &r.Conf.CostLowerBound, &r.Conf.CostCorrected, &r.Conf.CostApproximate,
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
	s.CostByConfidence = r.Conf
	s.CostConfidence = r.Conf.Level(r.CTotal, int(r.Unpriced))
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Runs lists runs newest first, one page at a time.
func (r RunReader) Runs(ctx context.Context, f RunFilter) (RunPage, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	return r.runList(ctx, f, true)
}

// runList is Runs with f.Limit as given. withRetries reads
// each live run's ToolRetries and ToolRepeats (another read of its tool
// spans; a settled run's are in its row), which only the list and the
// comparisons show.
//
// A page merges two reads in one order: the settled runs, from the run
// table, and the runs live — those with a span written after the settled
// mark (package settle), aggregated from their spans as they are now. A run
// is in exactly one of them.
func (r *core) runList(ctx context.Context, f RunFilter, withRetries bool) (RunPage, error) {
	sel, err := selectRuns(r.store, f)
	if err != nil {
		return RunPage{}, err
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
	lv, err := r.liveRuns(ctx, f.Project, f.Since)
	if err != nil {
		return RunPage{}, err
	}
	var found []keyedRun
	if !lv.all {
		if found, err = r.settledPage(ctx, f.Project, sel, order, after, f.Limit+1, lv); err != nil {
			return RunPage{}, err
		}
		if lv.none() {
			return pageOf(found, f.Limit, order), nil
		}
		live, ok, err := r.liveListInGo(ctx, sel, lv, order, after)
		if err != nil {
			return RunPage{}, err
		}
		if ok {
			return pageOf(append(found, live...), f.Limit, order), nil
		}
		sel = lv.narrow(sel)
	}
	var live []keyedRun
	if order.sort == SortRetries {
		live, err = r.runsByRetries(ctx, f, sel, order, after)
	} else {
		live, err = r.liveList(ctx, sel, order, after, f.Limit+1)
	}
	if err != nil {
		return RunPage{}, err
	}
	if withRetries && order.sort != SortRetries {
		runs := make([]RunSummary, len(live))
		for i := range live {
			runs[i] = live[i].run
		}
		if err := r.addRetries(ctx, f.Project, runs); err != nil {
			return RunPage{}, err
		}
		for i := range live {
			live[i].run = runs[i]
		}
	}
	return pageOf(append(found, live...), f.Limit, order), nil
}

// pageOf is the page of at most limit runs of found, merged in order, and
// the cursor after it when found has more.
func pageOf(found []keyedRun, limit int, order runListOrder) RunPage {
	slices.SortFunc(found, func(a, b keyedRun) int {
		c := cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.run.TraceID, b.run.TraceID))
		if order.desc {
			return -c
		}
		return c
	})
	page := RunPage{Runs: make([]RunSummary, 0, min(len(found), limit))}
	for i := range found[:min(len(found), limit)] {
		page.Runs = append(page.Runs, found[i].run)
	}
	if len(found) > limit {
		last := found[limit-1]
		page.NextCursor = order.encode(cursor{last.key, last.run.TraceID})
	}
	return page
}

// settledPage reads a page of settled runs (at most limit, after the
// cursor, in order) in two steps: the narrow read that picks the page, then
// the page's rows by key.
//
// The pick reads every version of the window's rows first, without FINAL
// (which merges the whole window's rows before the sort, in one thread on
// ClickHouse 18.16): each run's best-placed version, the first limit of
// them. When every picked version is its run's current one (the key read,
// FINAL, says so) that is the true page: every run's current row was among
// the candidates, and a run not picked placed its best version, so its
// current one too, after the page. Otherwise (a run re-settled with other
// figures or moved to another start, and not yet merged) the page is
// picked again from the current rows (FINAL).
func (r *core) settledPage(ctx context.Context, project string, sel runSelection, order runListOrder, after *cursor, limit int, lv liveSet) ([]keyedRun, error) {
	page, complete, err := r.pickSettled(ctx, project, sel, order, after, limit, lv, false)
	if err != nil || len(page) == 0 && complete {
		return nil, err
	}
	if complete {
		out, current, err := r.settledRows(ctx, project, page, true)
		if err != nil || current {
			return out, err
		}
	}
	if page, _, err = r.pickSettled(ctx, project, sel, order, after, limit, lv, true); err != nil || len(page) == 0 {
		return nil, err
	}
	out, _, err := r.settledRows(ctx, project, page, false)
	return out, err
}

// pickedRun is a run a settled page's first read picked: its key (id and
// start second), its sort key and the version of the row that placed it.
type pickedRun struct {
	id      string
	start   uint32
	key     uint64
	version uint64
}

// pickSettled is a settled page's first read: at most limit runs in order.
// Without FINAL it reads the bound of the candidates' sort keys first
// (settledBoundSQL), then the candidates within it.
// From the current rows (currentOnly: FINAL) it is the page; from every version (not
// final) it is each run's best-placed version, and complete is false when
// the read's cap of rows (settledCandidates) ended before limit runs, which
// only a window of many unmerged versions does.
func (r *core) pickSettled(ctx context.Context, project string, sel runSelection, order runListOrder, after *cursor, limit int, lv liveSet, currentOnly bool) ([]pickedRun, bool, error) {
	rowCap := limit
	var bound *uint64
	if !currentOnly {
		rowCap = settledCandidates * limit
		// The key's bound first: only the key's and the filters' columns
		// of the window's rows are read, and the candidates' read then
		// reads the rest of the few rows within it.
		q, args := settledBoundSQL(r.store, project, sel, order, after, rowCap)
		var n uint64
		var err error
		if bound, n, err = r.readBound(ctx, q, args, rowCap); err != nil {
			return nil, false, fmt.Errorf("list settled runs: %w", err)
		}
		if n == 0 {
			return nil, true, nil
		}
	}
	q, args := settledPageSQL(r.store, project, sel, order, after, rowCap, lv, currentOnly, bound)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list settled runs: %w", err)
	}
	found, err := scanAll(rows, func(p *pickedRun) []any { return []any{&p.id, &p.start, &p.key, &p.version} })
	if err != nil {
		return nil, false, fmt.Errorf("list settled runs: %w", err)
	}
	if currentOnly {
		return found, true, nil
	}
	// The rows are in order: a run's first row is its best-placed version.
	page := make([]pickedRun, 0, min(len(found), limit))
	seen := make(map[string]bool, len(found))
	for _, p := range found {
		if len(page) == limit {
			break
		}
		if !seen[p.id] {
			seen[p.id] = true
			page = append(page, p)
		}
	}
	// Without a bound every candidate was read (fewer than rowCap met the
	// conditions); within one, the rows read are the first of the order
	// but may be fewer than limit runs (live runs or the cursor's own key
	// took some), and then the page is picked the other way.
	return page, len(page) == limit || bound == nil, nil
}

// readBound runs a bound's read (settledBoundSQL, conversationBoundSQL:
// the bound of at most rowCap keys, and how many there were) and returns
// the bound when it leaves keys out (rowCap of them), nil when not, and
// the count.
func (r *core) readBound(ctx context.Context, q string, args []any, rowCap int) (*uint64, uint64, error) {
	var b, n uint64
	if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(&b, &n); err != nil {
		return nil, 0, err
	}
	if n == uint64(rowCap) {
		return &b, n, nil
	}
	return nil, n, nil
}

// settledCandidates is how many rows a settled page's pick without FINAL
// reads per run of the page: room for a second, unmerged version of every
// run (a re-settled run's rows merge into one in the background).
const settledCandidates = 2

// settledRows is a settled page's second read: the picked runs' current
// rows by key, in the pick's order. With verify, current is false as soon
// as a picked run's current row is not the version picked (or is gone): the
// pick was not of current rows only. Without, a run whose row moved to
// another start between the two reads is left out.
func (r *core) settledRows(ctx context.Context, project string, page []pickedRun, verify bool) (out []keyedRun, current bool, err error) {
	ids, starts := make([]string, len(page)), make([]uint32, len(page))
	for i, p := range page {
		ids[i], starts[i] = p.id, p.start
	}
	q, args := settledRowsSQL(r.store, project, starts, ids)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list settled runs: %w", err)
	}
	type settled struct {
		run                       runRow
		retries, repeats, version uint64
	}
	found, err := scanAll(rows, func(k *settled) []any { return append(k.run.dest(), &k.retries, &k.repeats, &k.version) })
	if err != nil {
		return nil, false, fmt.Errorf("list settled runs: %w", err)
	}
	byID := make(map[string]*settled, len(found))
	for i := range found {
		byID[found[i].run.TraceID] = &found[i]
	}
	out = make([]keyedRun, 0, len(page))
	for _, p := range page {
		x := byID[p.id]
		if verify && (x == nil || x.version != p.version) {
			return nil, false, nil
		}
		if x == nil {
			continue // settled again under another start between the two reads
		}
		sum := x.run.summary()
		retries, repeats := int(x.retries), int(x.repeats)
		sum.ToolRetries, sum.ToolRepeats, sum.Settled = &retries, &repeats, true
		out = append(out, keyedRun{sum, p.key})
	}
	return out, true, nil
}

// keyedRun is a run with its sort key under the list's order.
type keyedRun struct {
	run RunSummary
	key uint64
}

// liveList reads the live runs sel selects, at most limit of them after
// the cursor in order, with their keys.
func (r *core) liveList(ctx context.Context, sel runSelection, order runListOrder, after *cursor, limit int) ([]keyedRun, error) {
	q, args := runListSQL(r.store, sel, order, after, limit)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	type keyed struct {
		run runRow
		key uint64
	}
	found, err := scanAll(rows, func(k *keyed) []any { return append(k.run.dest(), &k.key) })
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]keyedRun, len(found))
	for i := range found {
		out[i] = keyedRun{found[i].run.summary(), found[i].key}
	}
	return out, nil
}

// liveSet is the runs a read takes live from their spans: every run when
// nothing is settled yet (all), else those with a span written after the
// settled mark — by id when they are few (as they are while the settler
// keeps up), else by a subquery.
type liveSet struct {
	all     bool
	ids     []string
	sub     string
	subArgs []any
	// rows, when set, are the runs in flight of a conversation read,
	// summarized in Go, that one statement needs: the reads select them
	// instead of aggregating them (conversationLiveRuns, literalRows).
	rows *liveRows
}

// maxLiveIDs is how many live runs a read names by id; more are named by a
// subquery (an IN list of their ids would pass ClickHouse's 256 KiB
// max_query_size).
const maxLiveIDs = 2000

// liveRuns finds the live runs of project among the spans starting from
// DefaultTraceWindow before since (zero: all).
func (r *core) liveRuns(ctx context.Context, project string, since time.Time) (liveSet, error) {
	mark, err := r.SettledMark(ctx)
	if err != nil || mark == 0 {
		return liveSet{all: true}, err
	}
	sub, args := liveRunsSQL(r.store, project, since, time.Now(), mark)
	rows, err := r.store.Conn().Query(ctx, sub+" LIMIT "+strconv.Itoa(maxLiveIDs+1), args...)
	if err != nil {
		return liveSet{}, fmt.Errorf("find live runs: %w", err)
	}
	ids, err := scanAll(rows, func(s *string) []any { return []any{s} })
	if err != nil {
		return liveSet{}, fmt.Errorf("find live runs: %w", err)
	}
	if len(ids) > maxLiveIDs {
		return liveSet{sub: sub, subArgs: args}, nil
	}
	return liveSet{ids: ids}, nil
}

// none reports whether no run is live.
func (lv liveSet) none() bool { return !lv.all && lv.sub == "" && len(lv.ids) == 0 }

// cond is the condition on trace_id that keeps the live runs (in) or the
// others, with its args; "" when it keeps every run.
func (lv liveSet) cond(in bool) (string, []any) {
	op := "IN"
	if !in {
		op = "NOT IN"
	}
	switch {
	case lv.sub != "":
		return "trace_id " + op + " (" + lv.sub + ")", lv.subArgs
	case len(lv.ids) > 0:
		return "trace_id " + op + " ?", []any{traceSet(lv.ids)}
	case in:
		return "0", nil
	}
	return "", nil
}

// narrow is sel narrowed to the live runs.
func (lv liveSet) narrow(sel runSelection) runSelection {
	cond, args := lv.cond(true)
	if lv.sub != "" {
		return sel.narrowed(cond, args)
	}
	return sel.only(cond, args)
}

// LiveLookback is how far back by start the reads look for spans written
// after the settled mark, and the settler's cycles for stale runs (package
// settle): a span that starts earlier still and arrives late is read from
// its run's previous row until the settler's next full check.
const LiveLookback = 48 * time.Hour

// liveRunsSQL builds the subquery of the trace ids of project's runs that
// are live: with a span written after the settled mark, among spans
// starting from DefaultTraceWindow before since and within LiveLookback of
// now, a span written since the mark being a recent one.
func liveRunsSQL(t tables, project string, since, now time.Time, mark uint64) (string, []any) {
	from := now.UTC().Truncate(time.Second).Add(-LiveLookback)
	if w := since.UTC().Truncate(time.Second).Add(-DefaultTraceWindow); !since.IsZero() && w.After(from) {
		from = w
	}
	return "SELECT trace_id FROM " + t.Table(schema.TableSpanFacts) + " WHERE project = ? AND version > ? AND start >= ? GROUP BY trace_id",
		[]any{project, mark, from}
}

// settledColumns read the run table's rows under runAggregates' names
// (runColumns), with the retries, the repeats and the tombstone flag (the
// tools and span names only when a filter reads them: runSelection's
// rowCols).
const settledColumns = `trace_id, name AS root_name, name AS first_name, task, service AS svc, agents, models,
	conversation_id AS conv, user_id AS usr, start_ns AS s_ns, end_ns AS e_ns, spans AS n_spans, llm_calls AS n_llm,
	tool_calls AS n_tool, errors AS n_err, failed AS run_err, toUInt64(0) AS n_usage, from_aggregate AS from_agg,
	input_tokens AS in_t, cache_read_tokens AS cr_t, cache_write_tokens AS cw_t, output_tokens AS out_t,
	reasoning_tokens AS rs_t, cost_total AS c_total, cost_input AS c_in, cost_cache_read AS c_cr,
	cost_cache_write AS c_cw, cost_output AS c_out, cost_exact AS cf_exact, cost_upper_bound AS cf_upper,
	cost_lower_bound AS cf_lower, cost_corrected AS cf_corr, cost_approximate AS cf_approx,
	unpriced_spans AS n_unpriced, unreconciled_spans AS n_unrec,
	tool_retries AS n_retries, tool_repeats AS n_repeats, deleted`

// settledRunsSQL builds the subquery of every version of project's settled
// rows starting in sel's window (no FINAL: the reader keeps the newest of
// each key, see settledFactsSQL), under settledColumns' names, with the
// key's start (row_start) and the row's version (row_version), and the run
// table's columns extra.
func settledRunsSQL(t tables, project string, sel runSelection, extra string) (string, []any) {
	where, args := settledWindow(project, sel)
	return "SELECT " + settledSelectList(sel, extra) + ", start AS row_start, version AS row_version FROM " + t.Table(schema.TableRuns) + where, args
}

// settledSelectList is what a read of the run table selects: settledColumns,
// the columns sel's filters read (rowCols) and the run table's columns
// extra.
func settledSelectList(sel runSelection, extra string) string {
	cols := settledColumns
	if len(sel.rowCols) > 0 {
		cols += ", " + strings.Join(sel.rowCols, ", ")
	}
	if extra != "" {
		cols += ", " + extra
	}
	return cols
}

// settledWindow is the WHERE clause selecting project's rows of the run
// table that start in sel's window, with its args.
func settledWindow(project string, sel runSelection) (string, []any) {
	q := " WHERE project = ?"
	args := []any{project}
	if !sel.since.IsZero() {
		q += " AND start >= ?"
		args = append(args, sel.since.UTC().Truncate(time.Second))
	}
	if !sel.until.IsZero() {
		q += " AND start <= ?"
		args = append(args, sel.until.UTC())
	}
	return q, args
}

// settledAliases are the run table's columns under runAggregates' names,
// for the narrow read that picks a page (settledPageSQL): it selects only
// those its conditions and sort key name.
var settledAliases = [...]struct{ alias, column string }{
	{"root_name", "name"}, {"first_name", "name"}, {"task", "task"}, {"svc", "service"}, {"agents", "agents"},
	{"models", "models"}, {"conv", "conversation_id"}, {"usr", "user_id"}, {"s_ns", "start_ns"}, {"e_ns", "end_ns"},
	{"n_spans", "spans"}, {"n_llm", "llm_calls"}, {"n_tool", "tool_calls"}, {"n_err", "errors"}, {"run_err", "failed"},
	{"in_t", "input_tokens"}, {"out_t", "output_tokens"}, {"c_total", "cost_total"}, {"n_retries", "tool_retries"},
	{"tools", "tools"}, {"names", "names"},
}

// settledPageSQL builds the first of a settled page's two reads: the
// trace ids, starts (second), sort keys and versions of the settled rows
// sel selects whose runs are not live (lv), under order, after the cursor,
// at most limit: of the current rows (currentOnly: FINAL), or of every version (the
// caller keeps each run's first). It reads only the columns its conditions
// and key name (FINAL merges every column it reads, for every run of the
// window); the page's rows are read by key after (settledRowsSQL).
func settledPageSQL(t tables, project string, sel runSelection, order runListOrder, after *cursor, limit int, lv liveSet, currentOnly bool, bound *uint64) (string, []any) {
	cond := append([]string{"deleted = 0"}, sel.rows...)
	args := slices.Clip(sel.rowArgs)
	if c, cargs := lv.cond(false); c != "" {
		cond = append(cond, c)
		args = append(args, cargs...)
	}
	if after != nil {
		cond = append(cond, "(sort_key "+order.op()+" ? OR (sort_key = ? AND trace_id "+order.op()+" ?))")
		args = append(args, after.Ns, after.Ns, after.Key)
	}
	cols := append([]string{"trace_id", "start", "deleted", "version"}, settledPickColumns(cond, order)...)
	where, subArgs := settledWindow(project, sel)
	if bound != nil {
		// Within the bound (its ties included); by the start's second too
		// under the start order, a range of the table's key.
		cmp := ">="
		if !order.desc {
			cmp = "<="
		}
		where += " AND " + order.key() + " " + cmp + " ?"
		subArgs = append(subArgs, *bound)
		if order.sort == SortStart {
			where += " AND start " + cmp + " ?"
			subArgs = append(subArgs, time.Unix(0, int64(*bound)).UTC().Truncate(time.Second))
		}
	}
	from := " FROM " + t.Table(schema.TableRuns) + where
	if currentOnly {
		from = finalRuns(t, where)
	}
	sub := "SELECT " + strings.Join(cols, ", ") + from
	return "SELECT trace_id, toUInt32(start), " + order.key() + " AS sort_key, version FROM (" + sub + ")" +
		"\nWHERE " + strings.Join(cond, " AND ") +
		"\nORDER BY sort_key " + order.dir() + ", trace_id " + order.dir() + "\nLIMIT " + strconv.Itoa(limit), append(subArgs, args...)
}

// settledPickColumns are the run table's columns, under settledAliases'
// names, that a settled pick's conditions cond and order's key are
// written in: a pick reads only those (FINAL merges every column it reads,
// for every run of the window).
func settledPickColumns(cond []string, order runListOrder) []string {
	used := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.Join(cond, " ")+" "+order.key(), func(r rune) bool {
		return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		used[w] = true
	}
	var cols []string
	for _, a := range settledAliases {
		if used[a.alias] {
			cols = append(cols, a.column+" AS "+a.alias)
		}
	}
	return cols
}

// settledBoundSQL builds the first read of a pick without FINAL: the
// bound of the first limit sort keys in order (the smallest of them under
// a descending order, the largest under an ascending one) among every
// version of the window's rows that meets the conditions, but for two:
// the live runs are not left out, and the cursor bounds the key alone.
// So the rows within the bound that meet every condition are the first
// of the order, and at least limit of them unless those two took some;
// and the second column, how many keys there were (at most limit), says
// whether the bound left anything out (limit) or not (fewer).
func settledBoundSQL(t tables, project string, sel runSelection, order runListOrder, after *cursor, limit int) (string, []any) {
	cond := append([]string{"deleted = 0"}, sel.rows...)
	args := slices.Clip(sel.rowArgs)
	if after != nil {
		cond = append(cond, "sort_key "+order.op()+"= ?")
		args = append(args, after.Ns)
	}
	bound := "min"
	if !order.desc {
		bound = "max"
	}
	cols := []string{"deleted"}
	if strings.Contains(strings.Join(cond, " "), "trace_id") { // the search's and TraceIDs' filters
		cols = append(cols, "trace_id")
	}
	cols = append(cols, settledPickColumns(cond, order)...)
	where, subArgs := settledWindow(project, sel)
	sub := "SELECT " + strings.Join(cols, ", ") + " FROM " + t.Table(schema.TableRuns) + where
	return "SELECT " + bound + "(sort_key), count() FROM (\nSELECT " + order.key() + " AS sort_key FROM (" + sub + ")" +
		"\nWHERE " + strings.Join(cond, " AND ") +
		"\nORDER BY sort_key " + order.dir() + "\nLIMIT " + strconv.Itoa(limit) + "\n)", append(subArgs, args...)
}

// settledRowsSQL builds the second read of a settled page: the rows
// (runColumns, the retries and repeats) of project's runs ids, which
// start at the given seconds: a key lookup (byKey).
func settledRowsSQL(t tables, project string, starts []uint32, ids []string) (string, []any) {
	q, args := byKey(t, settledColumns+", start, version", project, starts, ids)
	return "SELECT " + runColumns + ", n_retries, n_repeats, version FROM " + q, args
}

// keyLookupChunk is the most keys (a start second and a run id) one
// lookup of the run table by key names. Each key is ~50 bytes of the
// statement (its start second, its id quoted), and ClickHouse
// refuses a statement longer than max_query_size (256 KiB): the 5,000
// keys the flagged runs' read named at most did not fit, which a safety
// review of 7 days at a 100M-span store's density reached (1.15M runs,
// 4,508 of them flagged; that read finds its keys by a subquery now).
// 2,000 keys are ~100 KB (TestKeyLookupsFitAStatement).
const keyLookupChunk = 2000

// eachKeyChunk calls read with the keys (starts[i], ids[i]) in parts of at
// most keyLookupChunk (r.keyChunk in tests), in order, and stops at its
// first error.
func (r *core) eachKeyChunk(starts []uint32, ids []string, read func(starts []uint32, ids []string) error) error {
	n := cmp.Or(r.keyChunk, keyLookupChunk)
	for i := 0; i < len(ids); i += n {
		j := min(i+n, len(ids))
		if err := read(starts[i:j], ids[i:j]); err != nil {
			return err
		}
	}
	return nil
}

// byKey is the FROM of a lookup of project's run table rows by key (the
// ids, which start at the given seconds): a subquery selecting cols (with
// deleted and version among them) of each key's newest version
// (currentByKey), the tombstones left out, and its args. The key's filter
// is a PREWHERE: ClickHouse 18.16 then reads the rest of a row's ~40
// columns only from the granules that hold a key, not from every granule
// of the key's start second in each part of its day (the run list's page
// of 50 keys at a 100M-span store's density: 100–105 → 44–49 ms, the same
// rows).
func byKey(t tables, cols, project string, starts []uint32, ids []string) (string, []any) {
	return "(SELECT " + cols + " FROM " + t.Table(schema.TableRuns) +
			" PREWHERE project = ? AND start IN (" + startList(starts) + ") AND trace_id IN ?" + currentByKey + ")\nWHERE deleted = 0",
		[]any{project, traceSet(ids)}
}

// startList is the distinct seconds of starts as a list of numbers, in
// order: the key starts of a lookup of the run table (start IN (…), a
// DateTime column, which reads the numbers as its seconds and prunes by
// them as by DateTime literals). Not toDateTime(…) calls: ClickHouse
// 18.16 analyses each call of an IN list, and a lookup of 2,000 keys read
// in 240 ms with them against 131 ms with the numbers (the same rows).
func startList(starts []uint32) string {
	secs := slices.Clone(starts)
	slices.Sort(secs)
	secs = slices.Compact(secs)
	b := make([]byte, 0, len(secs)*12)
	for i, s := range secs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendUint(b, uint64(s), 10)
	}
	return string(b)
}

// tables names a table of the database a statement reads (*schema.Store
// does): the statement builders take it, so that building a statement is
// apart from running it, and golden tests pin what is built.
type tables interface {
	Table(name string) string
}

// runSelection is the WHERE and HAVING of the runs f selects, over
// runAggregates' columns, with their parameters; and the same selection
// over the run table's rows (settledRunsSQL's aliases, which are
// runAggregates' names).
type runSelection struct {
	where      []string
	whereArgs  []any
	having     []string
	havingArgs []any
	// rows and rowArgs select settled rows (over settledColumns' aliases);
	// since and until bound their start (zero: open).
	rows         []string
	rowArgs      []any
	since, until time.Time
	project      string
	// rowCols are the run table's columns rows reads besides
	// settledColumns (tools, names).
	rowCols []string
	// filter is the run filter the selection was made from (selectRuns),
	// its status validated: what keepsLive applies to a run in flight
	// summarized in Go. nil for a selection written by hand.
	filter *RunFilter
}

// selectRuns builds the selection of f's runs: the window on the run's
// start (see runsStartingIn) and every filter, on whole-run figures.
func selectRuns(t tables, f RunFilter) (runSelection, error) {
	// A run is filed under its start (its earliest span's start) and its
	// figures are always the whole run's: the window picks runs, never
	// spans (see runsStartingIn).
	where := []string{"project = ?"}
	args := []any{f.Project}
	var having, rows, rowCols []string
	var hargs, rargs []any
	both := func(cond string, a ...any) {
		having, rows = append(having, cond), append(rows, cond)
		hargs, rargs = append(hargs, a...), append(rargs, a...)
	}
	if !f.Since.IsZero() {
		sub, subArgs := runsStartingIn(t, f.Project, f.Since, f.Until)
		where = append(where, "trace_id IN ("+sub+")")
		args = append(args, subArgs...)
		both("s_ns >= ?", uint64(f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		both("s_ns <= ?", uint64(f.Until.UnixNano()))
	}
	for _, c := range []struct{ v, cond string }{
		{f.Agent, "has(agents, ?)"},
		{f.Model, "has(models, ?)"},
		{f.Service, "svc = ?"},
		{f.Conversation, "conv = ?"},
	} {
		if c.v != "" {
			both(c.cond, c.v)
		}
	}
	if f.Task != "" {
		having = append(having, "if(task != '', task, if(root_name != '', root_name, first_name)) = ?")
		hargs = append(hargs, f.Task)
		rows = append(rows, "task = ?") // a row's task is already the resolved one
		rargs = append(rargs, f.Task)
	}
	if f.Tool != "" {
		// The tool statistics name a tool span without a tool name
		// UnknownName; the filter does too, so an alert's link finds its runs.
		having = append(having, "countIf(if(span_type = 'tool' AND tool_name = '', ?, tool_name) = ?) > 0")
		hargs = append(hargs, UnknownName, f.Tool)
		rows = append(rows, "has(tools, ?)")
		rargs = append(rargs, f.Tool)
		rowCols = append(rowCols, "tools")
	}
	status, err := ParseRunStatus(string(f.Status))
	if err != nil {
		return runSelection{}, err
	}
	switch status {
	case RunError:
		both("run_err = 1")
	case RunOK:
		both("run_err = 0")
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
			both(c.yes)
		default:
			both(c.no)
		}
	}
	if f.MinCost > 0 {
		both("c_total >= ?", f.MinCost)
	}
	if len(f.TraceIDs) > 0 {
		// In the WHERE, where the spans' key finds them, and in the HAVING
		// too: a read of the runs in flight replaces the WHERE by their
		// ids (runSelection.only).
		where = append(where, "trace_id IN ?")
		args = append(args, traceSet(f.TraceIDs))
		both("trace_id IN ?", traceSet(f.TraceIDs))
	}
	if f.Search != "" {
		having = append(having, "(startsWith(trace_id, ?) OR conv = ? OR positionCaseInsensitive(arrayStringConcat(groupUniqArray(name), '\\n'), ?) > 0)")
		hargs = append(hargs, strings.ToLower(f.Search), f.Search, f.Search)
		rows = append(rows, "(startsWith(trace_id, ?) OR conv = ? OR arrayExists(n -> positionCaseInsensitive(n, ?) > 0, names))")
		rargs = append(rargs, strings.ToLower(f.Search), f.Search, f.Search)
		rowCols = append(rowCols, "names")
	}
	f.Status = status
	return runSelection{where: where, whereArgs: args, having: having, havingArgs: hargs, rows: rows, rowArgs: rargs,
		since: f.Since, until: f.Until, project: f.Project, rowCols: rowCols, filter: &f}, nil
}

// args are the selection's parameters: the WHERE's, then the HAVING's.
func (sel runSelection) args() []any {
	return append(slices.Clip(sel.whereArgs), sel.havingArgs...)
}

// narrowed is the selection with one more WHERE condition (cond, with
// condArgs).
func (sel runSelection) narrowed(cond string, condArgs []any) runSelection {
	out := sel
	out.where = append(slices.Clip(sel.where), cond)
	out.whereArgs = append(slices.Clip(sel.whereArgs), condArgs...)
	return out
}

// only is the selection of the runs cond (with condArgs) names, by trace
// id: the WHERE is the project and cond alone (no window subquery: the ids
// find the spans by the key), the HAVING as before.
func (sel runSelection) only(cond string, condArgs []any) runSelection {
	out := sel
	out.where = []string{"project = ?", cond}
	out.whereArgs = append([]any{sel.project}, condArgs...)
	return out
}

// runAggregation is the statement that aggregates the selected runs'
// spans into runAggregates' columns (with extra, more columns), before any
// order or limit; cond is more HAVING. The selection's conditions (the
// project and the runs' ids: the spans' key) are a PREWHERE: with FINAL,
// 18.16 does not move them there itself, and read the thirty columns the
// aggregation reads for every row of the granules the key found (100
// runs of a 100M-density store: 0.66 s, 0.41 s so — of which ~0.38 s is
// the analysis of the counting rule's arrays, whatever the rows).
func runAggregation(t tables, sel runSelection, extra string, cond ...string) string {
	q := "SELECT " + runAggregates + extra + "\nFROM " + final(t.Table(schema.TableSpans)) +
		"\nPREWHERE " + strings.Join(sel.where, " AND ") + "\nGROUP BY trace_id"
	if having := append(slices.Clip(sel.having), cond...); len(having) > 0 {
		q += "\nHAVING " + strings.Join(having, " AND ")
	}
	return q
}

// runSummarySQL builds the statement of the selected runs' summaries
// (runColumns), in no order.
func runSummarySQL(t tables, sel runSelection) (string, []any) {
	return "SELECT " + runColumns + " FROM (" + runAggregation(t, sel, "") + ")", sel.args()
}

// runListSQL builds the statement of a page of the selected runs under
// order, after the cursor, of at most limit runs: runColumns and the sort
// key.
func runListSQL(t tables, sel runSelection, order runListOrder, after *cursor, limit int) (string, []any) {
	args := sel.args()
	var cond []string
	if after != nil {
		cond = append(cond, "(sort_key "+order.op()+" ? OR (sort_key = ? AND trace_id "+order.op()+" ?))")
		args = append(args, after.Ns, after.Ns, after.Key)
	}
	orderBy := "\nORDER BY sort_key " + order.dir() + ", trace_id " + order.dir()
	q := runAggregation(t, sel, ",\n\t"+order.key()+" AS sort_key", cond...) + orderBy + "\nLIMIT " + strconv.Itoa(limit)
	return "SELECT " + runColumns + ", sort_key FROM (" + q + ")" + orderBy, args
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
	case SortRetries:
		return "toUInt64(n_retries)" // settled rows only: live runs are ordered by runsByRetries
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

// runsStartingIn is a subquery of the trace ids of project's runs that
// start in [since, until] (until zero: open), read from span_facts, which is
// sorted by hour: a window's runs are a few hours' key ranges there, where
// the spans table (sorted by run) would be read whole.
//
// A run starting in the window has all its spans at or after since, so its
// earliest span among those starting from DefaultTraceWindow before since
// is its start. A run started earlier still, with no span in that hour, may
// come through; the caller's HAVING on the whole run's start drops it.
func runsStartingIn(t tables, project string, since, until time.Time) (string, []any) {
	q := "SELECT trace_id FROM " + t.Table(schema.TableSpanFacts) +
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

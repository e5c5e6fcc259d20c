package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/query/traceql"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// SearchReader answers queries in tally's TraceQL (package traceql).
type SearchReader struct{ *core }

// SearchLimits bound one search. Zero fields take the defaults.
type SearchLimits struct {
	// MaxRange is the longest window a query may cover (default 31 days).
	MaxRange time.Duration
	// MaxRowsToRead bounds the rows ClickHouse reads for one statement
	// (its max_rows_to_read; default 500M).
	MaxRowsToRead uint64
	// MaxExecution bounds one statement's run time (ClickHouse's
	// max_execution_time, and the request's; default 30s).
	MaxExecution time.Duration
	// MaxSeries is how many series a metrics answer holds (default
	// DefaultMaxSeries): those with the largest whole-window values.
	MaxSeries int
	// MaxExamined is how many candidate runs one request evaluates
	// before it answers with what it found and a cursor to go on
	// (default 5000).
	MaxExamined int
	// Query bounds the query's text (length, nesting).
	Query traceql.Limits
}

// The default search limits.
const (
	DefaultSearchMaxRange      = 31 * 24 * time.Hour
	DefaultSearchMaxRowsToRead = 500_000_000
	DefaultSearchMaxExecution  = 30 * time.Second
	DefaultSearchMaxExamined   = 5000
)

func (l SearchLimits) withDefaults() SearchLimits {
	if l.MaxRange <= 0 {
		l.MaxRange = DefaultSearchMaxRange
	}
	if l.MaxRowsToRead == 0 {
		l.MaxRowsToRead = DefaultSearchMaxRowsToRead
	}
	if l.MaxExecution <= 0 {
		l.MaxExecution = DefaultSearchMaxExecution
	}
	if l.MaxExamined <= 0 {
		l.MaxExamined = DefaultSearchMaxExamined
	}
	if l.MaxSeries <= 0 {
		l.MaxSeries = DefaultMaxSeries
	}
	return l
}

// SearchRequest is one search: the query over the spans of Project
// starting in [Since, Until].
type SearchRequest struct {
	Project      string
	Query        string
	Since, Until time.Time
	Limit        int    // runs per page: default 20, at most 1000
	Cursor       string // NextCursor of the previous page of the same query
	Limits       SearchLimits
	// WithSQL asks for the compiled statement in the answer (the UI's
	// "show SQL").
	WithSQL bool
}

// CompiledSQL is the statement a query compiled to, with its bound
// parameters as text, in order.
type CompiledSQL struct {
	Statement string   `json:"statement"`
	Args      []string `json:"args"`
}

// compiled is a statement and its arguments as CompiledSQL.
func compiled(q string, args []any) *CompiledSQL {
	out := &CompiledSQL{Statement: q, Args: make([]string, len(args))}
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			out.Args[i] = v.UTC().Format(time.RFC3339)
		case clickhouse.GroupSet:
			parts := make([]string, len(v.Value))
			for j, x := range v.Value {
				parts[j] = fmt.Sprint(x)
			}
			out.Args[i] = "(" + strings.Join(parts, ", ") + ")"
		default:
			out.Args[i] = fmt.Sprint(v)
		}
	}
	return out
}

// SearchPage is a page of the runs a query matched, newest first by
// their first matching span.
type SearchPage struct {
	// Kind is "runs": a metrics query answers a MetricsAnswer instead.
	Kind string      `json:"kind"`
	Runs []SearchRun `json:"runs"`
	// NextCursor continues the search after this page; empty at the end.
	NextCursor string `json:"next_cursor,omitempty"`
	// Examined is how many runs with candidate spans were evaluated.
	Examined int `json:"examined"`
	// Partial is true when the page stopped at the examined-runs limit
	// before it was full: NextCursor goes on from there.
	Partial bool `json:"partial,omitempty"`
	// SQL is the candidate read's statement, when asked for.
	SQL *CompiledSQL `json:"sql,omitempty"`
}

// SearchRun is a matched run: its summary (as in the run list) and the
// spans of it the query matched.
type SearchRun struct {
	RunSummary
	Matches []SpanMatch `json:"matches"`
}

// SpanMatch is a span a query matched.
type SpanMatch struct {
	SpanID     string    `json:"span_id"`
	Name       string    `json:"name"`
	Start      time.Time `json:"start"`
	DurationMs float64   `json:"duration_ms"`
	// Values are the fields select() and by() name, by their query
	// spelling; a field the span lacks is absent.
	Values map[string]string `json:"values,omitempty"`
	// Highlights are the span's content that a content condition
	// matched, around each match.
	Highlights []Highlight `json:"highlights,omitempty"`
}

// Highlight is an excerpt of a span's content around a match: Text is
// the excerpt, each of Ranges a match's [start, end) in bytes of Text.
type Highlight struct {
	Kind   string   `json:"kind"`
	Text   string   `json:"text"`
	Ranges [][2]int `json:"ranges"`
}

// ParseSearch parses a query under the limits, for a caller that wants
// to check it (a 400 with the position) before running it.
func ParseSearch(query string, lim SearchLimits) (*traceql.Query, error) {
	return traceql.Parse(query, lim.withDefaults().Query)
}

// ErrSearchRange is a window longer than SearchLimits.MaxRange, or empty.
var ErrSearchRange = errors.New("search window")

// searchCandidate is one run the candidate read returned.
type searchCandidate struct {
	traceID string
	first   uint64
	spans   []traceql.Span
	names   []string
}

// Search runs a query: the runs with spans in the window that match it.
func (r SearchReader) Search(ctx context.Context, req SearchRequest) (SearchPage, error) {
	lim := req.Limits.withDefaults()
	q, err := traceql.Parse(req.Query, lim.Query)
	if err != nil {
		return SearchPage{}, err
	}
	if q.Metrics != nil {
		return SearchPage{}, &traceql.Error{Pos: q.Metrics.Pos, Msg: q.Metrics.Fn + " makes a metrics query: its answer is series (Metrics), not runs"}
	}
	if err := checkSearchWindow(req.Since, req.Until, lim); err != nil {
		return SearchPage{}, err
	}
	limit := req.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 1000)
	var after *cursor
	if req.Cursor != "" {
		c, err := decodeCursor(req.Cursor)
		if err != nil {
			return SearchPage{}, err
		}
		after = &c
	}
	plan := traceql.NewPlan(q)
	c, err := compileSearch(r.target(), plan, req.Project, req.Since, req.Until)
	if err != nil {
		return SearchPage{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, lim.MaxExecution+5*time.Second)
	defer cancel()
	ctx = searchSettings(ctx, lim)

	page := SearchPage{Kind: "runs", Runs: []SearchRun{}}
	type match struct {
		cand    *searchCandidate
		results []traceql.Result
		sum     RunSummary
	}
	var found []match
	batch := max(limit*2, 100)
	if req.WithSQL {
		page.SQL = compiled(searchCandidatesSQL(r.store, dedupFor(r.store.Capabilities(), req.Since, req.Until), c, req.Project, req.Since, req.Until, after, batch))
	}
	page.Examined, after, page.Partial, err = r.evalCandidates(ctx, plan, c, req, after, batch, lim.MaxExamined,
		func(cd *searchCandidate, res []traceql.Result, facts runLevelFacts) bool {
			found = append(found, match{cand: cd, results: res, sum: facts.RunSummary})
			return len(found) < limit
		})
	if err != nil {
		return SearchPage{}, err
	}
	if after != nil {
		page.NextCursor = after.encode()
	}
	if len(found) == 0 {
		return page, nil
	}
	sums := map[string]RunSummary{}
	for _, m := range found {
		if m.sum.TraceID != "" {
			sums[m.cand.traceID] = m.sum
		}
	}
	if len(sums) < len(found) {
		cands := make([]searchCandidate, 0, len(found))
		for _, m := range found {
			cands = append(cands, *m.cand)
		}
		if sums, err = r.searchSummaries(ctx, req.Project, cands); err != nil {
			return SearchPage{}, err
		}
	}
	for _, m := range found {
		sum, ok := sums[m.cand.traceID]
		if !ok {
			continue
		}
		run := SearchRun{RunSummary: sum, Matches: matchesOf(plan, m.cand, m.results)}
		page.Runs = append(page.Runs, run)
	}
	if err := r.highlight(ctx, req, plan, page.Runs); err != nil {
		return SearchPage{}, err
	}
	return page, nil
}

// evalCandidates reads the candidate runs after the cursor in batches of
// at most batch, evaluates the query over each and hands each matching
// run to each (with its run-level facts when the query reads any), until
// each returns false, the window is exhausted, or maxExamined runs were
// evaluated. It returns the runs evaluated, the cursor after the last of
// them (nil when the window is exhausted) and whether it stopped at
// maxExamined with runs left. Search and the metrics evaluated in Go share
// it.
func (r SearchReader) evalCandidates(ctx context.Context, plan *traceql.Plan, c searchPlanSQL, req SearchRequest, after *cursor, batch, maxExamined int,
	each func(cd *searchCandidate, res []traceql.Result, facts runLevelFacts) bool) (examined int, last *cursor, partial bool, err error) {
	last = after
	runLevel := readsRunLevel(plan)
	for {
		if examined >= maxExamined {
			return examined, last, true, nil
		}
		n := min(batch, maxExamined-examined)
		cands, err := r.searchCandidates(ctx, c, req, plan, last, n)
		if err != nil {
			return 0, nil, false, err
		}
		var facts map[string]runLevelFacts
		if runLevel {
			if facts, err = r.runFactsOf(ctx, req.Project, plan, cands); err != nil {
				return 0, nil, false, err
			}
		}
		spanFacts, err := r.spanFactsOf(ctx, req, plan, cands)
		if err != nil {
			return 0, nil, false, err
		}
		for i := range cands {
			cd := &cands[i]
			examined++
			last = &cursor{Ns: cd.first, Key: cd.traceID}
			var f runLevelFacts
			if runLevel {
				var ok bool
				if f, ok = facts[cd.traceID]; !ok {
					continue // no longer stored (retention), or not readable as a run
				}
				setRunLevel(plan, cd.spans, f)
			}
			if spanFacts != nil {
				setGoSpanLevel(plan, cd, spanFacts, f)
			}
			if res := plan.Eval(cd.spans); len(res) > 0 && !each(cd, res, f) {
				if i == len(cands)-1 && len(cands) < n {
					return examined, nil, false, nil // the last run of the window
				}
				return examined, last, false, nil
			}
		}
		if len(cands) < n {
			return examined, nil, false, nil
		}
	}
}

// searchSettings bounds a search's statements in ClickHouse.
func searchSettings(ctx context.Context, lim SearchLimits) context.Context {
	return clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
		"max_rows_to_read":   int(min(lim.MaxRowsToRead, 1<<62)),
		"max_execution_time": max(1, int(lim.MaxExecution.Seconds())),
	}))
}

// checkSearchWindow checks a search's window against the limits.
func checkSearchWindow(since, until time.Time, lim SearchLimits) error {
	if since.IsZero() || until.IsZero() || !until.After(since) {
		return fmt.Errorf("%w: since must be before until", ErrSearchRange)
	}
	if until.Sub(since) > lim.MaxRange {
		return fmt.Errorf("%w: %s is longer than the limit of %s (--search-max-range)", ErrSearchRange,
			until.Sub(since).Round(time.Second), lim.MaxRange)
	}
	return nil
}

// searchCandidates reads a batch of candidate runs.
func (r SearchReader) searchCandidates(ctx context.Context, c searchPlanSQL, req SearchRequest, plan *traceql.Plan, after *cursor, n int) ([]searchCandidate, error) {
	q, args := searchCandidatesSQL(r.store, dedupFor(r.store.Capabilities(), req.Since, req.Until), c, req.Project, req.Since, req.Until, after, n)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	var out []searchCandidate
	for rows.Next() {
		var (
			cd                  searchCandidate
			fm                  uint64
			ids, parents, names []string
			starts, ends, bits  []uint64
		)
		values := make([][]string, len(plan.Fields))
		dest := []any{&cd.traceID, &cd.first, &fm, &ids, &parents, &names, &starts, &ends, &bits}
		for i := range values {
			dest = append(dest, &values[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		cd.names = names
		cd.spans = make([]traceql.Span, len(ids))
		for i := range ids {
			s := &cd.spans[i]
			s.ID, s.Parent, s.Start, s.End, s.Conds = ids[i], parents[i], starts[i], ends[i], bits[i]
			s.Duration = ends[i] - min(starts[i], ends[i])
			s.Values = make([]traceql.Value, len(values))
			for f := range values {
				s.Values[f] = fieldValue(values[f][i])
			}
		}
		out = append(out, cd)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if plan.NeedsTree() && len(out) > 0 {
		if err := r.searchTrees(ctx, req.Project, out, len(plan.Fields)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fieldValue reads a value the candidate read selected: "" when the
// span lacks the field, else "1" and the value as text.
func fieldValue(s string) traceql.Value {
	text, ok := strings.CutPrefix(s, "1")
	if !ok {
		return traceql.Value{}
	}
	v := traceql.Value{Present: true, Str: text}
	if n, err := strconv.ParseFloat(text, 64); err == nil {
		v.Num, v.IsNum = n, true
	}
	return v
}

// searchTrees adds to each candidate the spans no filter matched, with
// their parents, so that >> and << see through them.
func (r SearchReader) searchTrees(ctx context.Context, project string, cands []searchCandidate, fields int) error {
	byID := make(map[string]*searchCandidate, len(cands))
	ids := make([]string, len(cands))
	for i := range cands {
		byID[cands[i].traceID] = &cands[i]
		ids[i] = cands[i].traceID
	}
	q, args := searchTreeSQL(r.store, project, ids)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("search: read the runs' trees: %w", err)
	}
	defer rows.Close()
	have := map[[2]string]bool{}
	for i := range cands {
		for _, s := range cands[i].spans {
			have[[2]string{cands[i].traceID, s.ID}] = true
		}
	}
	for rows.Next() {
		var trace, id, parent string
		var start, end uint64
		if err := rows.Scan(&trace, &id, &parent, &start, &end); err != nil {
			return fmt.Errorf("search: read the runs' trees: %w", err)
		}
		cd := byID[trace]
		if cd == nil || have[[2]string{trace, id}] {
			continue
		}
		have[[2]string{trace, id}] = true
		cd.spans = append(cd.spans, traceql.Span{ID: id, Parent: parent, Start: start, End: end,
			Duration: end - min(start, end), Values: make([]traceql.Value, fields)})
		cd.names = append(cd.names, "")
	}
	return rows.Err()
}

// planReads reports whether any condition or field of the plan is one
// reads (run-level fields, outcomes, the retry intrinsics).
func planReads(p *traceql.Plan, reads func(traceql.Expr) bool) bool {
	return slices.ContainsFunc(p.Conds, reads) || slices.ContainsFunc(p.Fields, reads)
}

// readsRunLevel reports whether the plan reads run-level fields, in a
// condition or as a field: they come from the runs' summaries.
func readsRunLevel(p *traceql.Plan) bool {
	return planReads(p, func(e traceql.Expr) bool { return runLevel(e) || readsReview(e) })
}

// readsReview reports whether e reads what the safety review computes of
// a run: a step's effect class or terminal status, the run's signals.
func readsReview(e traceql.Expr) bool { return intrinsicIn(e, "effect", "step", "trace:signal") }

// intrinsicIn reports whether e is, or compares, one of the named
// intrinsics.
func intrinsicIn(e traceql.Expr, names ...string) bool {
	in, ok := intrinsicOf(e)
	return ok && slices.Contains(names, in.Name)
}

// isOutcome reports whether e reads trace:outcome.<name>, as a field or
// in a comparison.
func isOutcome(e traceql.Expr) bool {
	in, ok := intrinsicOf(e)
	return ok && in.Def.WithArg
}

// searchSummaries reads the summaries of candidate runs, as the run list
// has them.
func (r SearchReader) searchSummaries(ctx context.Context, project string, cands []searchCandidate) (map[string]RunSummary, error) {
	out := map[string]RunSummary{}
	for chunk := range slices.Chunk(cands, 1000) {
		ids := make([]string, len(chunk))
		var lo, hi uint64
		for i := range chunk {
			ids[i] = chunk[i].traceID
			if i == 0 || chunk[i].first < lo {
				lo = chunk[i].first
			}
			hi = max(hi, chunk[i].first)
		}
		// A run starts at or before its first matching span, and most
		// start within DefaultTraceWindow of it: read them in that window
		// (a few hours of the run table), then any longer run by id alone.
		f := RunFilter{Project: project, TraceIDs: ids, Limit: len(ids),
			Since: nsTime(lo).Add(-DefaultTraceWindow), Until: nsTime(hi)}
		for pass := 0; pass < 2 && len(f.TraceIDs) > 0; pass++ {
			pg, err := r.runList(ctx, f, true)
			if err != nil {
				return nil, fmt.Errorf("search: read the matched runs: %w", err)
			}
			for _, s := range pg.Runs {
				out[s.TraceID] = s
			}
			f.TraceIDs = slices.DeleteFunc(f.TraceIDs, func(id string) bool { _, ok := out[id]; return ok })
			f.Since, f.Until, f.Limit = time.Time{}, time.Time{}, len(f.TraceIDs)
		}
	}
	return out, nil
}

// runLevelFacts is what run-level fields read of a run: its summary and, when
// the query names trace:outcome, its outcomes.
type runLevelFacts struct {
	RunSummary
	outcomes []Outcome
	// What the safety review found, when the query reads it: each tool
	// step by span id, and the kinds of signal raised, sorted and
	// distinct.
	steps   map[string]safety.Step
	signals []string
	// fingerprint is the run's configuration fingerprint, when the query
	// reads trace:version.
	fingerprint string
}

// runFactsOf reads the run-level facts of candidate runs: their
// summaries and, when the plan needs them, their outcomes.
func (r SearchReader) runFactsOf(ctx context.Context, project string, p *traceql.Plan, cands []searchCandidate) (map[string]runLevelFacts, error) {
	sums, err := r.searchSummaries(ctx, project, cands)
	if err != nil {
		return nil, err
	}
	out := make(map[string]runLevelFacts, len(sums))
	var ids []string
	var lo, hi time.Time
	for id, s := range sums {
		out[id] = runLevelFacts{RunSummary: s}
		ids = append(ids, id)
		if lo.IsZero() || s.Start.Before(lo) {
			lo = s.Start
		}
		if s.End.After(hi) {
			hi = s.End
		}
	}
	if planReads(p, readsReview) && len(ids) > 0 {
		runs := make([]RunSummary, 0, len(ids))
		for _, id := range ids {
			runs = append(runs, out[id].RunSummary)
		}
		err := r.reviewRuns(ctx, project, runs, func(run *RunSummary, rv *runReview) {
			f := out[run.TraceID]
			f.steps = make(map[string]safety.Step, len(rv.run.Steps))
			for _, st := range rv.run.Steps {
				f.steps[st.SpanID] = st
			}
			f.signals = []string{}
			for _, sg := range rv.signals {
				f.signals = append(f.signals, string(sg.Kind))
			}
			slices.Sort(f.signals)
			f.signals = slices.Compact(f.signals)
			out[run.TraceID] = f
		})
		if err != nil {
			return nil, fmt.Errorf("search: review the runs: %w", err)
		}
	}
	if planReads(p, func(e traceql.Expr) bool { return intrinsicIn(e, "trace:version") }) && len(ids) > 0 {
		configs, err := r.runConfigs(ctx, project, ids, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("search: read the runs' configurations: %w", err)
		}
		for id, c := range configs {
			f := out[id]
			f.fingerprint = c.Fingerprint
			out[id] = f
		}
	}
	if planReads(p, isOutcome) && len(ids) > 0 {
		outs, err := r.outcomes(ctx, project, ids, lo, hi)
		if err != nil {
			return nil, fmt.Errorf("search: read outcomes: %w", err)
		}
		for id, o := range outs {
			f := out[id]
			f.outcomes = o
			out[id] = f
		}
	}
	return out, nil
}

// setRunLevel sets, on every span of a run, the bits of the run-level
// conditions that hold for it, and the run-level fields' values.
func setRunLevel(p *traceql.Plan, spans []traceql.Span, sum runLevelFacts) {
	var bits uint64
	for i, c := range p.Conds {
		if runLevel(c) && runCondHolds(c.(*traceql.Binary), sum) {
			bits |= 1 << i
		}
	}
	values := map[int]traceql.Value{}
	for i, f := range p.Fields {
		if in, ok := f.(*traceql.Intrinsic); ok && in.Def.Trace {
			values[i] = runValue(in, sum)
		}
	}
	for i := range spans {
		spans[i].Conds |= bits
		for f, v := range values {
			spans[i].Values[f] = v
		}
	}
}

// runValue is a run-level field's value in a run's facts.
func runValue(in *traceql.Intrinsic, s runLevelFacts) traceql.Value {
	num := func(x float64) traceql.Value { return traceql.Value{Present: true, Num: x, IsNum: true} }
	str := func(x string) traceql.Value { return traceql.Value{Present: x != "", Str: x} }
	switch in.Name {
	case "trace:duration":
		return num(float64(s.End.Sub(s.Start)))
	case "trace:rootName":
		return str(s.Name)
	case "trace:rootService":
		return str(s.Service)
	case "trace:cost":
		return num(s.Cost.Total)
	case "trace:status":
		return str(string(s.Status))
	case "trace:task":
		return str(s.Task)
	case "trace:conversation":
		return str(s.ConversationID)
	case "trace:user":
		return str(s.UserID)
	case "trace:version":
		return str(s.fingerprint)
	case "trace:signal":
		return str(strings.Join(s.signals, ","))
	case "trace:outcome":
		if o := s.outcome(in.Arg); o != nil {
			v := traceql.Value{Present: true, Str: o.Label}
			if verdict := outcomeVerdict(o); verdict != nil && v.Str == "" {
				v.Str = map[bool]string{true: "pass", false: "fail"}[*verdict]
			}
			if o.Score != nil {
				v.Num, v.IsNum = *o.Score, true
			}
			return v
		}
	}
	return traceql.Value{}
}

// outcome is the run's outcome of that name: the first listed (a posted
// one before one its spans carry).
func (s runLevelFacts) outcome(name string) *Outcome {
	for i := range s.outcomes {
		if s.outcomes[i].Name == name {
			return &s.outcomes[i]
		}
	}
	return nil
}

// outcomeVerdict is an outcome's pass/fail: its verdict, else its
// label's.
func outcomeVerdict(o *Outcome) *bool {
	if o.Passed != nil {
		return o.Passed
	}
	return VerdictOfLabel(o.Label)
}

// outcomeHolds compares trace:outcome.<name>: a string with its label
// or its verdict (pass, fail), a number with its score, a boolean with
// its verdict.
func outcomeHolds(b *traceql.Binary, s runLevelFacts) bool {
	lit := b.R.(*traceql.Literal)
	o := s.outcome(b.L.(*traceql.Intrinsic).Arg)
	if lit.Type == traceql.TNil {
		return (o != nil) == (b.Op == traceql.OpNeq)
	}
	if o == nil {
		return false
	}
	switch lit.Type {
	case traceql.TNumber:
		return o.Score != nil && traceql.Compare(b.Op, *o.Score, lit.Num)
	case traceql.TBool:
		v := outcomeVerdict(o)
		return v != nil && (*v == lit.Bool) == (b.Op == traceql.OpEq)
	}
	words := []string{o.Label}
	if v := outcomeVerdict(o); v != nil {
		words = append(words, map[bool]string{true: "pass", false: "fail"}[*v])
	}
	if b.Op == traceql.OpNeq || b.Op == traceql.OpNre {
		for _, w := range words {
			if !textHolds(b, w, lit.Str) {
				return false
			}
		}
		return true
	}
	for _, w := range words {
		if textHolds(b, w, lit.Str) {
			return true
		}
	}
	return false
}

// runCondHolds evaluates a comparison of a run-level field.
func runCondHolds(b *traceql.Binary, s runLevelFacts) bool {
	in := b.L.(*traceql.Intrinsic)
	switch {
	case in.Def.WithArg:
		return outcomeHolds(b, s)
	case in.Name == "trace:signal":
		return signalHolds(b, s.signals)
	}
	return valueHolds(b, runValue(in, s))
}

// signalHolds compares trace:signal, a run's list of signal kinds: = nil
// holds when the run raised none; = and =~ (and the ordering operators)
// when any kind satisfies them; != and !~ when none is equal or matches,
// so that { trace:signal != "unsafe_retry" } is every run without one.
func signalHolds(b *traceql.Binary, kinds []string) bool {
	lit := b.R.(*traceql.Literal)
	if lit.Type == traceql.TNil {
		return (len(kinds) > 0) == (b.Op == traceql.OpNeq)
	}
	if lit.Type != traceql.TString {
		return false
	}
	positive := *b
	switch b.Op {
	case traceql.OpNeq:
		positive.Op = traceql.OpEq
	case traceql.OpNre:
		positive.Op = traceql.OpRe
	}
	hit := slices.ContainsFunc(kinds, func(k string) bool { return textHolds(&positive, k, lit.Str) })
	if positive.Op != b.Op {
		return !hit
	}
	return hit
}

// valueHolds evaluates a comparison of a field read in Go (run-level and
// retry fields) as the SQL of span fields does: nil tests presence; any
// other comparison of a field the span or run lacks is false; a number
// or duration compares as a number, a boolean as its word, a string as
// text.
func valueHolds(b *traceql.Binary, v traceql.Value) bool {
	lit := b.R.(*traceql.Literal)
	switch {
	case lit.Type == traceql.TNil:
		return v.Present == (b.Op == traceql.OpNeq)
	case !v.Present:
		return false
	case lit.Type == traceql.TNumber:
		return v.IsNum && traceql.Compare(b.Op, v.Num, lit.Num)
	case lit.Type == traceql.TDuration:
		return v.IsNum && traceql.Compare(b.Op, v.Num, float64(lit.Dur))
	case lit.Type == traceql.TBool:
		return textHolds(b, v.Str, strconv.FormatBool(lit.Bool))
	}
	return textHolds(b, v.Str, lit.Str)
}

// textHolds is compareText's twin in Go.
func textHolds(b *traceql.Binary, v, lit string) bool {
	switch b.Op {
	case traceql.OpEq:
		return v == lit
	case traceql.OpNeq:
		return v != lit
	case traceql.OpGt:
		return v > lit
	case traceql.OpGte:
		return v >= lit
	case traceql.OpLt:
		return v < lit
	case traceql.OpLte:
		return v <= lit
	case traceql.OpRe:
		return b.Re.MatchString(v)
	case traceql.OpNre:
		return !b.Re.MatchString(v)
	case traceql.OpContains:
		return strings.Contains(foldText(v), foldText(lit))
	}
	return false
}

// matchesOf lists the spans of a run's results, each once, in start
// order, with the values select() and by() read.
func matchesOf(p *traceql.Plan, cd *searchCandidate, results []traceql.Result) []SpanMatch {
	var idx []int
	for _, r := range results {
		idx = append(idx, r.Spans...)
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Compare(cd.spans[a].Start, cd.spans[b].Start)
	})
	out := make([]SpanMatch, 0, len(idx))
	for _, i := range idx {
		s := cd.spans[i]
		m := SpanMatch{SpanID: s.ID, Name: cd.names[i], Start: nsTime(s.Start), DurationMs: float64(s.Duration) / 1e6}
		for f, e := range p.Fields {
			if v := s.Values[f]; v.Present {
				if m.Values == nil {
					m.Values = map[string]string{}
				}
				m.Values[traceql.FieldName(e)] = v.Text()
			}
		}
		out = append(out, m)
	}
	return out
}

// contentNeedles are the strings of the query's positive content
// conditions (contains and =), whose matches results highlight.
func contentNeedles(p *traceql.Plan) []string {
	var out []string
	for _, c := range p.Conds {
		b, ok := c.(*traceql.Binary)
		if !ok {
			continue
		}
		in, ok := b.L.(*traceql.Intrinsic)
		if !ok || in.Name != "content" || (b.Op != traceql.OpContains && b.Op != traceql.OpEq) {
			continue
		}
		if lit := b.R.(*traceql.Literal); lit.Type == traceql.TString {
			out = append(out, lit.Str)
		}
	}
	return out
}

// highlightContext is how many bytes of content a highlight shows on
// each side of a match.
const highlightContext = 60

// maxHighlights is how many highlights a span gets.
const maxHighlights = 3

// highlight adds to the matched spans the excerpts of their content
// around the query's content needles.
func (r SearchReader) highlight(ctx context.Context, req SearchRequest, p *traceql.Plan, runs []SearchRun) error {
	needles := contentNeedles(p)
	if len(needles) == 0 {
		return nil
	}
	var keys [][2]string
	where := map[[2]string]*SpanMatch{}
	for i := range runs {
		for j := range runs[i].Matches {
			k := [2]string{runs[i].TraceID, runs[i].Matches[j].SpanID}
			keys = append(keys, k)
			where[k] = &runs[i].Matches[j]
		}
	}
	for chunk := range slices.Chunk(keys, 1000) {
		q, args := searchContentSQL(r.store, req.Project, req.Since, req.Until, chunk)
		var rows []schema.Content
		if err := r.store.Conn().Select(ctx, &rows, q, args...); err != nil {
			return fmt.Errorf("search: read matched content: %w", err)
		}
		for _, c := range rows {
			m := where[[2]string{c.TraceID, c.SpanID}]
			if m == nil || len(m.Highlights) >= maxHighlights {
				continue
			}
			if h, ok := highlightOf(c.Kind, c.Value, needles); ok {
				m.Highlights = append(m.Highlights, h)
			}
		}
	}
	return nil
}

// highlightOf is the excerpt of value around its first match of a
// needle (case-folded), with every match inside the excerpt marked.
func highlightOf(kind, value string, needles []string) (Highlight, bool) {
	ranges := foldedMatches(value, needles)
	if len(ranges) == 0 {
		return Highlight{}, false
	}
	lo := max(0, ranges[0][0]-highlightContext)
	hi := min(len(value), ranges[0][1]+highlightContext)
	for lo > 0 && !utf8.RuneStart(value[lo]) {
		lo--
	}
	for hi < len(value) && !utf8.RuneStart(value[hi]) {
		hi++
	}
	h := Highlight{Kind: kind, Text: value[lo:hi]}
	for _, rg := range ranges {
		if rg[0] >= lo && rg[1] <= hi {
			h.Ranges = append(h.Ranges, [2]int{rg[0] - lo, rg[1] - lo})
		}
	}
	return h, true
}

// foldedMatches finds the needles in s under Unicode case folding (the
// folds SQL's contains applies), as byte ranges of s, in order.
func foldedMatches(s string, needles []string) [][2]int {
	var out [][2]int
	for _, n := range needles {
		nr := []rune(foldText(n))
		if len(nr) == 0 {
			continue
		}
		// Walk s rune by rune, comparing folded runes: offsets stay
		// offsets of s even where folding changes a rune's length.
		for i := 0; i < len(s); {
			j, k := i, 0
			for k < len(nr) && j < len(s) {
				r, w := utf8.DecodeRuneInString(s[j:])
				if foldRune(r) != nr[k] {
					break
				}
				j += w
				k++
			}
			if k == len(nr) {
				out = append(out, [2]int{i, j})
				i = j
				continue
			}
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
		}
	}
	slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	return out
}

// searchContentSQL reads the content of the given spans.
func searchContentSQL(t tables, project string, since, until time.Time, keys [][2]string) (string, []any) {
	pairs := make([]string, len(keys))
	args := []any{project, since.UTC().Truncate(time.Second), until.UTC()}
	for i, k := range keys {
		pairs[i] = "(?, ?)"
		args = append(args, k[0], k[1])
	}
	return "SELECT " + schema.ContentColumnNames() + " FROM " + final(t.Table(schema.TableContent)) +
		" WHERE project = ? AND start >= ? AND start <= ? AND (trace_id, span_id) IN (" + strings.Join(pairs, ", ") + ")" +
		" ORDER BY trace_id, span_id, kind, source_key", args
}

// vocabulary lists the values of an intrinsic computed in Go, whose
// values are a fixed set: autocomplete offers them all (with no span
// count: counting them would mean reviewing every run of the window).
func vocabulary(name string) []string {
	words := func(in ...string) []string { return in }
	switch name {
	case "effect":
		return stringsOf(safety.Effects())
	case "step":
		return stringsOf(safety.Statuses())
	case "trace:signal":
		return stringsOf(safety.Kinds())
	case "retry_class":
		return stringsOf(attribution.Classes())
	case "retry_args":
		return words("same", "changed")
	case "retry", "counted":
		return words("true", "false")
	}
	return nil
}

// stringsOf converts a list of string-typed words.
func stringsOf[S ~string](in []S) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// toolFacts are a tool call's retry intrinsics.
type toolFacts struct {
	class attribution.Class
	args  string // retry_args: same, changed, or "" (not a retry, or arguments unknown)
}

// toolFactsOf classifies the tool calls of candidate runs by the retry
// rules (attribution.ClassifyRetries), and finds for each retry the call
// it retries: the latest earlier call with its call id or step id, else
// the latest earlier call of its tool under its parent.
func (r SearchReader) toolFactsOf(ctx context.Context, project string, cands []searchCandidate) (map[[2]string]toolFacts, error) {
	q, args := searchToolCallsSQL(r.store, project, traceIDsOf(cands))
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search: read tool calls: %w", err)
	}
	var calls []attribution.ToolCall
	for rows.Next() {
		var c attribution.ToolCall
		var failed uint8
		if err := rows.Scan(&c.TraceID, &c.SpanID, &c.ParentSpanID, &c.Tool, &c.CallID, &c.StepID, &c.ArgsHash, &failed,
			&c.StartNs, &c.DurationNs, &c.Attempt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("search: read tool calls: %w", err)
		}
		c.Error = failed == 1
		calls = append(calls, c)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("search: read tool calls: %w", err)
	}
	classes := attribution.ClassifyRetries(calls)
	order := make([]int, len(calls))
	for i := range order {
		order[i] = i
	}
	// The retry rules' order: by run, then start, then span id.
	slices.SortStableFunc(order, func(a, b int) int {
		ca, cb := &calls[a], &calls[b]
		return cmp.Or(strings.Compare(ca.TraceID, cb.TraceID), cmp.Compare(ca.StartNs, cb.StartNs), strings.Compare(ca.SpanID, cb.SpanID))
	})
	out := make(map[[2]string]toolFacts, len(calls))
	var (
		trace                  string
		bySibling, byID, byStp map[string]int
	)
	for _, i := range order {
		c := &calls[i]
		if c.TraceID != trace {
			trace, bySibling, byID, byStp = c.TraceID, map[string]int{}, map[string]int{}, map[string]int{}
		}
		sibling := c.ParentSpanID + "\x00" + c.Tool
		f := toolFacts{class: classes[i]}
		if f.class.Retry() {
			prev, ok := -1, false
			switch f.class {
			case attribution.ClassRetryCallID:
				prev, ok = byID[c.CallID]
			case attribution.ClassRetryStep:
				prev, ok = byStp[c.StepID]
			default:
				prev, ok = bySibling[sibling]
			}
			if ok && c.ArgsHash != "" && calls[prev].ArgsHash != "" {
				f.args = map[bool]string{true: "same", false: "changed"}[c.ArgsHash == calls[prev].ArgsHash]
			}
		}
		out[[2]string{c.TraceID, c.SpanID}] = f
		bySibling[sibling] = i
		if c.CallID != "" {
			byID[c.CallID] = i
		}
		if c.StepID != "" {
			byStp[c.StepID] = i
		}
	}
	return out, nil
}

// toolValue is a retry intrinsic's value for a tool call.
func toolValue(in *traceql.Intrinsic, f toolFacts, ok bool) traceql.Value {
	if !ok {
		return traceql.Value{}
	}
	switch in.Name {
	case "retry":
		return traceql.Value{Present: true, Str: strconv.FormatBool(f.class.Retry())}
	case "retry_class":
		return traceql.Value{Present: true, Str: string(f.class)}
	case "retry_args":
		return traceql.Value{Present: f.args != "", Str: f.args}
	}
	return traceql.Value{}
}

// goSpanFacts are the Go-read span-level facts of a batch of candidate
// runs, keyed by (trace id, span id): the retry intrinsics of tool calls
// and whether each span's usage counts. Effect and step come from the
// runs' reviews (runLevelFacts.steps).
type goSpanFacts struct {
	tools   map[[2]string]toolFacts
	counted map[[2]string]bool
}

// spanFactsOf reads what the plan's Go-read span-level intrinsics need of
// candidate runs; nil when it reads none.
func (r SearchReader) spanFactsOf(ctx context.Context, req SearchRequest, p *traceql.Plan, cands []searchCandidate) (*goSpanFacts, error) {
	if !planReads(p, goSpanLevel) || len(cands) == 0 {
		return nil, nil
	}
	out := &goSpanFacts{}
	var err error
	if planReads(p, func(e traceql.Expr) bool { return intrinsicIn(e, "retry", "retry_class", "retry_args") }) {
		if out.tools, err = r.toolFactsOf(ctx, req.Project, cands); err != nil {
			return nil, err
		}
	}
	if planReads(p, func(e traceql.Expr) bool { return intrinsicIn(e, "counted") }) {
		if out.counted, err = r.countedOf(ctx, req.Project, cands, req.Since, req.Until); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// countedOf is whether each span of candidate runs starting in [since,
// until] counts its usage, as attribution decides it for the run's detail
// and its figures (loadRunSpans attributes each run whole).
func (r SearchReader) countedOf(ctx context.Context, project string, cands []searchCandidate, since, until time.Time) (map[[2]string]bool, error) {
	spans, err := r.loadRunSpans(ctx, project, traceIDsOf(cands), since, until.Add(time.Second), DefaultTraceWindow)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	out := make(map[[2]string]bool, len(spans))
	for _, a := range spans {
		if a.UsageCounted {
			out[[2]string{a.TraceID, a.SpanID}] = true
		}
	}
	return out, nil
}

// traceIDsOf lists candidate runs' trace ids.
func traceIDsOf(cands []searchCandidate) []string {
	ids := make([]string, len(cands))
	for i := range cands {
		ids[i] = cands[i].traceID
	}
	return ids
}

// goSpanValue is a Go-read span-level intrinsic's value on a span of a
// run: the retry fields on tool calls, effect and step on reviewed tool
// steps, counted on every span.
func goSpanValue(in *traceql.Intrinsic, key [2]string, sf *goSpanFacts, run runLevelFacts) traceql.Value {
	switch in.Name {
	case "retry", "retry_class", "retry_args":
		f, ok := sf.tools[key]
		return toolValue(in, f, ok)
	case "effect", "step":
		st, ok := run.steps[key[1]]
		if !ok {
			return traceql.Value{}
		}
		if in.Name == "effect" {
			return traceql.Value{Present: true, Str: string(st.Effect)}
		}
		return traceql.Value{Present: true, Str: string(st.Status)}
	case "counted":
		return traceql.Value{Present: true, Str: strconv.FormatBool(sf.counted[key])}
	}
	return traceql.Value{}
}

// setGoSpanLevel sets, on each span of a candidate run, the bits of the
// conditions on Go-read span-level intrinsics that hold for it, and those
// fields' values.
func setGoSpanLevel(p *traceql.Plan, cd *searchCandidate, sf *goSpanFacts, run runLevelFacts) {
	for si := range cd.spans {
		s := &cd.spans[si]
		key := [2]string{cd.traceID, s.ID}
		for i, c := range p.Conds {
			if !goSpanLevel(c) {
				continue
			}
			var holds bool
			if b, isCmp := c.(*traceql.Binary); isCmp {
				holds = valueHolds(b, goSpanValue(b.L.(*traceql.Intrinsic), key, sf, run))
			} else { // a bare boolean: retry, counted
				holds = goSpanValue(c.(*traceql.Intrinsic), key, sf, run).Str == "true"
			}
			if holds {
				s.Conds |= 1 << i
			}
		}
		for fi, e := range p.Fields {
			if in, isIn := e.(*traceql.Intrinsic); isIn && goSpanIntrinsics[in.Name] {
				s.Values[fi] = goSpanValue(in, key, sf, run)
			}
		}
	}
}

// SavedQuery is a search query a project saved by name.
type SavedQuery struct {
	Name    string    `json:"name"`
	Query   string    `json:"query"`
	SavedAt time.Time `json:"saved_at"`
}

// SavedQueries lists the project's saved queries by name: the latest save
// of each name not deleted since.
func (r SearchReader) SavedQueries(ctx context.Context, project string) ([]SavedQuery, error) {
	q, args := savedQueriesSQL(r.store, project)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("saved queries: %w", err)
	}
	defer rows.Close()
	out := []SavedQuery{}
	for rows.Next() {
		var s SavedQuery
		if err := rows.Scan(&s.Name, &s.Query, &s.SavedAt); err != nil {
			return nil, fmt.Errorf("saved queries: %w", err)
		}
		s.SavedAt = s.SavedAt.UTC()
		out = append(out, s)
	}
	return out, rows.Err()
}

// savedQueriesSQL reads a project's saved queries: per name, the row of
// the highest version, unless it is a deletion.
func savedQueriesSQL(t tables, project string) (string, []any) {
	return "SELECT name, argMax(query, version), argMax(saved_at, version) FROM " + t.Table(schema.TableSavedQueries) +
		" WHERE project = ? GROUP BY name HAVING argMax(deleted, version) = 0 ORDER BY name", []any{project}
}

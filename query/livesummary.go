package query

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/schema"
)

// The runs in flight, summarized in Go.
//
// A read takes the runs in flight (liveSet) from their spans. Aggregated in
// ClickHouse (runAggregation) they cost a fixed ~0.4 s on 18.16 before any
// span is read — the counting rule's arrays (runCountedSQL), expanded alias
// by alias, are that long to analyze — and ~3 ms a run more: every page
// that lists runs took about a second while agents were sending. So when
// the runs in flight are named by id and few spans, a read streams their
// spans (the outline: no attributes, events or content) and summarizes
// each with the rule of a run's detail (summarizeRow: one rule, the one a
// settled row is computed with), and applies the list's filters, order and
// cursor in Go (runSelection.keepsLive, runListOrder.keyOf): the same runs,
// in the same order, as the aggregation would give. More spans than
// maxLiveSummarySpans (a catch-up, a giant run in flight), and the
// aggregation answers.

// maxLiveSummarySpans is the most span rows (unmerged duplicates included)
// the runs in flight may have for a read to summarize them in Go. The
// spans are folded run by run as they come, so a read holds one run's
// spans at a time (~1 KB a span); the bound keeps every page from reading
// a catch-up's worth of spans into Go (after a restart under load), where
// the aggregation answers in ClickHouse. Agents' ordinary traffic is far
// below it: ~100 runs of ~30 spans in flight at 50 spans a second.
const maxLiveSummarySpans = 100_000

// liveRun is a run in flight summarized from its spans: its figures as
// the aggregation has them, with its retries and repeats, and what the
// list's filters read beyond them (its span names and tools).
type liveRun struct {
	row              runRow
	retries, repeats int
	names, tools     map[string]bool
}

// summary is the run's summary, with its retries and repeats.
func (l *liveRun) summary() RunSummary {
	s := l.row.summary()
	retries, repeats := l.retries, l.repeats
	s.ToolRetries, s.ToolRepeats = &retries, &repeats
	return s
}

// liveInGo reports whether a read of the runs lv names, selected by sel,
// may summarize them in Go: they are named by id, and sel is a run
// filter's (selectRuns), whose conditions keepsLive applies.
func liveInGo(sel runSelection, lv liveSet) bool {
	return !lv.all && lv.sub == "" && len(lv.ids) > 0 && sel.filter != nil
}

// liveSummaries summarizes project's runs ids (the runs in flight) from
// their spans; ok is false, and nothing read but their count, when they
// have more than the reader's bound of span rows (maxLiveSummarySpans).
func (r *core) liveSummaries(ctx context.Context, project string, ids []string) (runs []liveRun, ok bool, err error) {
	limit := cmp.Or(r.liveSummarySpans, maxLiveSummarySpans)
	if limit < 0 {
		return nil, false, nil
	}
	// Where their spans are, from the key columns alone (as Settle locates
	// the runs it settles): the wide read then visits those days only.
	lq, largs := settleExtentSQL(r.store, project, ids)
	var first, last time.Time
	var n uint64
	if err := r.store.Conn().QueryRow(ctx, lq, largs...).Scan(&first, &last, &n); err != nil {
		return nil, false, fmt.Errorf("locate runs in flight: %w", err)
	}
	if n > uint64(limit) {
		return nil, false, nil
	}
	if n == 0 {
		return nil, true, nil
	}
	q, args := liveSummarySpansSQL(r.store, project, ids, first, last)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("load runs in flight: %w", err)
	}
	defer rows.Close()
	// The rows come in run order: each run is summarized as its last span
	// is read, and its spans' slice reused for the next.
	var run []schema.Span
	err = liveOutline.ScanEach(rows, func(s *schema.Span) error {
		if len(run) > 0 && run[0].TraceID != s.TraceID {
			runs = append(runs, summarizeLive(run))
			run = run[:0]
		}
		run = append(run, *s)
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("load runs in flight: %w", err)
	}
	if len(run) > 0 {
		runs = append(runs, summarizeLive(run))
	}
	return runs, true, nil
}

// liveOutline is what a live run's summary reads of its spans: the
// outline without attributes or events.
var liveOutline = schema.SpanOutline(schema.OutlineKeep{})

// liveSummarySpansSQL builds liveSummaries' read: the runs ids' spans,
// deduplicated, as liveOutline, within their first and last start (second),
// in run and start order.
func liveSummarySpansSQL(t tables, project string, ids []string, first, last time.Time) (string, []any) {
	q := "SELECT " + liveOutline.List() + " FROM " + final(t.Table(schema.TableSpans)) +
		" PREWHERE project = ? AND trace_id IN ? WHERE start >= ? AND start <= ? ORDER BY trace_id, start_ns, span_id"
	return q, []any{project, traceSet(ids), first.UTC(), last.UTC()}
}

// summarizeLive is a run's liveRun from its spans (in start order).
func summarizeLive(spans []schema.Span) liveRun {
	row, _ := summarizeRow(spans)
	_, retries, repeats := runToolClasses(spans)
	tools, names := runSpanSets(spans)
	return liveRun{row: row, retries: retries, repeats: repeats, names: names, tools: tools}
}

// liveKept is the runs in flight lv names that sel keeps, summarized in
// Go (liveSummaries), in no order; ok is false when they are to be
// aggregated in ClickHouse instead (liveInGo, or too many spans).
func (r *core) liveKept(ctx context.Context, sel runSelection, lv liveSet) ([]liveRun, bool, error) {
	if !liveInGo(sel, lv) {
		return nil, false, nil
	}
	runs, ok, err := r.liveSummaries(ctx, sel.project, lv.ids)
	if err != nil || !ok {
		return nil, ok, err
	}
	return slices.DeleteFunc(runs, func(l liveRun) bool { return !sel.keepsLive(&l) }), true, nil
}

// keepsLive reports whether the live run l meets sel's filter: the
// conditions selectRuns writes as the aggregation's HAVING, over the same
// figures.
func (sel runSelection) keepsLive(l *liveRun) bool {
	f, rr := sel.filter, &l.row
	if !f.Since.IsZero() && rr.StartNs < uint64(f.Since.UnixNano()) ||
		!f.Until.IsZero() && rr.StartNs > uint64(f.Until.UnixNano()) {
		return false
	}
	if f.Agent != "" && !slices.Contains(rr.Agents, f.Agent) || f.Model != "" && !slices.Contains(rr.Models, f.Model) ||
		f.Service != "" && rr.Service != f.Service || f.Conversation != "" && rr.Conv != f.Conversation {
		return false
	}
	if f.Task != "" && cmp.Or(rr.Task, rr.RootName, rr.FirstName) != f.Task {
		return false
	}
	if f.Tool != "" && !l.tools[f.Tool] {
		return false
	}
	switch f.Status {
	case RunError:
		if rr.RunErr != 1 {
			return false
		}
	case RunOK:
		if rr.RunErr != 0 {
			return false
		}
	}
	if f.HasErrors != nil && *f.HasErrors != (rr.Err > 0) {
		return false
	}
	if f.HasRecoveredErrors != nil && *f.HasRecoveredErrors != (rr.RunErr == 0 && rr.Err > 0) {
		return false
	}
	if f.MinCost > 0 && !(rr.CTotal >= f.MinCost) {
		return false
	}
	if len(f.TraceIDs) > 0 && !slices.ContainsFunc(f.TraceIDs, func(id string) bool { return strings.ToLower(id) == rr.TraceID }) {
		return false
	}
	if f.Search != "" && !strings.HasPrefix(rr.TraceID, strings.ToLower(f.Search)) && rr.Conv != f.Search {
		found := false
		for name := range l.names {
			if containsFoldASCII(name, f.Search) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// containsFoldASCII reports whether s contains substr, ASCII letters
// compared without case, as ClickHouse's positionCaseInsensitive does.
func containsFoldASCII(s, substr string) bool {
	n := len(substr)
	for i := 0; i+n <= len(s); i++ {
		if equalFoldASCII(s[i:i+n], substr) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// keyOf is the run's sort key under the order, as key() computes it in
// SQL over the aggregation's columns.
func (o runListOrder) keyOf(l *liveRun) uint64 {
	rr := &l.row
	switch o.sort {
	case SortDuration:
		if rr.EndNs > rr.StartNs {
			return rr.EndNs - rr.StartNs
		}
		return 0
	case SortCost:
		// ClickHouse's round of a float is to even, at ties.
		return uint64(math.RoundToEven(max(rr.CTotal, 0) * 1e9))
	case SortTokens:
		return rr.In + rr.Out
	case SortErrors:
		return rr.Err
	case SortRetries:
		return uint64(l.retries)
	}
	return rr.StartNs
}

// liveListInGo is liveList's runs from the runs in flight summarized in
// Go: those sel keeps after the cursor, with their keys under order, in no
// order (the page's merge, pageOf, orders and cuts them with the settled
// ones); ok is false when they are to be aggregated instead (liveKept).
func (r *core) liveListInGo(ctx context.Context, sel runSelection, lv liveSet, order runListOrder, after *cursor) ([]keyedRun, bool, error) {
	runs, ok, err := r.liveKept(ctx, sel, lv)
	if err != nil || !ok {
		return nil, ok, err
	}
	out := make([]keyedRun, 0, len(runs))
	for i := range runs {
		l := &runs[i]
		if key := order.keyOf(l); after == nil || order.after(key, l.row.TraceID, *after) {
			out = append(out, keyedRun{l.summary(), key})
		}
	}
	return out, true, nil
}

// liveWindowRunsInGo is liveWindowRuns' runs from the runs in flight
// summarized in Go: those sel keeps (of shard's part), in no order; ok is
// false when they are to be aggregated instead (liveKept, or a part).
func (r *core) liveWindowRunsInGo(ctx context.Context, sel runSelection, lv liveSet, shard Shard) ([]windowRun, bool, error) {
	if c, _ := shard.cond(); c != "" {
		return nil, false, nil
	}
	runs, ok, err := r.liveKept(ctx, sel, lv)
	if err != nil || !ok {
		return nil, ok, err
	}
	out := make([]windowRun, len(runs))
	for i := range runs {
		out[i] = windowRun{RunSummary: runs[i].summary()}
	}
	return out, true, nil
}

// maxLiveLiteralRuns is the most runs in flight a conversation read passes
// to ClickHouse as rows written in the statement (liveRows): ~200 bytes a
// run, well within the 256 KiB a statement may have.
const maxLiveLiteralRuns = 500

// liveRows are the runs in flight of a conversation read (those with a
// conversation that its window keeps), summarized in Go, as a subquery of
// rows written in the statement: the columns liveRowColumns names, which
// the reads select from it as from their aggregation. sql is "" when no
// run in flight belongs to a conversation.
type liveRows struct {
	sql  string
	args []any
}

// liveRowColumns are liveRows' columns: the trace id and conversationRunColumns.
var liveRowColumns = []struct{ name, cast string }{
	{"trace_id", "toString"}, {"conv", "toString"}, {"s_ns", "toUInt64"}, {"e_ns", "toUInt64"}, {"n_err", "toUInt64"},
	{"in_t", "toUInt64"}, {"cr_t", "toUInt64"}, {"cw_t", "toUInt64"}, {"out_t", "toUInt64"}, {"rs_t", "toUInt64"},
	{"c_total", "toFloat64"}, {"c_in", "toFloat64"}, {"c_cr", "toFloat64"}, {"c_cw", "toFloat64"}, {"c_out", "toFloat64"},
}

// conversationLiveRuns summarizes in Go the runs in flight lv names that
// sel keeps and belong to a conversation; ok is false when they are to be
// aggregated in ClickHouse (not named by id, or too many spans).
func (r *core) conversationLiveRuns(ctx context.Context, sel runSelection, lv liveSet) (kept []*runRow, ok bool, err error) {
	runs, ok, err := r.liveKept(ctx, sel, lv)
	if err != nil || !ok {
		return nil, false, err
	}
	for i := range runs {
		if runs[i].row.Conv != "" {
			kept = append(kept, &runs[i].row)
		}
	}
	return kept, true, nil
}

// literalRows is rows as liveRows, or nil (the runs aggregated in
// ClickHouse) when there are more than maxLiveLiteralRuns (or the reader's
// WithLiveLiteralRuns) of them.
func (r *core) literalRows(rows []*runRow) *liveRows {
	if len(rows) > cmp.Or(r.liveLiteralRuns, maxLiveLiteralRuns) {
		return nil
	}
	return liveRowsOf(rows)
}

// latestPerConversation is, of each conversation's runs, the one that
// ended last (of equal ends, the greater id): all a read that orders
// conversations by their latest run needs of the runs in flight, however
// many a busy conversation has.
func latestPerConversation(rows []*runRow) []*runRow {
	latest := map[string]*runRow{}
	for _, rr := range rows {
		if l := latest[rr.Conv]; l == nil || rr.EndNs > l.EndNs || rr.EndNs == l.EndNs && rr.TraceID > l.TraceID {
			latest[rr.Conv] = rr
		}
	}
	out := make([]*runRow, 0, len(latest))
	for _, rr := range latest {
		out = append(out, rr)
	}
	slices.SortFunc(out, func(a, b *runRow) int { return strings.Compare(a.TraceID, b.TraceID) })
	return out
}

// ofConversations is the rows whose conversation is one of ids.
func ofConversations(rows []*runRow, ids []string) []*runRow {
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	return slices.DeleteFunc(slices.Clone(rows), func(rr *runRow) bool { return !in[rr.Conv] })
}

// liveRowsOf is the subquery of rows, one per run: a column's values as
// an array each, zipped into tuples and unrolled (arrayJoin). The costs'
// arrays are written into the statement (floatArrayLiteral), the others
// bound.
func liveRowsOf(rows []*runRow) *liveRows {
	if len(rows) == 0 {
		return &liveRows{}
	}
	ids, convs := make([]string, len(rows)), make([]string, len(rows))
	counts := make([][]uint64, 8)
	costs := make([][]float64, 5)
	for i, rr := range rows {
		ids[i], convs[i] = rr.TraceID, rr.Conv
		for j, v := range []uint64{rr.StartNs, rr.EndNs, rr.Err, rr.In, rr.CR, rr.CW, rr.Out, rr.RS} {
			counts[j] = append(counts[j], v)
		}
		for j, v := range []float64{rr.CTotal, rr.CIn, rr.CCR, rr.CCW, rr.COut} {
			costs[j] = append(costs[j], v)
		}
	}
	// The arrays in liveRowColumns' order: the ids and counts bound, the
	// costs written.
	args := []any{ids, convs}
	for _, c := range counts {
		args = append(args, c)
	}
	params := slices.Repeat([]string{"?"}, len(args))
	for _, c := range costs {
		params = append(params, floatArrayLiteral(c))
	}
	elems, vars := make([]string, len(liveRowColumns)), make([]string, len(liveRowColumns))
	for i, c := range liveRowColumns {
		vars[i] = fmt.Sprintf("x%d", i+1)
		elems[i] = fmt.Sprintf("%s(tupleElement(r, %d)) AS %s", c.cast, i+1, c.name)
	}
	v := strings.Join(vars, ", ")
	return &liveRows{
		sql:  "SELECT " + strings.Join(elems, ", ") + " FROM (SELECT arrayJoin(arrayMap((" + v + ") -> (" + v + "), " + strings.Join(params, ", ") + ")) AS r)",
		args: args,
	}
}

// floatArrayLiteral writes vs as a ClickHouse array literal of plain
// numbers, each the shortest decimal that reads back as the same float64
// (nan and inf as ClickHouse spells them). clickhouse-go binds a float64
// as cast(x, 'Float64'), a function call that ClickHouse 18.16 analyzes
// one by one, in every subquery that holds it: the five costs of ~200
// runs in flight took a conversations read's two statements ~230 ms each
// to analyze, against 11 ms for the same rows written as one literal.
func floatArrayLiteral(vs []float64) string {
	b := make([]byte, 0, 2+len(vs)*12)
	b = append(b, '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ", "...)
		}
		switch {
		case math.IsNaN(v):
			b = append(b, "nan"...)
		case math.IsInf(v, 1):
			b = append(b, "inf"...)
		case math.IsInf(v, -1):
			b = append(b, "-inf"...)
		case v != 0 && math.Abs(v) < minNormalFloat64, v == 0 && math.Signbit(v):
			// Subnormals, which 18.16's parser refuses as literals (and
			// reads as 0 from text), and -0, which reads as +0: by their
			// bits.
			b = append(b, "reinterpretAsFloat64(reinterpretAsString(toUInt64("...)
			b = strconv.AppendUint(b, math.Float64bits(v), 10)
			b = append(b, ")))"...)
		default:
			b = strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	}
	return string(append(b, ']'))
}

// minNormalFloat64 is the smallest positive normal float64, 2^-1022.
const minNormalFloat64 = 0x1p-1022

package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/transcript"
)

// ConversationSummary is one conversation (gen_ai.conversation.id and its
// aliases): the runs that carried its id, with their totals.
type ConversationSummary struct {
	ConversationID string            `json:"conversation_id"`
	Runs           int               `json:"runs"`
	First          time.Time         `json:"first"` // start of its first run
	Last           time.Time         `json:"last"`  // end of its last run
	Errors         int               `json:"errors"`
	Usage          attribution.Usage `json:"usage"`
	Cost           attribution.Cost  `json:"cost"`
}

// ConversationFilter selects conversations by their runs' starts: a run is
// filed under its start, as everywhere (docs/api.md).
type ConversationFilter struct {
	Project      string
	Since, Until time.Time
	Cursor       string // from a previous page's NextCursor
	Limit        int    // default 50, at most 1000
}

// ConversationPage is one page of conversations, most recently active first.
type ConversationPage struct {
	Conversations []ConversationSummary `json:"conversations"`
	NextCursor    string                `json:"next_cursor,omitempty"`
}

// Conversations lists conversations, most recently active first. A run
// belongs to the conversation named on any of its spans; its totals follow
// the run rules (usage from inference spans only). The settled runs are
// read from the run table and the live ones from their spans, as in the
// run list, and a conversation's totals add up both.
func (r RunReader) Conversations(ctx context.Context, f ConversationFilter) (ConversationPage, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	var after *cursor
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return ConversationPage{}, err
		}
		after = &c
	}
	lv, err := r.liveRuns(ctx, f.Project, f.Since)
	if err != nil {
		return ConversationPage{}, err
	}
	sel, err := selectRuns(r.store, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until})
	if err != nil {
		return ConversationPage{}, err
	}
	// The runs in flight, summarized in Go, go to the statements as rows
	// written in them, each read with the rows it needs (literalRows): the
	// page's pick each conversation's latest run, the totals the page's
	// conversations' runs. Past the rows a statement may hold they are
	// aggregated from their spans in each statement (~300 ms for 750 runs
	// at a 100M-span store's density on 18.16).
	kept, inGo, err := r.conversationLiveRuns(ctx, sel, lv)
	if err != nil {
		return ConversationPage{}, err
	}
	pick := lv
	if inGo {
		pick.rows = r.literalRows(latestPerConversation(kept))
	}
	ids, err := r.conversationPage(ctx, f, pick, after)
	if err != nil {
		return ConversationPage{}, fmt.Errorf("list conversations: %w", err)
	}
	page := ConversationPage{Conversations: make([]ConversationSummary, 0, len(ids))}
	if len(ids) == 0 {
		return page, nil
	}
	if inGo {
		lv.rows = r.literalRows(ofConversations(kept, ids))
	}
	q, args, err := conversationTotalsSQL(r.store, f, lv, ids)
	if err != nil {
		return ConversationPage{}, err
	}
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return ConversationPage{}, fmt.Errorf("list conversations: %w", err)
	}
	type row struct {
		c                           ConversationSummary
		runs, errs, firstNs, lastNs uint64
	}
	found, err := scanAll(rows, func(r *row) []any {
		c := &r.c
		return []any{&c.ConversationID, &r.runs, &r.firstNs, &r.lastNs, &r.errs,
			&c.Usage.Input, &c.Usage.CacheRead, &c.Usage.CacheWrite, &c.Usage.Output, &c.Usage.Reasoning,
			&c.Cost.Total, &c.Cost.Input, &c.Cost.CacheRead, &c.Cost.CacheWrite, &c.Cost.Output}
	})
	if err != nil {
		return ConversationPage{}, fmt.Errorf("list conversations: %w", err)
	}
	for _, r := range found {
		c := r.c
		c.Runs, c.Errors, c.First, c.Last = int(r.runs), int(r.errs), nsTime(r.firstNs), nsTime(r.lastNs)
		page.Conversations = append(page.Conversations, c)
	}
	// The page in order, by the totals' last activity (the first read's,
	// unless a run was settled between the two).
	slices.SortFunc(page.Conversations, func(a, b ConversationSummary) int {
		return cmp.Or(b.Last.Compare(a.Last), strings.Compare(b.ConversationID, a.ConversationID))
	})
	if len(page.Conversations) > f.Limit {
		page.Conversations = page.Conversations[:f.Limit]
		last := page.Conversations[f.Limit-1]
		page.NextCursor = cursor{uint64(last.Last.UnixNano()), last.ConversationID}.encode()
	}
	return page, nil
}

// conversationPage is the ids of the conversations of f's page (at most
// f.Limit+1, most recently active first, after the cursor).
//
// A first page takes the fast way first (recentConversations); a page
// after a cursor, or a first page the fast way cannot vouch for, orders
// the window's current runs (FINAL) by their end and keeps each
// conversation's latest (conversationPageSQL).
func (r RunReader) conversationPage(ctx context.Context, f ConversationFilter, lv liveSet, after *cursor) ([]string, error) {
	if after == nil && !lv.all {
		// The ends that bound each try's candidates, read once for all of
		// them: the most recent ends of the largest try.
		q, args, err := conversationBoundSQL(r.store, f, conversationCandidates[len(conversationCandidates)-1]*(f.Limit+1))
		if err != nil {
			return nil, err
		}
		var ends []uint64
		if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(&ends); err != nil {
			return nil, fmt.Errorf("read the window's latest ends: %w", err)
		}
		slices.SortFunc(ends, func(a, b uint64) int { return cmp.Compare(b, a) })
		for _, perConversation := range conversationCandidates {
			ids, ok, err := r.recentConversations(ctx, f, lv, perConversation*(f.Limit+1), ends)
			if err != nil || ok {
				return ids, err
			}
		}
		// The last try, every row of the window: a page of busy
		// conversations (tens of runs each among the latest) leaves the
		// bounded tries short of a page, and this one still costs a
		// sort of the window's rows (~120 ms for 1.1M runs at a
		// 100M-span store's density on 18.16) where FINAL merged them
		// first (720 ms). FINAL remains for a stale version picked.
		ids, ok, err := r.recentConversations(ctx, f, lv, 0, nil)
		if err != nil || ok {
			return ids, err
		}
	}
	runs, runArgs, err := conversationRunsSQL(r.store, f, lv)
	if err != nil {
		return nil, err
	}
	q, args := conversationPageSQL(runs, runArgs, f.Limit, after)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, func(id *string) []any { return []any{id} })
}

// conversationCandidates are the rows per conversation of the page that
// recentConversations reads, in its tries: one run each when every
// conversation has one recent run, more when a few busy conversations
// ended the most recent runs.
var conversationCandidates = [...]int{4, 64}

// recentConversations picks a first page of conversations from the rows
// of the window ending within the rowCap-th most recent end of its settled
// rows (ends: those ends, newest first, at least rowCap of them unless the
// window has fewer; every row when ends is nil): every version of the
// settled rows, without FINAL (which merged the whole window's rows,
// in one thread on ClickHouse 18.16, before a sort of all of them), and
// the live runs. A conversation's first row in that order is its latest
// run's best-placed version; when the rows hold f.Limit+1 conversations
// and each one's row is its run's current version (a key read, FINAL),
// they are the page: a conversation not picked placed its best version,
// so its current latest run too, after every picked one. ok is false
// otherwise (too few rows, or a stale version picked), and the caller
// picks the page from the current rows.
func (r RunReader) recentConversations(ctx context.Context, f ConversationFilter, lv liveSet, rowCap int, ends []uint64) (ids []string, ok bool, err error) {
	// The bound of the candidates' ends, from the settled rows' end column
	// alone (the rowCap-th most recent end; none when the window has
	// fewer rows): the candidates' read then reads the rest of the rows
	// within it only.
	var bound *uint64
	if rowCap > 0 && len(ends) >= rowCap {
		bound = &ends[rowCap-1]
	}
	q, args, err := conversationCandidatesSQL(r.store, f, lv, bound)
	if err != nil {
		return nil, false, err
	}
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	found, err := scanAll(rows, func(c *pickedConversation) []any {
		return []any{&c.conv, &c.run.id, &c.run.start, &c.run.version, &c.settled}
	})
	if err != nil {
		return nil, false, err
	}
	var picked []pickedRun
	for _, c := range found {
		ids = append(ids, c.conv)
		if c.settled == 1 {
			picked = append(picked, c.run)
		}
	}
	if len(ids) < f.Limit+1 && bound != nil {
		return nil, false, nil
	}
	if len(picked) == 0 {
		return ids, true, nil
	}
	current, err := r.currentVersions(ctx, f.Project, picked)
	if err != nil {
		return nil, false, err
	}
	for _, p := range picked {
		if v, ok := current[p.id]; !ok || v != p.version {
			return nil, false, nil
		}
	}
	return ids, true, nil
}

// pickedConversation is a row recentConversations reads: a run of the
// conversation, with its key and version when it is settled.
type pickedConversation struct {
	conv    string
	run     pickedRun
	settled uint8
}

// currentVersions reads, by key, the current version of each of runs'
// rows that is not a tombstone.
func (r RunReader) currentVersions(ctx context.Context, project string, runs []pickedRun) (map[string]uint64, error) {
	ids, starts := make([]string, len(runs)), make([]uint32, len(runs))
	for i, p := range runs {
		ids[i], starts[i] = p.id, p.start
	}
	q, args := currentVersionsSQL(r.store, project, starts, ids)
	rows, err := r.store.Conn().Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	type version struct {
		id string
		v  uint64
	}
	found, err := scanAll(rows, func(x *version) []any { return []any{&x.id, &x.v} })
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(found))
	for _, x := range found {
		out[x.id] = x.v
	}
	return out, nil
}

// currentVersionsSQL builds currentVersions' key read.
func currentVersionsSQL(t tables, project string, starts []uint32, ids []string) (string, []any) {
	q, args := byKey(t, "trace_id, start, version, deleted", project, starts, ids)
	return "SELECT trace_id, version FROM " + q, args
}

// conversationCandidatesSQL builds recentConversations' read: of the rows
// of f's window with a conversation (within bound, when there is one), the
// first of each conversation, the most recently ended first, at most
// f.Limit+1: each conversation, run id, start second, version and whether
// it is settled; the live runs (lv) aggregated from their spans, every
// version of the others' rows.
//
// Of a run's versions ending alike (a reprice), the newest comes first: the
// one that can be current. One row a conversation (LIMIT 1 BY), not the
// first rows of the order: the runs in flight end last, and a few busy
// conversations with many of them (1,648 runs in flight, at a 100M-span
// store's density) filled every row a try could take, so the tries failed
// and the page was picked the slow way, 1.3 s.
func conversationCandidatesSQL(t tables, f ConversationFilter, lv liveSet, bound *uint64) (string, []any, error) {
	sel, err := selectRuns(t, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until})
	if err != nil {
		return "", nil, err
	}
	liveCond, settledCond := []string{"conv != ''"}, ""
	if bound != nil {
		// Every row within the bound (its ties included), live or not, so
		// that the rows read are the first of the order.
		b := strconv.FormatUint(*bound, 10)
		liveCond, settledCond = append(liveCond, "e_ns >= "+b), " AND end_ns >= "+b
	}
	var parts []string
	var args []any
	const liveCols = "SELECT conv, e_ns, trace_id, toUInt32(0) AS row_start_s, toUInt64(0) AS row_version, toUInt8(0) AS settled FROM ("
	switch {
	case lv.rows != nil && lv.rows.sql != "":
		parts = append(parts, liveCols+lv.rows.sql+")\nWHERE "+strings.Join(liveCond, " AND "))
		args = append(args, lv.rows.args...)
	case lv.rows == nil && !lv.none():
		live := lv.narrow(sel)
		parts = append(parts, liveCols+runAggregation(t, live, "", liveCond...)+")")
		args = append(args, live.args()...)
	}
	settled, sargs := settledRunsSQL(t, sel.project, sel, "")
	settled += settledCond
	cond := strings.Join(append([]string{"deleted = 0", "conv != ''"}, sel.rows...), " AND ")
	args = append(append(args, sargs...), sel.rowArgs...)
	if c, cargs := lv.cond(false); c != "" {
		cond += " AND " + c
		args = append(args, cargs...)
	}
	parts = append(parts, "SELECT conv, e_ns, trace_id, toUInt32(row_start) AS row_start_s, row_version, toUInt8(1) AS settled FROM ("+
		settled+")\nWHERE "+cond)
	return "SELECT conv, trace_id, row_start_s, row_version, settled FROM (\n" + strings.Join(parts, "\nUNION ALL\n") +
		"\n)\nORDER BY e_ns DESC, conv DESC, row_version DESC\nLIMIT 1 BY conv\nLIMIT " + strconv.Itoa(f.Limit+1), args, nil
}

// conversationBoundSQL builds conversationPage's first read: the limit
// latest ends among every version of the window's settled rows that is no
// tombstone, as one array (in no particular order; fewer than limit: the
// window has no more). It reads the end column alone: neither the
// conversation nor the live runs are looked at, so fewer than a try's
// rows within its bound may be candidates, and then recentConversations
// reads more or leaves the pick to FINAL. One read serves every try
// (conversationCandidates): with runs in flight at a 100M-span store's
// density the first try often falls short (a few busy conversations ended
// the most recent runs), and this scan of the window's ends was 45–64 ms
// a try.
func conversationBoundSQL(t tables, f ConversationFilter, limit int) (string, []any, error) {
	sel, err := selectRuns(t, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until})
	if err != nil {
		return "", nil, err
	}
	where, args := settledWindow(sel.project, sel)
	return "SELECT groupArray(e) FROM (\nSELECT end_ns AS e FROM " + t.Table(schema.TableRuns) + where + " AND deleted = 0" +
		"\nORDER BY e DESC\nLIMIT " + strconv.Itoa(limit) + "\n)", args, nil
}

// conversationRunColumns are what a conversation's totals read of each of
// its runs, under runAggregates' names: the live runs' aggregates and the
// run table's rows (settledColumns' aliases) both give them, so that one
// GROUP BY adds up a conversation's settled and live runs.
const conversationRunColumns = "conv, s_ns, e_ns, n_err, in_t, cr_t, cw_t, out_t, rs_t, c_total, c_in, c_cr, c_cw, c_out"

// conversationRunsSQL builds the subquery of f's runs that belong to a
// conversation, one row each (conversationRunColumns): the live runs (lv)
// aggregated from their spans, the others read from the run table.
func conversationRunsSQL(t tables, f ConversationFilter, lv liveSet) (string, []any, error) {
	sel, err := selectRuns(t, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until})
	if err != nil {
		return "", nil, err
	}
	parts, args := liveConversationRuns(t, sel, lv)
	if !lv.all {
		settled, sargs := settledCurrentSQL(t, sel.project, sel, lv, "")
		parts = append(parts, "SELECT "+conversationRunColumns+" FROM ("+settled+")\nWHERE conv != ''")
		args = append(args, sargs...)
	}
	return strings.Join(parts, "\nUNION ALL\n"), args, nil
}

// liveConversationRuns is the part of a conversation read that reads the
// runs in flight (lv) sel keeps that belong to a conversation, one row each
// (conversationRunColumns) — the rows summarized in Go (lv.rows), or their
// aggregation from their spans —, with its args; none when there are none.
func liveConversationRuns(t tables, sel runSelection, lv liveSet) ([]string, []any) {
	switch {
	case lv.rows != nil && lv.rows.sql != "":
		return []string{"SELECT " + conversationRunColumns + " FROM (" + lv.rows.sql + ")"}, slices.Clip(lv.rows.args)
	case lv.rows == nil && !lv.none():
		live := sel
		if !lv.all {
			live = lv.narrow(sel)
		}
		return []string{"SELECT " + conversationRunColumns + " FROM (" + runAggregation(t, live, "", "conv != ''") + ")"}, live.args()
	}
	return nil, nil
}

// conversationPageSQL builds the first of a page's two reads: the ids of
// the conversations of runs (conversationRunsSQL's, with runArgs) most
// recently active, at most limit+1 after the cursor. It orders the runs
// by their end and keeps each conversation's latest, its last activity,
// so that nothing is added up for the conversations off the page: over a
// month of 500k runs, each its own conversation, adding up every
// conversation's totals in one GROUP BY outgrew the embedded engine's
// memory for it and spilled to disk (5 s, against 0.1 s for this read).
func conversationPageSQL(runs string, runArgs []any, limit int, after *cursor) (string, []any) {
	args := slices.Clip(runArgs)
	where := ""
	if after != nil {
		where = "\nWHERE last_ns < ? OR (last_ns = ? AND conv < ?)"
		args = append(args, after.Ns, after.Ns, after.Key)
	}
	return "SELECT conv FROM (\nSELECT conv, e_ns AS last_ns FROM (\n" + runs + "\n)\nORDER BY last_ns DESC, conv DESC\nLIMIT 1 BY conv\n)" +
		where + "\nORDER BY last_ns DESC, conv DESC\nLIMIT " + strconv.Itoa(limit+1), args
}

// conversationTotalsSQL builds the second read of a page: the totals of
// the conversations ids over f's runs, the live ones (lv) aggregated from
// their spans and the settled ones from the run table.
//
// The settled runs are read without FINAL: every version of the rows of
// the runs any of whose versions names one of the conversations (a key
// set far smaller than the window), and each run's newest version is
// kept (argMax) before its conversation is checked, so that a run whose
// current version names another conversation, or is a tombstone, is not
// counted by an older one.
func conversationTotalsSQL(t tables, f ConversationFilter, lv liveSet, ids []string) (string, []any, error) {
	sel, err := selectRuns(t, RunFilter{Project: f.Project, Since: f.Since, Until: f.Until})
	if err != nil {
		return "", nil, err
	}
	set := clickhouse.GroupSet{Value: make([]any, len(ids))}
	for i, id := range ids {
		set.Value[i] = id
	}
	parts, args := liveConversationRuns(t, sel, lv)
	if !lv.all {
		settled, sargs := settledRunsSQL(t, sel.project, sel, "")
		where, wargs := settledWindow(sel.project, sel)
		cond := "trace_id IN (SELECT trace_id FROM " + t.Table(schema.TableRuns) + where + " AND conversation_id IN ?)"
		args = append(append(append(args, sargs...), wargs...), set)
		if c, cargs := lv.cond(false); c != "" {
			cond += " AND " + c
			args = append(args, cargs...)
		}
		names := strings.Split(conversationRunColumns, ", ")
		elems := make([]string, len(names))
		for i, n := range names {
			elems[i] = "tupleElement(cur, " + strconv.Itoa(i+1) + ") AS " + n
		}
		// The window's bounds to the nanosecond (sel.rows, over the
		// current version's s_ns).
		current := append([]string{"tupleElement(cur, " + strconv.Itoa(len(names)+1) + ") = 0"}, sel.rows...)
		args = append(args, sel.rowArgs...)
		parts = append(parts, "SELECT "+strings.Join(elems, ", ")+" FROM (\nSELECT argMax(("+conversationRunColumns+", deleted), row_version) AS cur FROM ("+
			settled+")\nWHERE "+cond+"\nGROUP BY row_start, trace_id\n)\nWHERE "+strings.Join(current, " AND "))
	}
	return `SELECT conv, count() AS runs, min(s_ns), max(e_ns) AS last_ns, sum(n_err),
	sum(in_t), sum(cr_t), sum(cw_t), sum(out_t), sum(rs_t),
	sum(c_total), sum(c_in), sum(c_cr), sum(c_cw), sum(c_out)
FROM (
` + strings.Join(parts, "\nUNION ALL\n") + `
)
WHERE conv IN ?
GROUP BY conv`, append(args, set), nil
}

// ConversationDetail is one conversation: its runs in order, with totals.
type ConversationDetail struct {
	ConversationSummary
	RunList []RunSummary `json:"run_list"`
}

// Conversation loads one conversation's runs (at most 1000, oldest first)
// with their totals; ErrNotFound when no run carries the id.
func (r RunReader) Conversation(ctx context.Context, project, id string) (*ConversationDetail, error) {
	page, err := r.Runs(ctx, RunFilter{Project: project, Conversation: id, Limit: 1000})
	if err != nil {
		return nil, err
	}
	if len(page.Runs) == 0 {
		return nil, ErrNotFound
	}
	runs := page.Runs
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Start.Before(runs[j].Start) })
	d := &ConversationDetail{ConversationSummary: ConversationSummary{ConversationID: id, Runs: len(runs),
		First: runs[0].Start, Last: runs[0].End}, RunList: runs}
	for _, run := range runs {
		if run.End.After(d.Last) {
			d.Last = run.End
		}
		d.Errors += run.Errors
		d.Usage.Add(run.Usage)
		d.Cost.Add(run.Cost)
	}
	return d, nil
}

// MaxTranscriptRuns bounds the runs a conversation transcript reads (the
// messages of two calls each, in one batch); a longer conversation's
// transcript covers its first MaxTranscriptRuns runs and says so.
const MaxTranscriptRuns = 50

// TranscriptTurn is one run of a conversation as chat: what the user said
// to start it (the last user message its first model call was sent) and
// what the run answered (its last model call's output).
type TranscriptTurn struct {
	TraceID  string               `json:"trace_id"`
	Start    time.Time            `json:"start"`
	Task     string               `json:"task"`
	Status   RunStatus            `json:"status"`
	Messages []transcript.Message `json:"messages"`
}

// Transcript is a conversation's turns, oldest first.
type Transcript struct {
	ConversationID string           `json:"conversation_id"`
	Turns          []TranscriptTurn `json:"turns"`
	// Truncated: the conversation has more runs than MaxTranscriptRuns.
	Truncated bool `json:"truncated,omitempty"`
}

// ConversationTranscript reads a conversation as chat, one turn per run;
// ErrNotFound when no run carries the id. A run whose calls captured no
// messages has a turn without messages.
func (r RunReader) ConversationTranscript(ctx context.Context, project, id string) (*Transcript, error) {
	d, err := r.Conversation(ctx, project, id)
	if err != nil {
		return nil, err
	}
	runs := d.RunList
	out := &Transcript{ConversationID: id, Turns: []TranscriptTurn{}}
	if len(runs) > MaxTranscriptRuns {
		runs, out.Truncated = runs[:MaxTranscriptRuns], true
	}
	ids := clickhouse.GroupSet{Value: make([]any, len(runs))}
	from, to := runs[0].Start, runs[0].End
	for i, run := range runs {
		ids.Value[i] = run.TraceID
		from, to = minTime(from, run.Start), maxTime(to, run.End)
	}
	var calls []struct {
		TraceID string `ch:"trace_id"`
		First   string `ch:"first"`
		Last    string `ch:"last"`
	}
	q, args := transcriptCallsSQL(r.store, project, ids, from, to)
	if err := r.store.Conn().Select(ctx, &calls, q, args...); err != nil {
		return nil, fmt.Errorf("find the model calls of conversation %s: %w", id, err)
	}
	byRun := make(map[string][2]string, len(calls))
	var keys []SpanKey
	for _, c := range calls {
		byRun[c.TraceID] = [2]string{c.First, c.Last}
		keys = append(keys, SpanKey{c.TraceID, c.First}, SpanKey{c.TraceID, c.Last})
	}
	chats, err := r.spanChats(ctx, project, keys, nil)
	if err != nil {
		return nil, fmt.Errorf("read the messages of conversation %s: %w", id, err)
	}
	for _, run := range runs {
		turn := TranscriptTurn{TraceID: run.TraceID, Start: run.Start, Task: run.Task, Status: run.Status, Messages: []transcript.Message{}}
		if c, ok := byRun[run.TraceID]; ok {
			first, last := chats[SpanKey{run.TraceID, c[0]}], chats[SpanKey{run.TraceID, c[1]}]
			for i := len(first.Input) - 1; i >= 0; i-- {
				if first.Input[i].Role == "user" {
					turn.Messages = append(turn.Messages, first.Input[i])
					break
				}
			}
			turn.Messages = append(turn.Messages, last.Output...)
		}
		out.Turns = append(out.Turns, turn)
	}
	return out, nil
}

// transcriptCallsSQL builds ConversationTranscript's statement: the first
// and last model calls of each of the runs ids, whose spans start in
// [from, to].
func transcriptCallsSQL(t tables, project string, ids clickhouse.GroupSet, from, to time.Time) (string, []any) {
	q := "SELECT trace_id, argMin(span_id, start_ns) AS first, argMax(span_id, end_ns) AS last FROM " +
		t.Table(schema.TableSpans) + " WHERE project = ? AND trace_id IN ? AND span_type = ? AND start >= ? AND start <= ? GROUP BY trace_id"
	return q, []any{project, ids, schema.TypeInference, from.UTC().Truncate(time.Second), to.UTC()}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

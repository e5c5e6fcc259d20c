package query

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/schema"
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

// ConversationFilter selects conversations by their runs' span start times.
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
// the run rules (usage from inference spans only).
func (r *Reader) Conversations(ctx context.Context, f ConversationFilter) (ConversationPage, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	f.Limit = min(f.Limit, 1000)
	where := []string{"project = ?"}
	args := []any{f.Project}
	if !f.Since.IsZero() {
		where = append(where, "start >= ?")
		args = append(args, f.Since.UTC().Truncate(time.Second))
	}
	if !f.Until.IsZero() {
		where = append(where, "start <= ?")
		args = append(args, f.Until.UTC())
	}
	having := ""
	var hargs []any
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return ConversationPage{}, err
		}
		having = "\nHAVING last_ns < ? OR (last_ns = ? AND conv < ?)"
		hargs = []any{c.Ns, c.Ns, c.Key}
	}
	q := `SELECT conv, count() AS runs, min(s_ns), max(e_ns) AS last_ns, sum(errs),
	sum(in_t), sum(cr_t), sum(cw_t), sum(out_t), sum(rs_t),
	sum(c_total), sum(c_in), sum(c_cr), sum(c_cw), sum(c_out)
FROM (
	SELECT trace_id, anyIf(conversation_id, conversation_id != '') AS conv,
		min(start_ns) AS s_ns, max(end_ns) AS e_ns, countIf(status = 'error') AS errs,` + runCountedSQL + `
	FROM ` + final(r.store.Table(schema.TableSpans)) + `
	WHERE ` + strings.Join(where, " AND ") + `
	GROUP BY trace_id
	HAVING conv != ''
)
GROUP BY conv` + having + `
ORDER BY last_ns DESC, conv DESC
LIMIT ` + strconv.Itoa(f.Limit+1)
	rows, err := r.store.Conn().Query(ctx, q, append(args, hargs...)...)
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
	page := ConversationPage{Conversations: make([]ConversationSummary, 0, len(found))}
	for _, r := range found {
		c := r.c
		c.Runs, c.Errors, c.First, c.Last = int(r.runs), int(r.errs), nsTime(r.firstNs), nsTime(r.lastNs)
		page.Conversations = append(page.Conversations, c)
	}
	if len(page.Conversations) > f.Limit {
		page.Conversations = page.Conversations[:f.Limit]
		last := page.Conversations[f.Limit-1]
		page.NextCursor = cursor{uint64(last.Last.UnixNano()), last.ConversationID}.encode()
	}
	return page, nil
}

// ConversationDetail is one conversation: its runs in order, with totals.
type ConversationDetail struct {
	ConversationSummary
	RunList []RunSummary `json:"run_list"`
}

// Conversation loads one conversation's runs (at most 1000, oldest first)
// with their totals; ErrNotFound when no run carries the id.
func (r *Reader) Conversation(ctx context.Context, project, id string) (*ConversationDetail, error) {
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

package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/schema"
)

// TestBusyConversationsPickedWithoutFinal: three busy conversations of
// 1,200 runs each ended the window's 3,600 latest runs, and 60
// conversations of one run each ended before them. A first page of 50
// needs 51 conversations: the bounded tries (204 and 3,264 rows) hold the
// three busy ones only and fall short, and the last try, over every row
// of the window, picks the page (the busy three, newest first, then the
// 48 newest single ones) without FINAL; the page read the usual way is
// the same.
func TestBusyConversationsPickedWithoutFinal(t *testing.T) {
	ctx := context.Background()
	store := testenv.OpenStore(t)
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	sec := func(n int) uint64 { return uint64(start.UnixNano()) + uint64(n)*1e9 }
	row := func(n int, conv string, end int) schema.RunRow {
		return schema.RunRow{Project: "p", TraceID: fmt.Sprintf("%032x", n), Start: start, StartNs: sec(0), EndNs: sec(end),
			Name: "t", Task: "t", Conversation: conv, Spans: 2, LLMCalls: 1, CostTotal: 1, Version: 1}
	}
	var rows []schema.RunRow
	for i := range 3600 {
		// busy0 ends last (its runs end at 10,000 + 3i), then busy1, busy2.
		rows = append(rows, row(10000+i, fmt.Sprintf("busy%d", 2-i%3), 10000+i))
	}
	for i := range 60 {
		rows = append(rows, row(i, fmt.Sprintf("s%02d", i), 100+i))
	}
	if err := store.InsertRuns(ctx, rows); err != nil {
		t.Fatal(err)
	}
	now := uint64(time.Now().UnixNano())
	if err := store.InsertRunMark(ctx, schema.RunMarkRow{Name: schema.RunMarkSettled, Value: now, Version: now}); err != nil {
		t.Fatal(err)
	}
	r := NewReader(store).RunReader
	f := ConversationFilter{Project: "p", Since: start.Add(-time.Hour), Until: start.Add(time.Hour), Limit: 50}
	lv, err := r.liveRuns(ctx, f.Project, f.Since)
	if err != nil {
		t.Fatal(err)
	}
	q, args, err := conversationBoundSQL(r.store, f, conversationCandidates[len(conversationCandidates)-1]*(f.Limit+1))
	if err != nil {
		t.Fatal(err)
	}
	var ends []uint64
	if err := r.store.Conn().QueryRow(ctx, q, args...).Scan(&ends); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ends, func(a, b uint64) int { return cmp.Compare(b, a) })
	for _, per := range conversationCandidates {
		if ids, ok, err := r.recentConversations(ctx, f, lv, per*(f.Limit+1), ends); err != nil || ok {
			t.Fatalf("the try of %d rows: ok %v (%v), %d conversations; want it short of a page", per*(f.Limit+1), ok, err, len(ids))
		}
	}
	want := []string{"busy0", "busy1", "busy2"}
	for i := 59; len(want) < 51; i-- {
		want = append(want, fmt.Sprintf("s%02d", i))
	}
	ids, ok, err := r.recentConversations(ctx, f, lv, 0, nil)
	if err != nil || !ok || fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("every row: ok %v (%v), %v; want %v", ok, err, ids, want)
	}
	page, err := r.Conversations(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range page.Conversations {
		got = append(got, c.ConversationID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want[:50]) || page.NextCursor == "" {
		t.Errorf("page of 50: %v (next %q), want %v and a next page", got, page.NextCursor, want[:50])
	}
}

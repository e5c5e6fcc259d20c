package query_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// TestSettledReadKeepsTheNewestVersion: the reports read every version of
// a settled row (no FINAL) and keep the newest of each key, so an older
// version never stands in for the current one, even when only the older
// one matches the filter, and a tombstone hides its run. Run A was settled
// under task "old", then again under "new"; run B was settled, then
// tombstoned (its start moved); run C has one version, task "old".
func TestSettledReadKeepsTheNewestVersion(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	row := func(id, task string, version uint64, deleted uint8) schema.RunRow {
		return schema.RunRow{Project: "p", TraceID: strings.Repeat(id, 32), Start: start, StartNs: uint64(start.UnixNano()) + 500,
			EndNs: uint64(start.UnixNano()) + 2e9, Name: task, Task: task, Spans: 3, LLMCalls: 1, Version: version, Deleted: deleted}
	}
	// Each version in an INSERT of its own: separate parts, as the settler
	// writes them, which only FINAL or a merge would collapse.
	for _, r := range []schema.RunRow{row("a", "old", 1, 0), row("b", "old", 1, 0), row("c", "old", 1, 0), row("a", "new", 2, 0), row("b", "", 2, 1)} {
		if err := store.InsertRuns(ctx, []schema.RunRow{r}); err != nil {
			t.Fatal(err)
		}
	}
	// The run table is complete through now: no run is live.
	markSettled(t, store)
	r := query.NewReader(store)
	window := query.TaskFilter{Project: "p", Since: start.Add(-time.Hour), Until: start.Add(time.Hour)}
	for _, c := range []struct {
		task string
		want map[string]int // task → runs
	}{
		{"", map[string]int{"new": 1, "old": 1}},
		{"old", map[string]int{"old": 1}},
		{"new", map[string]int{"new": 1}},
	} {
		f := window
		f.Task = c.task
		rep, err := r.Tasks(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, task := range rep.Tasks {
			got[task.Key] = task.Runs
		}
		if len(got) != len(c.want) || rep.RunsRead != sumRuns(c.want) {
			t.Errorf("task filter %q: %v (%d runs read), want %v", c.task, got, rep.RunsRead, c.want)
			continue
		}
		for k, n := range c.want {
			if got[k] != n {
				t.Errorf("task filter %q: %v, want %v", c.task, got, c.want)
			}
		}
	}
}

func sumRuns(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestSettledRunListKeepsTheNewestVersion: the run list picks its page from
// every version of the window's settled rows before it reads them by key;
// an older version that would place its run elsewhere, or a tombstoned
// run's last live version, must not move or bring back the run. Run A cost
// 5 USD when first settled and 1 once settled again; run B (4 USD) was then
// tombstoned; C and D have one version each (3 and 2 USD). The current
// rows by cost are A 1, D 2, C 3 (B is gone), pages of two.
func TestSettledRunListKeepsTheNewestVersion(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	row := func(id string, cost float64, version uint64, deleted uint8) schema.RunRow {
		return schema.RunRow{Project: "p", TraceID: strings.Repeat(id, 32), Start: start, StartNs: uint64(start.UnixNano()) + 500,
			EndNs: uint64(start.UnixNano()) + 2e9, Name: "t", Task: "t", Spans: 3, LLMCalls: 1, CostTotal: cost,
			Version: version, Deleted: deleted}
	}
	for _, r := range []schema.RunRow{row("a", 5, 1, 0), row("b", 4, 1, 0), row("c", 3, 1, 0), row("d", 2, 1, 0),
		row("a", 1, 2, 0), row("b", 4, 2, 1)} {
		if err := store.InsertRuns(ctx, []schema.RunRow{r}); err != nil {
			t.Fatal(err)
		}
	}
	markSettled(t, store)
	r := query.NewReader(store)
	for _, c := range []struct {
		dir   query.SortDir
		limit int
		pages [][]string // each page's runs, by their id's letter
	}{
		// Descending, A's first version (5 USD) and B's last live one
		// (4 USD) place before every current row.
		{query.Desc, 2, [][]string{{"c", "d"}, {"a"}}},
		// Ascending, the first page's candidates are all current; the
		// second's include B's version before its tombstone and A's first.
		{query.Asc, 2, [][]string{{"a", "d"}, {"c"}}},
		// Pages of one: the candidates' keys are bounded first (the
		// fourth of five), and the rows within the bound are picked.
		{query.Desc, 1, [][]string{{"c"}, {"d"}, {"a"}}},
		{query.Asc, 1, [][]string{{"a"}, {"d"}, {"c"}}},
	} {
		f := query.RunFilter{Project: "p", Since: start.Add(-time.Hour), Until: start.Add(time.Hour), Sort: query.SortCost, Dir: c.dir, Limit: c.limit}
		var got [][]string
		for range 4 {
			page, err := r.Runs(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, run := range page.Runs {
				ids = append(ids, run.TraceID[:1])
				if run.TraceID[:1] == "a" && run.Cost.Total != 1 {
					t.Errorf("%s: run a costs %v, want its current row's 1", c.dir, run.Cost.Total)
				}
			}
			got = append(got, ids)
			if f.Cursor = page.NextCursor; f.Cursor == "" {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.pages) {
			t.Errorf("%s, pages of %d: %v, want %v", c.dir, c.limit, got, c.pages)
		}
	}
}

// TestSettledConversationsKeepTheNewestVersion: the conversations page is
// picked from every version of the window's settled rows, and their totals
// add up each run's newest version; an older version must neither place a
// conversation nor count in one. Run A ended at +10 s in conversation x
// when first settled, and at +1 s in y once settled again; B (z, +9 s) was
// then tombstoned; C (y, +5 s) and D (w, +3 s) have one version; E (w,
// +2 s) was settled again with another cost; F (+4 s) has no
// conversation. Current: y (A, C; last +5 s, 1 + 3 USD), w (D, E; last
// +3 s, 2 + 7 USD). With pages of one, the eight rows that are no
// tombstone fill the first pick's bound (eight rows: four per
// conversation of the page and the one after it).
func TestSettledConversationsKeepTheNewestVersion(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	sec := func(n int) uint64 { return uint64(start.UnixNano()) + uint64(n)*1e9 }
	row := func(id, conv string, end int, cost float64, version uint64, deleted uint8) schema.RunRow {
		return schema.RunRow{Project: "p", TraceID: strings.Repeat(id, 32), Start: start, StartNs: sec(0), EndNs: sec(end),
			Name: "t", Task: "t", Conversation: conv, Spans: 3, LLMCalls: 1, CostTotal: cost, Version: version, Deleted: deleted}
	}
	for _, r := range []schema.RunRow{row("a", "x", 10, 5, 1, 0), row("b", "z", 9, 4, 1, 0), row("c", "y", 5, 3, 1, 0),
		row("d", "w", 3, 2, 1, 0), row("e", "w", 2, 6, 1, 0), row("a", "y", 1, 1, 2, 0), row("b", "", 0, 0, 2, 1), row("e", "w", 2, 7, 2, 0),
		row("f", "", 4, 1, 1, 0)} {
		if err := store.InsertRuns(ctx, []schema.RunRow{r}); err != nil {
			t.Fatal(err)
		}
	}
	markSettled(t, store)
	r := query.NewReader(store)
	type conv struct {
		id   string
		runs int
		last time.Time
		cost float64
	}
	want := []conv{{"y", 2, nsTime(sec(5)), 4}, {"w", 2, nsTime(sec(3)), 9}}
	for _, limit := range []int{1, 2, 50} {
		f := query.ConversationFilter{Project: "p", Since: start.Add(-time.Hour), Until: start.Add(time.Hour), Limit: limit}
		var got []conv
		for _, c := range conversationPages(t, r, f, 4) {
			got = append(got, conv{c.ConversationID, c.Runs, c.Last, c.Cost.Total})
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pages of %d: %v, want %v", limit, got, want)
		}
	}
}

// TestConversationsOfABusyConversation: the twelve most recently ended
// runs all belong to one conversation, so the first page's first try (4
// rows a conversation of a page of two, and the one after it: 12 rows)
// holds one conversation only, and the second (64 rows each: 192, within
// the 202 rows' bound) reads its bound from the same ends. The pages are
// the same whichever read picks them (a try or FINAL), so this holds the
// shared ends to a right answer, not the path taken: busy (12 runs, the
// last ending at +1,011 s), then the newest of 190 conversations of one
// run each (s189, +189 s); the next page s188, s187.
func TestConversationsOfABusyConversation(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	start := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	sec := func(n int) uint64 { return uint64(start.UnixNano()) + uint64(n)*1e9 }
	var rows []schema.RunRow
	row := func(n int, conv string, end int) schema.RunRow {
		return schema.RunRow{Project: "p", TraceID: fmt.Sprintf("%032x", n), Start: start, StartNs: sec(0), EndNs: sec(end),
			Name: "t", Task: "t", Conversation: conv, Spans: 2, LLMCalls: 1, CostTotal: 1, Version: 1}
	}
	for i := range 12 {
		rows = append(rows, row(1000+i, "busy", 1000+i))
	}
	for i := range 190 {
		rows = append(rows, row(i, fmt.Sprintf("s%03d", i), i))
	}
	if err := store.InsertRuns(ctx, rows); err != nil {
		t.Fatal(err)
	}
	markSettled(t, store)
	r := query.NewReader(store)
	f := query.ConversationFilter{Project: "p", Since: start.Add(-time.Hour), Until: start.Add(time.Hour), Limit: 2}
	var got []string
	for _, c := range conversationPages(t, r, f, 2) {
		got = append(got, fmt.Sprintf("%s:%d@%d", c.ConversationID, c.Runs, c.Last.Sub(start)/time.Second))
	}
	if want := "[busy:12@1011 s189:1@189 s188:1@188 s187:1@187]"; fmt.Sprint(got) != want {
		t.Errorf("pages of 2: %v, want %s", got, want)
	}
}

func nsTime(ns uint64) time.Time { return time.Unix(0, int64(ns)).UTC() }

// conversationPages reads f's conversations page after page, at most
// pages of them, and returns them in order.
func conversationPages(t *testing.T, r *query.Reader, f query.ConversationFilter, pages int) []query.ConversationSummary {
	t.Helper()
	var out []query.ConversationSummary
	for range pages {
		page, err := r.Conversations(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Conversations...)
		if f.Cursor = page.NextCursor; f.Cursor == "" {
			break
		}
	}
	return out
}

// TestSettledRunListAcrossManyParts: a page sorted by cost over a month
// has its runs in every part of the window. Its rows are read by key; with
// FINAL, ClickHouse 18.16 opened every column of every part holding a key
// at once (a 1 MiB buffer each: 120 parts × ~40 columns here, ~4.7 GiB)
// and the read failed past the query's memory cap. Under a cap of
// 256 MiB the page is whole and in order: 30 days × 4 parts (an INSERT
// each), run i costing i cents, so the first page of 50 by cost is runs
// 119 down to 70.
func TestSettledRunListAcrossManyParts(t *testing.T) {
	store, day0 := storeOfManyParts(t)
	ctx := context.Background()
	capped := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"max_memory_usage": 256 << 20}))
	page, err := query.NewReader(store).Runs(capped, query.RunFilter{Project: "p", Since: day0.Add(-time.Hour), Sort: query.SortCost})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 50 || page.NextCursor == "" {
		t.Fatalf("%d runs (next cursor %q), want 50 and a next page", len(page.Runs), page.NextCursor)
	}
	for k, run := range page.Runs {
		if want := fmt.Sprintf("%032x", 119-k); run.TraceID != want {
			t.Errorf("run %d of the page: %s, want %s", k, run.TraceID, want)
		}
	}
}

// TestSettledWindowReadsAcrossManyParts: the reads that add up every
// settled run of a window (the safety review's counts, the conversations'
// pages after the first) hold under the same cap over the same 120 parts:
// the review counts 120 runs (task "t"), the second page of conversations
// of 50 starts at conversation 69 (each run its own, the newest ended
// first).
func TestSettledWindowReadsAcrossManyParts(t *testing.T) {
	store, day0 := storeOfManyParts(t)
	capped := clickhouse.Context(context.Background(), clickhouse.WithSettings(clickhouse.Settings{"max_memory_usage": 256 << 20}))
	r := query.NewReader(store)
	rep, err := r.Signals(capped, query.SignalFilter{Project: "p", Since: day0.Add(-time.Hour), By: "task"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RunsRead != 120 || rep.RunsByTask["t"] != 120 {
		t.Errorf("the review read %d runs, %d of task t; want 120 and 120", rep.RunsRead, rep.RunsByTask["t"])
	}
	first, err := r.Conversations(capped, query.ConversationFilter{Project: "p", Since: day0.Add(-time.Hour), Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Conversations(capped, query.ConversationFilter{Project: "p", Since: day0.Add(-time.Hour), Limit: 50, Cursor: first.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Conversations) != 50 || second.Conversations[0].ConversationID != "c69" {
		t.Errorf("second page: %+v; want 50 conversations from c69", second.Conversations)
	}
}

// storeOfManyParts is a store of 120 settled runs over 30 days, 4 a day,
// each written by an INSERT of its own (a part each, as the settler writes
// them until merges catch up): run i (id i in hex) costs i cents, is
// conversation "c<i>" and starts day i/4 after the first, at minute i%4.
func storeOfManyParts(t *testing.T) (*schema.Store, time.Time) {
	t.Helper()
	store := openStore(t)
	ctx := context.Background()
	day0 := time.Now().UTC().Add(-30 * 24 * time.Hour).Truncate(time.Hour)
	for i := range 120 {
		start := day0.Add(time.Duration(i/4)*24*time.Hour + time.Duration(i%4)*time.Minute)
		r := schema.RunRow{Project: "p", TraceID: fmt.Sprintf("%032x", i), Start: start, StartNs: uint64(start.UnixNano()),
			EndNs: uint64(start.UnixNano()) + 2e9, Name: "t", Task: "t", Conversation: fmt.Sprintf("c%d", i), Spans: 3,
			LLMCalls: 1, CostTotal: float64(i) / 100, Version: 1}
		if err := store.InsertRuns(ctx, []schema.RunRow{r}); err != nil {
			t.Fatal(err)
		}
	}
	markSettled(t, store)
	return store, day0
}

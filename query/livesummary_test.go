package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/tools/demo"
)

// TestLiveRunsSummarizedInGo: the runs in flight, summarized in Go from
// their spans (livesummary.go), list as ClickHouse's aggregation lists
// them — every filter, every order both ways, page by page with the
// cursors — and the window reports over them are the same. The demo's 40
// runs (sent through OTLP) and the golden corpus (the counting rule's
// cases: wrappers, contained twins, aggregated usage), moved to the last
// hours, are all live under a settled mark below their spans; one reader
// summarizes them in Go, the other never. And at the bound of span rows:
// exactly the runs' rows, Go; one fewer, the aggregation.
func TestLiveRunsSummarizedInGo(t *testing.T) {
	in := tallytest.Start(t)
	ctx := context.Background()
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	sum, err := demo.Send(ctx, demo.Config{Endpoint: in.URL, Runs: 40, Seed: 3, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	golden := loadCorpus(t, "testdata/golden.json", "golden", builtin(t))
	first := golden[0].StartNs
	for _, s := range golden {
		first = min(first, s.StartNs)
	}
	shift := uint64(start.UnixNano()) - first
	for i := range golden {
		s := &golden[i]
		s.StartNs, s.EndNs = s.StartNs+shift, s.EndNs+shift
		s.Start = time.Unix(0, int64(s.StartNs)).UTC().Truncate(time.Second)
	}
	insert(t, in.Store, golden, uint64(time.Now().Add(-time.Minute).UnixNano()))
	if err := in.Store.InsertRunMark(ctx, schema.RunMarkRow{Name: schema.RunMarkSettled, Value: 1, Version: uint64(time.Now().UnixNano())}); err != nil {
		t.Fatal(err)
	}
	inGo, inSQL := query.NewReader(in.Store), query.NewReader(in.Store, query.WithLiveSummarySpans(-1))
	since, until := start.Add(-time.Hour), time.Now().Add(time.Hour)

	// The bound, at its edge: the demo's span rows exactly, and one fewer.
	var rows uint64
	if err := in.Store.Conn().QueryRow(ctx, "SELECT count() FROM "+in.Store.Table(schema.TableSpans)+" WHERE project = 'default'").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bound int
		want  bool
	}{{int(rows), true}, {int(rows) - 1, false}} {
		ok, err := query.LiveInGo(ctx, query.NewReader(in.Store, query.WithLiveSummarySpans(c.bound)), "default", since)
		if err != nil {
			t.Fatal(err)
		}
		if ok != c.want {
			t.Errorf("%d span rows in flight under a bound of %d: summarized in Go %v, want %v", rows, c.bound, ok, c.want)
		}
	}

	all := listAll(t, inSQL, query.RunFilter{Project: "default", Since: since, Until: until})
	if len(all) != sum.Runs {
		t.Fatalf("%d runs listed, want the %d sent", len(all), sum.Runs)
	}
	// The filters' values, from the runs themselves.
	var agent, model, service, task, conv, tool string
	costs := make([]float64, 0, len(all))
	for _, run := range all {
		if agent == "" && len(run.Agents) > 0 {
			agent = run.Agents[len(run.Agents)-1]
		}
		if model == "" && len(run.Models) > 0 {
			model = run.Models[0]
		}
		if conv == "" && run.ConversationID != "" {
			conv = run.ConversationID
		}
		service, task = all[0].Service, all[len(all)/2].Task
		costs = append(costs, run.Cost.Total)
	}
	slices.Sort(costs)
	// A span name some runs have and others not (the search matches any
	// of a run's span names), and a tool.
	runsOf := map[string]int{}
	for _, run := range all {
		d, err := inSQL.Run(ctx, "default", run.TraceID)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		stack := slices.Clone(d.Roots)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = append(stack[:len(stack)-1], n.Children...)
			names[n.Name] = true
			if tool == "" && n.Type == schema.TypeTool && n.ToolName != "" {
				tool = n.ToolName
			}
		}
		for n := range names {
			runsOf[n]++
		}
	}
	var name string
	for n, runs := range runsOf {
		if runs > 1 && runs < len(all) && (name == "" || n < name) {
			name = n
		}
	}
	yes, no := true, false
	filters := []struct {
		name string
		f    query.RunFilter
	}{
		{"all", query.RunFilter{}},
		{"agent", query.RunFilter{Agent: agent}},
		{"model", query.RunFilter{Model: model}},
		{"service", query.RunFilter{Service: service}},
		{"task", query.RunFilter{Task: task}},
		{"conversation", query.RunFilter{Conversation: conv}},
		{"tool", query.RunFilter{Tool: tool}},
		{"status error", query.RunFilter{Status: query.RunError}},
		{"status ok", query.RunFilter{Status: query.RunOK}},
		{"errors", query.RunFilter{HasErrors: &yes}},
		{"no errors", query.RunFilter{HasErrors: &no}},
		{"recovered", query.RunFilter{HasRecoveredErrors: &yes}},
		{"not recovered", query.RunFilter{HasRecoveredErrors: &no}},
		// Between two runs' costs: at one, SQL's and Go's sums may part in
		// the last bit.
		{"min cost", query.RunFilter{MinCost: (costs[len(costs)/2-1] + costs[len(costs)/2]) / 2}},
		{"search a name, upper case", query.RunFilter{Search: strings.ToUpper(name)}},
		{"search a trace prefix", query.RunFilter{Search: strings.ToUpper(all[3].TraceID[:8])}},
		{"search a conversation", query.RunFilter{Search: conv}},
		{"trace ids", query.RunFilter{TraceIDs: []string{strings.ToUpper(all[1].TraceID), all[5].TraceID, "00000000000000000000000000000001"}}},
		{"narrow window", query.RunFilter{Since: all[len(all)-5].Start, Until: all[4].Start}},
	}
	// Every filter in the default order, on one page; every order both
	// ways, page by page (25 runs a page: 3 pages), and a filter's pages.
	// (The aggregation's every read costs ~0.4 s on 18.16: what the Go
	// summaries are for.)
	type listing struct {
		name string
		f    query.RunFilter
	}
	var listings []listing
	for _, tc := range filters {
		tc.f.Limit = 1000
		listings = append(listings, listing{tc.name, tc.f})
	}
	for _, o := range query.RunSortOptions() {
		for _, dir := range []query.SortDir{query.Desc, query.Asc} {
			listings = append(listings, listing{fmt.Sprintf("all by %s %s", o.Sort, dir), query.RunFilter{Sort: o.Sort, Dir: dir, Limit: 25}})
		}
	}
	listings = append(listings, listing{"errors by cost", query.RunFilter{HasErrors: &yes, Sort: query.SortCost, Limit: 4}})
	for _, l := range listings {
		f := l.f
		f.Project = "default"
		if f.Since.IsZero() {
			f.Since, f.Until = since, until
		}
		want, wantCursors := pages(t, inSQL, f)
		got, gotCursors := pages(t, inGo, f)
		if len(want) == 0 || len(want) == len(all) && !strings.HasPrefix(l.name, "all") && !strings.HasPrefix(l.name, "not ") &&
			!strings.HasPrefix(l.name, "no ") && l.name != "status ok" {
			t.Errorf("%s: %d of the %d runs: the filter's value selects nothing to tell apart", l.name, len(want), len(all))
		}
		if err := sameRuns(got, want); err != nil {
			t.Errorf("%s, summarized in Go: %v", l.name, err)
		} else if !reflect.DeepEqual(gotCursors, wantCursors) {
			t.Errorf("%s: cursors %q, want %q", l.name, gotCursors, wantCursors)
		}
	}

	// The golden corpus: the counting rule's cases, in Go as in SQL.
	f := query.RunFilter{Project: "golden", Since: since, Until: until, Sort: query.SortCost, Limit: 1000}
	want, _ := pages(t, inSQL, f)
	got, _ := pages(t, inGo, f)
	if len(want) == 0 {
		t.Fatal("no golden run listed")
	}
	if err := sameRuns(got, want); err != nil {
		t.Errorf("golden runs by cost, summarized in Go: %v", err)
	}

	// The runs passed to a conversation read as rows, at their bound's
	// edge: as many as the runs in flight with a conversation, and one
	// fewer (then the aggregation).
	withConv := 0
	for _, run := range all {
		if run.ConversationID != "" {
			withConv++
		}
	}
	if withConv < 2 {
		t.Fatalf("%d runs with a conversation, want some to bound", withConv)
	}
	for _, c := range []struct {
		bound int
		want  bool
	}{{withConv, true}, {withConv - 1, false}} {
		ok, n, err := query.ConversationLiveRows(ctx, query.NewReader(in.Store, query.WithLiveLiteralRuns(c.bound)), "default", since)
		if err != nil {
			t.Fatal(err)
		}
		if ok != c.want || ok && n != withConv {
			t.Errorf("%d runs in flight with a conversation under a bound of %d: as rows %v (%d), want %v", withConv, c.bound, ok, n, c.want)
		}
	}

	// The conversations: their page picked and added up over the runs in
	// flight passed as rows to the statement, page by page; and with a
	// bound of as many rows as conversations, below the runs, so that
	// the page is picked from each conversation's latest run passed as
	// rows (a few busy conversations with many runs in flight) and a page's
	// totals take their runs as rows when they fit, else aggregate them.
	convs := map[string]bool{}
	for _, run := range all {
		if run.ConversationID != "" {
			convs[run.ConversationID] = true
		}
	}
	if len(convs) >= withConv {
		t.Fatalf("%d conversations of %d runs in flight, want a conversation of several", len(convs), withConv)
	}
	latestOnly := query.NewReader(in.Store, query.WithLiveLiteralRuns(len(convs)))
	for _, limit := range []int{3, 100} {
		cf := query.ConversationFilter{Project: "default", Since: since, Until: until, Limit: limit}
		var got, want, gotLatest []query.ConversationSummary
		for _, c := range []struct {
			r   *query.Reader
			out *[]query.ConversationSummary
		}{{inSQL, &want}, {inGo, &got}, {latestOnly, &gotLatest}} {
			f := cf
			for pages := 0; ; pages++ {
				// A cursor that does not move on would page forever.
				if pages > len(all) {
					t.Fatalf("conversations, %d a page: more pages than runs (%d)", limit, len(all))
				}
				page, err := c.r.Conversations(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				*c.out = append(*c.out, page.Conversations...)
				if page.NextCursor == "" {
					break
				}
				f.Cursor = page.NextCursor
			}
		}
		if len(want) < 2 {
			t.Fatalf("%d conversations, want some to page through", len(want))
		}
		if err := sameJSON(got, want); err != nil {
			t.Errorf("conversations, %d a page, summarized in Go: %v", limit, err)
		}
		if err := sameJSON(gotLatest, want); err != nil {
			t.Errorf("conversations, %d a page, each one's latest run as rows: %v", limit, err)
		}
	}

	// The window reports over the runs in flight.
	for _, by := range []string{"task", "agent"} {
		tf := query.TaskFilter{Project: "default", Since: since, Until: until, By: by}
		want, err := inSQL.Tasks(ctx, tf)
		if err != nil {
			t.Fatal(err)
		}
		got, err := inGo.Tasks(ctx, tf)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameJSON(got, want); want.RunsRead != sum.Runs || err != nil {
			t.Errorf("tasks by %s, summarized in Go: %v (%d runs read, want %d)", by, err, want.RunsRead, sum.Runs)
		}
	}
}

// listAll lists every run f selects, newest first.
func listAll(t *testing.T, r *query.Reader, f query.RunFilter) []query.RunSummary {
	t.Helper()
	f.Limit = 1000
	runs, _ := pages(t, r, f)
	return runs
}

// pages reads every page of f's list, and the cursors between them.
func pages(t *testing.T, r *query.Reader, f query.RunFilter) ([]query.RunSummary, []string) {
	t.Helper()
	var runs []query.RunSummary
	var cursors []string
	for {
		page, err := r.Runs(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, page.Runs...)
		if page.NextCursor == "" {
			return runs, cursors
		}
		cursors = append(cursors, page.NextCursor)
		f.Cursor = page.NextCursor
	}
}

// sameRuns compares two lists run by run, every figure (costs up to float
// rounding: SQL and Go add in different orders).
func sameRuns(got, want []query.RunSummary) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d runs, want %d", len(got), len(want))
	}
	for i := range want {
		a, b := got[i], want[i]
		if !near(a.Cost.Total, b.Cost.Total) || !near(a.Cost.Input, b.Cost.Input) || !near(a.Cost.CacheRead, b.Cost.CacheRead) ||
			!near(a.Cost.CacheWrite, b.Cost.CacheWrite) || !near(a.Cost.Output, b.Cost.Output) {
			return fmt.Errorf("run %d (%s): cost %+v, want %+v", i, b.TraceID, a.Cost, b.Cost)
		}
		ca, cb := a.CostByConfidence, b.CostByConfidence
		if !near(ca.CostExact, cb.CostExact) || !near(ca.CostUpperBound, cb.CostUpperBound) || !near(ca.CostLowerBound, cb.CostLowerBound) ||
			!near(ca.CostCorrected, cb.CostCorrected) || !near(ca.CostApproximate, cb.CostApproximate) {
			return fmt.Errorf("run %d (%s): cost by confidence %+v, want %+v", i, b.TraceID, ca, cb)
		}
		a.Cost, a.CostByConfidence = b.Cost, b.CostByConfidence
		if !reflect.DeepEqual(a, b) {
			return fmt.Errorf("run %d:\n got %+v\nwant %+v", i, a, b)
		}
	}
	return nil
}

// sameJSON compares two values as their JSON: numbers up to float
// rounding (SQL and Go add costs in different orders), all else exactly.
func sameJSON(got, want any) error {
	decode := func(v any) (any, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var out any
		return out, json.Unmarshal(b, &out)
	}
	g, err := decode(got)
	if err != nil {
		return err
	}
	w, err := decode(want)
	if err != nil {
		return err
	}
	var walk func(path string, g, w any) error
	walk = func(path string, g, w any) error {
		switch wv := w.(type) {
		case float64:
			if gv, ok := g.(float64); !ok || !near(gv, wv) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
		case map[string]any:
			gv, ok := g.(map[string]any)
			if !ok || len(gv) != len(wv) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
			for k := range wv {
				if err := walk(path+"."+k, gv[k], wv[k]); err != nil {
					return err
				}
			}
		case []any:
			gv, ok := g.([]any)
			if !ok || len(gv) != len(wv) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
			for i := range wv {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), gv[i], wv[i]); err != nil {
					return err
				}
			}
		default:
			if !reflect.DeepEqual(g, w) {
				return fmt.Errorf("%s: %v, want %v", path, g, w)
			}
		}
		return nil
	}
	return walk("", g, w)
}

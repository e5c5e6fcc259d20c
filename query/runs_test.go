package query_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// windowRuns are four runs around base (2026-11-02 09:00 UTC), offsets in
// minutes:
//
//	a: root agent 0–30 ok; chat 5–6 ($0.01, 100 in / 10 out); chat 20–21
//	   ($0.02, 200 in / 20 out); tool 25–26 error; tool 26–27 ok (recovered)
//	   → 5 spans, $0.03, 330 tokens, 30 min, status ok, 1 error, 1 recovered
//	b: root agent 15–25 error; tool 16–17 error
//	   → 2 spans, status error, 2 errors, 0 recovered
//	c: no root; tool 30–31 ok; tool 31–40 error (the last to end)
//	   → 2 spans, 10 min, status error, 1 error, 0 recovered
//	d: no root; tool 40–41 error; tool 40.5–45 ok (the last to end)
//	   → 2 spans, 5 min, status ok, 1 error, 1 recovered
func windowRuns() []schema.Span {
	root := func(trace string, at, dur time.Duration, status string) schema.Span {
		s := span(trace, "r"+trace, schema.TypeAgent, at, dur)
		s.ParentSpanID, s.Name, s.Status = "", "agent "+trace, status
		return s
	}
	child := func(trace, id, typ string, at, dur time.Duration, status string) schema.Span {
		s := span(trace, id, typ, at, dur)
		s.ParentSpanID, s.Name, s.Status = fmt.Sprintf("%016s", "r"+trace), typ+" "+id, status
		return s
	}
	chat := func(trace, id string, at time.Duration, in, out uint64, cost float64) schema.Span {
		s := child(trace, id, schema.TypeInference, at, time.Minute, "ok")
		s.UsageMode, s.InputTokens, s.OutputTokens = schema.UsageInclusive, in, out
		s.CostTotal, s.CostInput, s.CostSource = cost, cost, schema.CostCatalog
		return s
	}
	orphan := func(trace, id string, at, dur time.Duration, status string) schema.Span {
		s := span(trace, id, schema.TypeTool, at, dur)
		s.Name, s.Status = "tool "+id, status
		return s
	}
	m := time.Minute
	return []schema.Span{
		root("a", 0, 30*m, "ok"),
		chat("a", "a1", 5*m, 100, 10, 0.01),
		chat("a", "a2", 20*m, 200, 20, 0.02),
		child("a", "a3", schema.TypeTool, 25*m, m, "error"),
		child("a", "a4", schema.TypeTool, 26*m, m, "ok"),
		root("b", 15*m, 10*m, "error"),
		child("b", "b1", schema.TypeTool, 16*m, m, "error"),
		orphan("c", "c1", 30*m, m, "ok"),
		orphan("c", "c2", 31*m, 9*m, "error"),
		orphan("d", "d1", 40*m, m, "error"),
		orphan("d", "d2", 40*m+30*time.Second, 4*m+30*time.Second, "ok"),
	}
}

func trace(id string) string { return fmt.Sprintf("%032s", id) }

// TestRunsFiledUnderStart: a window picks the runs that start in it and
// reports each whole, spans outside the window included.
func TestRunsFiledUnderStart(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	insert(t, s, windowRuns(), 1)
	m := time.Minute
	tests := []struct {
		name         string
		since, until time.Time
		want         []string // newest first
	}{
		{"all", base.Add(-time.Hour), base.Add(time.Hour), []string{"d", "c", "b", "a"}},
		// a has four spans in the window but started at 0: not its run.
		{"from 10", base.Add(10 * m), time.Time{}, []string{"d", "c", "b"}},
		// a started at 0 and ends at 30, after until: still whole.
		{"0 to 14", base, base.Add(14 * m), []string{"a"}},
		{"15 to 30 inclusive", base.Add(15 * m), base.Add(30 * m), []string{"c", "b"}},
		{"after every start", base.Add(41 * m), time.Time{}, nil},
		// Runs longer than the hour span_facts is read back from before since.
		{"since two hours before", base.Add(-2 * time.Hour), time.Time{}, []string{"d", "c", "b", "a"}},
		{"until only", time.Time{}, base.Add(20 * m), []string{"b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := r.Runs(ctx, query.RunFilter{Project: "p", Since: tt.since, Until: tt.until})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, run := range page.Runs {
				got = append(got, run.TraceID)
				if run.TraceID == trace("a") {
					if run.Spans != 5 || !near(run.Cost.Total, 0.03) || run.DurationMs != 30*60*1000 ||
						run.Usage.Input != 300 || run.Usage.Output != 30 || run.Name != "agent a" || run.LLMCalls != 2 {
						t.Errorf("run a: %d spans, $%v, %v ms, %+v, %q, %d LLM calls; want the whole run: 5, 0.03, 1800000, 300 in / 30 out, agent a, 2",
							run.Spans, run.Cost.Total, run.DurationMs, run.Usage, run.Name, run.LLMCalls)
					}
				}
			}
			var want []string
			for _, id := range tt.want {
				want = append(want, trace(id))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("runs %v, want %v", got, want)
			}
		})
	}
	// A run that started long before the window (three hours), with a span
	// in it and none in the hour before it, is not the window's.
	long := []schema.Span{span("e", "e0", schema.TypeAgent, -3*time.Hour, 4*time.Hour), span("e", "e1", schema.TypeTool, 50*m, m)}
	long[0].ParentSpanID = ""
	insert(t, s, long, 1)
	page, err := r.Runs(ctx, query.RunFilter{Project: "p", Since: base.Add(45 * m)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Runs) != 0 {
		t.Errorf("since 45: %d runs (first %s), want none", len(page.Runs), page.Runs[0].TraceID)
	}
}

// TestRunStatusIsOutcome: a run's status is its outcome (windowRuns' doc
// works out each), the same from the run list (SQL) and the run detail (Go),
// and status, has_errors and has_recovered_errors filter on it. Run f
// (root 50–51 ok, nothing else) is clean.
func TestRunStatusIsOutcome(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	clean := span("f", "rf", schema.TypeAgent, 50*time.Minute, time.Minute)
	clean.ParentSpanID = ""
	insert(t, s, append(windowRuns(), clean), 1)
	type outcome struct {
		status            query.RunStatus
		errors, recovered int
	}
	want := map[string]outcome{
		"a": {"ok", 1, 1}, "b": {"error", 2, 0}, "c": {"error", 1, 0}, "d": {"ok", 1, 1}, "f": {"ok", 0, 0},
	}
	all, err := r.Runs(ctx, query.RunFilter{Project: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(all.Runs), len(want))
	}
	for _, run := range all.Runs {
		id := strings.TrimLeft(run.TraceID, "0")
		detail, err := r.Run(ctx, "p", run.TraceID)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range []struct {
			path string
			s    query.RunSummary
		}{{"list", run}, {"detail", detail.Summary}} {
			if o := (outcome{got.s.Status, got.s.Errors, got.s.RecoveredErrors}); o != want[id] {
				t.Errorf("run %s (%s): %+v, want %+v", id, got.path, o, want[id])
			}
		}
	}
	yes, no := true, false
	tests := []struct {
		name string
		f    query.RunFilter
		want string // trace ids without their zeros, newest first
	}{
		{"failed", query.RunFilter{Status: "error"}, "c b"},
		{"succeeded", query.RunFilter{Status: "ok"}, "f d a"},
		{"with errors", query.RunFilter{HasErrors: &yes}, "d c b a"},
		{"without errors", query.RunFilter{HasErrors: &no}, "f"},
		{"recovered", query.RunFilter{HasRecoveredErrors: &yes}, "d a"},
		{"not recovered", query.RunFilter{HasRecoveredErrors: &no}, "f c b"},
		{"ok with errors", query.RunFilter{Status: "ok", HasErrors: &yes}, "d a"},
		{"failed without errors", query.RunFilter{Status: "error", HasErrors: &no}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Project = "p"
			page, err := r.Runs(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, run := range page.Runs {
				got = append(got, strings.TrimLeft(run.TraceID, "0"))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("runs %q, want %q", g, tt.want)
			}
		})
	}
	if _, err := r.Runs(ctx, query.RunFilter{Project: "p", Status: "recovered"}); err == nil {
		t.Error("status=recovered: no error")
	}
}

// sortRuns are five runs whose figures tie in pairs, so that every sort
// leans on its tie-breaker (the trace id, in the sort's direction):
//
//	run  start  duration  cost   tokens (in+out)  errors  retries
//	1    0      10 min    0.03   300 (200+100)    0       0
//	2    1      5 min     0.01   300 (250+50)     1       1
//	3    2      10 min    0.02   100 (80+20)      2       0
//	4    3      1 min     0      0                1       1
//	5    4      20 min    0.03   500 (400+100)    0       2
//
// Errors are tool spans in error (the roots end ok); a retry is a tool span
// with attempt 2.
func sortRuns() []schema.Span {
	type run struct {
		dur, errs, retries int
		in, out            uint64
		cost               float64
	}
	runs := []run{{10, 0, 0, 200, 100, 0.03}, {5, 1, 1, 250, 50, 0.01}, {10, 2, 0, 80, 20, 0.02}, {1, 1, 1, 0, 0, 0}, {20, 0, 2, 400, 100, 0.03}}
	var out []schema.Span
	for i, r := range runs {
		tr, at := fmt.Sprint(i+1), time.Duration(i)*time.Minute
		root := span(tr, "r"+tr, schema.TypeAgent, at, time.Duration(r.dur)*time.Minute)
		root.ParentSpanID = ""
		out = append(out, root)
		child := func(id, typ string) schema.Span {
			s := span(tr, id, typ, at+time.Second*time.Duration(len(out)), time.Second)
			s.ParentSpanID = root.SpanID
			return s
		}
		if r.in+r.out > 0 {
			c := child("c"+tr, schema.TypeInference)
			c.UsageMode, c.InputTokens, c.OutputTokens = schema.UsageInclusive, r.in, r.out
			c.CostTotal, c.CostInput, c.CostSource = r.cost, r.cost, schema.CostCatalog
			out = append(out, c)
		}
		for e := range r.errs {
			c := child(fmt.Sprintf("e%s%d", tr, e), schema.TypeTool)
			c.ToolName, c.Status = fmt.Sprintf("fails%d", e), "error"
			out = append(out, c)
		}
		for n := range r.retries {
			c := child(fmt.Sprintf("t%s%d", tr, n), schema.TypeTool)
			c.ToolName, c.Attempt = fmt.Sprintf("retried%d", n), 2
			out = append(out, c)
		}
	}
	return out
}

// TestRunsSortAcrossPages pages through sortRuns two at a time under every
// sort and direction and gets each run once, in the order worked out by
// hand from the table in sortRuns' doc.
func TestRunsSortAcrossPages(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	insert(t, s, sortRuns(), 1)
	insert(t, s, sortRuns()[:3], 2) // duplicate deliveries change nothing
	tests := []struct {
		sort, dir string
		want      string
	}{
		{"", "", "5 4 3 2 1"},
		{"start", "asc", "1 2 3 4 5"},
		{"duration", "desc", "5 3 1 2 4"}, // 20, 10 (3 > 1), 10, 5, 1
		{"duration", "asc", "4 2 1 3 5"},
		{"cost", "desc", "5 1 3 2 4"}, // 0.03 (5 > 1), 0.03, 0.02, 0.01, 0
		{"cost", "asc", "4 2 3 1 5"},
		{"tokens", "desc", "5 2 1 3 4"}, // 500, 300 (2 > 1), 300, 100, 0
		{"tokens", "asc", "4 3 1 2 5"},
		{"errors", "desc", "3 4 2 5 1"}, // 2, 1 (4 > 2), 1, 0 (5 > 1), 0
		{"errors", "asc", "1 5 2 4 3"},
		{"retries", "desc", "5 4 2 3 1"}, // 2, 1 (4 > 2), 1, 0 (3 > 1), 0
		{"retries", "asc", "1 3 2 4 5"},
	}
	for _, tt := range tests {
		t.Run(tt.sort+" "+tt.dir, func(t *testing.T) {
			var got []string
			f := query.RunFilter{Project: "p", Sort: query.RunSort(tt.sort), Dir: query.SortDir(tt.dir), Limit: 2}
			for pages := 0; ; pages++ {
				if pages > 5 {
					t.Fatalf("more than 5 pages: %v", got)
				}
				page, err := r.Runs(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Runs) > 2 {
					t.Fatalf("page of %d runs, limit 2", len(page.Runs))
				}
				for _, run := range page.Runs {
					got = append(got, strings.TrimLeft(run.TraceID, "0"))
					if run.ToolRetries == nil {
						t.Errorf("run %s: no tool_retries in the list", run.TraceID)
					}
				}
				if page.NextCursor == "" {
					break
				}
				f.Cursor = page.NextCursor
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("order %q, want %q", g, tt.want)
			}
		})
	}
	// The list's retries are the run detail's.
	for i := 1; i <= 5; i++ {
		id := trace(fmt.Sprint(i))
		d, err := r.Run(ctx, "p", id)
		if err != nil {
			t.Fatal(err)
		}
		page, err := r.Runs(ctx, query.RunFilter{Project: "p", Search: id})
		if err != nil || len(page.Runs) != 1 {
			t.Fatalf("search %s: %v, %v", id, page.Runs, err)
		}
		if *page.Runs[0].ToolRetries != *d.Summary.ToolRetries || *page.Runs[0].ToolRepeats != *d.Summary.ToolRepeats {
			t.Errorf("run %d: list retries %d/%d, detail %d/%d", i, *page.Runs[0].ToolRetries, *page.Runs[0].ToolRepeats,
				*d.Summary.ToolRetries, *d.Summary.ToolRepeats)
		}
	}
	// A cursor belongs to its sort and direction.
	first, err := r.Runs(ctx, query.RunFilter{Project: "p", Sort: "cost", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []query.RunFilter{{Sort: "cost", Dir: "asc"}, {Sort: "tokens"}, {}} {
		f.Project, f.Cursor = "p", first.NextCursor
		if _, err := r.Runs(ctx, f); !errors.Is(err, query.ErrInvalidCursor) {
			t.Errorf("cost cursor under %q %q: %v, want invalid cursor", f.Sort, f.Dir, err)
		}
	}
	for _, f := range []query.RunFilter{{Sort: "task"}, {Dir: "up"}} {
		f.Project = "p"
		if _, err := r.Runs(ctx, f); err == nil {
			t.Errorf("sort %q dir %q: no error", f.Sort, f.Dir)
		}
	}
}

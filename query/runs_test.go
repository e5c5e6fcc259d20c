package query_test

import (
	"context"
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
		status            string
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
	tests := []struct {
		name string
		f    query.RunFilter
		want string // trace ids without their zeros, newest first
	}{
		{"failed", query.RunFilter{Status: "error"}, "c b"},
		{"succeeded", query.RunFilter{Status: "ok"}, "f d a"},
		{"with errors", query.RunFilter{HasErrors: "true"}, "d c b a"},
		{"without errors", query.RunFilter{HasErrors: "false"}, "f"},
		{"recovered", query.RunFilter{HasRecoveredErrors: "true"}, "d a"},
		{"not recovered", query.RunFilter{HasRecoveredErrors: "false"}, "f c b"},
		{"ok with errors", query.RunFilter{Status: "ok", HasErrors: "true"}, "d a"},
		{"failed without errors", query.RunFilter{Status: "error", HasErrors: "false"}, ""},
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
	if _, err := r.Runs(ctx, query.RunFilter{Project: "p", HasErrors: "yes"}); err == nil {
		t.Error("has_errors=yes: no error")
	}
}

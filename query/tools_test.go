package query_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// openReader starts (or reuses) the test ClickHouse and returns a reader and
// store over a fresh, migrated database.
func openReader(t *testing.T) (*query.Reader, *schema.Store) {
	t.Helper()
	s := testenv.OpenStore(t)
	return query.NewReader(s), s
}

var base = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)

// span builds a span of project p starting at base+at and lasting dur.
func span(trace, id, typ string, at, dur time.Duration) schema.Span {
	start := base.Add(at)
	return schema.Span{
		Project: "p", TraceID: fmt.Sprintf("%032s", trace), SpanID: fmt.Sprintf("%016s", id),
		ParentSpanID: fmt.Sprintf("%016s", "root"), Start: start.Truncate(time.Second),
		StartNs: uint64(start.UnixNano()), EndNs: uint64(start.Add(dur).UnixNano()), DurationNs: uint64(dur),
		SpanType: typ, Status: "ok", IngestedAt: start, Version: 1,
	}
}

func TestToolsOverClickHouse(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	var rows []schema.Span
	// vector_search: 100 calls lasting 10, 20, …, 1000 ms, one per run,
	// inserted in shuffled order. Sorted, the value at 0-based position
	// ⌊0.95·100⌋ = 95 is 960 ms (quantileExact); nearest-rank p95 is the
	// 95th value, 950 ms. p50: position 50 → 510 ms (nearest rank 500 ms).
	// p99: position 99 → 1000 ms (nearest rank 990 ms).
	order := rand.New(rand.NewPCG(1, 2)).Perm(100)
	for _, i := range order {
		sp := span(fmt.Sprintf("v%d", i), "v", schema.TypeTool, time.Duration(i)*time.Second, time.Duration(i+1)*10*time.Millisecond)
		sp.ToolName = "vector_search"
		rows = append(rows, sp)
	}
	// fetch_url in run f1: call c1 fails, is retried with attempt 2 (retry),
	// then the same arguments succeed again later (a repeat, not a retry).
	f1 := span("f1", "a", schema.TypeTool, 0, 3*time.Second)
	f1.ToolName, f1.ToolCallID, f1.Attempt, f1.Status, f1.ArgsHash = "fetch_url", "c1", 1, "error", "h"
	f2 := span("f1", "b", schema.TypeTool, 4*time.Second, time.Second)
	f2.ToolName, f2.ToolCallID, f2.Attempt, f2.ArgsHash = "fetch_url", "c1", 2, "h"
	f3 := span("f1", "c", schema.TypeTool, 10*time.Second, time.Second)
	f3.ToolName, f3.ToolCallID, f3.ArgsHash = "fetch_url", "c2", "h"
	// A duplicate delivery of the retry counts once.
	f2dup := f2
	f2dup.Version = 2
	// Outside the window: ignored.
	late := span("f9", "z", schema.TypeTool, 2*time.Hour, time.Second)
	late.ToolName = "fetch_url"
	rows = append(rows, f1, f2, f3, f2dup, late)
	if err := s.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}

	// The classification of retries read at once and in parts of the runs
	// (two calls a part): the window holds 104 tool span rows (100
	// vector_search, 4 fetch_url with the duplicate; the late one is
	// outside), so 52 parts; each run is whole in one of them.
	win := query.Window{Project: "p", Since: base, Until: base.Add(time.Hour)}
	for _, tc := range []struct {
		name  string
		r     *query.Reader
		parts int
	}{{"at once", r, 1}, {"in parts", query.NewReader(s, query.WithClassifyPartCalls(2)), 52}} {
		if parts, err := query.ClassifyParts(ctx, tc.r, win); err != nil || parts != tc.parts {
			t.Fatalf("%s: classified in %d parts (%v), want %d", tc.name, parts, err, tc.parts)
		}
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.r.Tools(ctx, query.ToolFilter{Window: win, PerMinute: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].Tool != "fetch_url" || got[1].Tool != "vector_search" {
				t.Fatalf("tools: %+v", got)
			}
			fu, vs := got[0], got[1]
			// fetch_url: 3 calls, 1 error, 1 retry (1/3), 1 repeat.
			if fu.Calls != 3 || fu.Errors != 1 || fu.Retries != 1 || fu.Repeats != 1 ||
				fu.RetryRate != 1.0/3 || fu.ErrorRate != 1.0/3 {
				t.Errorf("fetch_url: %+v", fu)
			}
			wantTrace := fmt.Sprintf("%032s", "f1")
			if !reflect.DeepEqual(fu.RetriedRuns, []string{wantTrace}) || !reflect.DeepEqual(fu.FailedRuns, []string{wantTrace}) {
				t.Errorf("fetch_url examples: retried %v failed %v", fu.RetriedRuns, fu.FailedRuns)
			}
			// fetch_url durations 1000, 1000, 3000 ms: position ⌊0.5·3⌋ = 1 → 1000; ⌊0.95·3⌋ = 2 → 3000.
			if fu.P50Ms != 1000 || fu.P95Ms != 3000 {
				t.Errorf("fetch_url percentiles: p50 %v p95 %v", fu.P50Ms, fu.P95Ms)
			}
			// All three fetch_url calls started in minute 09:00.
			if len(fu.PerMinute) != 1 || fu.PerMinute[0] != (query.ToolMinute{Minute: base, Calls: 3, Errors: 1, Retries: 1}) {
				t.Errorf("fetch_url per minute: %+v", fu.PerMinute)
			}
			if vs.Calls != 100 || vs.Retries != 0 || vs.Errors != 0 {
				t.Errorf("vector_search counts: %+v", vs)
			}
			// Documented tolerance: between the nearest-rank value and one rank above.
			for _, q := range []struct {
				name        string
				got, lo, hi float64
			}{{"p50", vs.P50Ms, 500, 510}, {"p95", vs.P95Ms, 950, 960}, {"p99", vs.P99Ms, 990, 1000}} {
				if q.got < q.lo || q.got > q.hi {
					t.Errorf("vector_search %s = %v ms, want within [%v, %v]", q.name, q.got, q.lo, q.hi)
				}
			}
			// The slowest call (1000 ms) is the call of run v99.
			if len(vs.SlowestRuns) != 5 || vs.SlowestRuns[0] != fmt.Sprintf("%032s", "v99") {
				t.Errorf("vector_search slowest runs: %v", vs.SlowestRuns)
			}
			// 100 calls, one per second from 09:00:00: minutes 09:00 and 09:01 hold
			// 60 and 40.
			if len(vs.PerMinute) != 2 || vs.PerMinute[0].Calls != 60 || vs.PerMinute[1].Calls != 40 {
				t.Errorf("vector_search per minute: %+v", vs.PerMinute)
			}
		})
	}

	// Another project sees nothing.
	other, err := r.Tools(ctx, query.ToolFilter{Window: query.Window{Project: "q", Since: base, Until: base.Add(time.Hour)}})
	if err != nil || len(other) != 0 {
		t.Fatalf("project q: %v %v", other, err)
	}
}

// TestToolExampleRuns checks the example runs Tools picks per tool and a
// filter by tool: a run is offered by its slowest call of the tool (equal
// values: the greater trace id first) and, for failed runs, by its latest
// failed call of the tool; a run's calls of another tool count for that
// tool alone.
func TestToolExampleRuns(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	call := func(trace, id, tool string, at, dur time.Duration, failed bool) schema.Span {
		sp := span(trace, id, schema.TypeTool, at, dur)
		sp.ToolName = tool
		if failed {
			sp.Status = "error"
		}
		return sp
	}
	ms := time.Millisecond
	rows := []schema.Span{
		call("s1", "a", "search", 0, 100*ms, false),
		call("s1", "b", "search", time.Second, 700*ms, true),
		call("s2", "a", "search", 2*time.Second, 700*ms, false),
		call("s3", "a", "search", 10*time.Second, 300*ms, true),
		call("s3", "b", "search", 20*time.Second, 200*ms, true),
		call("s4", "a", "search", 3*time.Second, 900*ms, false),
		call("s4", "b", "fetch", 4*time.Second, 5000*ms, true),
		call("s5", "a", "search", 5*time.Second, 50*ms, false),
		call("s6", "a", "search", 6*time.Second, 60*ms, false),
		call("s7", "a", "search", 7*time.Second, 40*ms, false),
	}
	if err := s.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	win := query.Window{Project: "p", Since: base, Until: base.Add(time.Hour)}
	// At once (the percentiles from the durations Go keeps) and in parts
	// of 3 calls (4 parts; the percentiles from ClickHouse): the same
	// figures.
	for _, tc := range []struct {
		name string
		r    *query.Reader
	}{{"at once", r}, {"in parts", query.NewReader(s, query.WithClassifyPartCalls(3))}} {
		t.Run(tc.name, func(t *testing.T) { checkToolExampleRuns(ctx, t, tc.r, win) })
	}
}

// checkToolExampleRuns is TestToolExampleRuns' checks of r's figures.
func checkToolExampleRuns(ctx context.Context, t *testing.T, r *query.Reader, win query.Window) {
	t.Helper()
	id := func(names ...string) []string {
		out := []string{}
		for _, n := range names {
			out = append(out, fmt.Sprintf("%032s", n))
		}
		return out
	}
	all, err := r.Tools(ctx, query.ToolFilter{Window: win})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Tool != "fetch" || all[1].Tool != "search" {
		t.Fatalf("tools: %+v", all)
	}
	fetch, search := all[0], all[1]
	// search: 9 calls, 3 failed (s1's second, both of s3's). Slowest per run:
	// s4 900, s2 700 and s1 700 (equal: s2's id is the greater), s3 300, s6
	// 60 (s5 50 and s7 40 are left out). Failed, by the latest failed call:
	// s3 at 20 s, s1 at 1 s; s4 failed only in fetch.
	if search.Calls != 9 || search.Errors != 3 {
		t.Errorf("search: %d calls, %d errors, want 9 and 3", search.Calls, search.Errors)
	}
	if want := id("s4", "s2", "s1", "s3", "s6"); !reflect.DeepEqual(search.SlowestRuns, want) {
		t.Errorf("search slowest runs %v, want %v", search.SlowestRuns, want)
	}
	if want := id("s3", "s1"); !reflect.DeepEqual(search.FailedRuns, want) {
		t.Errorf("search failed runs %v, want %v", search.FailedRuns, want)
	}
	// Sorted durations 40 50 60 100 200 300 700 700 900 ms: positions
	// ⌊0.5·9⌋ = 4 → 200, ⌊0.95·9⌋ = ⌊0.99·9⌋ = 8 → 900.
	if search.P50Ms != 200 || search.P95Ms != 900 || search.P99Ms != 900 {
		t.Errorf("search percentiles %v / %v / %v, want 200 / 900 / 900", search.P50Ms, search.P95Ms, search.P99Ms)
	}
	if fetch.Calls != 1 || fetch.Errors != 1 || fetch.P95Ms != 5000 ||
		!reflect.DeepEqual(fetch.SlowestRuns, id("s4")) || !reflect.DeepEqual(fetch.FailedRuns, id("s4")) {
		t.Errorf("fetch: %+v", fetch)
	}
	// One tool asked for: the same figures, the other tool left out.
	only, err := r.Tools(ctx, query.ToolFilter{Window: win, Tool: "search"})
	if err != nil {
		t.Fatal(err)
	}
	if len(only) != 1 || !reflect.DeepEqual(only[0], search) {
		t.Errorf("search alone: %+v, want %+v", only, search)
	}
}

// TestToolsClassifiedInRanges checks that a window of more calls than a
// part is classified in ranges of trace ids cut between the ids' first
// three characters, and that the figures are the same as read at once
// (the percentiles then come from ClickHouse, at once from Go); and that
// a prefix holding more calls than a part falls back to shards by hash.
func TestToolsClassifiedInRanges(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	var rows []schema.Span
	at := time.Duration(0)
	add := func(trace string, calls int) {
		for i := range calls {
			sp := span("", fmt.Sprintf("c%d", i), schema.TypeTool, at, time.Duration(100+37*len(rows))*time.Millisecond)
			sp.TraceID = trace + strings.Repeat("0", 32-len(trace))
			sp.ToolName, sp.Attempt = "search", uint32(i+1)
			if i == 0 && calls == 2 {
				sp.Status = "error" // the second call, attempt 2, is its retry
			}
			rows = append(rows, sp)
			at += 7 * time.Second
		}
	}
	// Calls by prefix: 1ab 2, 1ac 1, 3f0 3 (two runs), a17 3, ff0 1.
	add("1ab", 2)
	add("1ac", 1)
	add("3f0", 2)
	add("3f01", 1)
	add("a17", 3)
	add("ff0", 1)
	if err := s.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	win := query.Window{Project: "p", Since: base, Until: base.Add(time.Hour)}
	// Parts of 3 calls: 1ab and 1ac fill the first (3); 3f0 would make it
	// 6, so a part begins at 3f0; a17 begins the third, ff0 the fourth.
	inRanges := query.NewReader(s, query.WithClassifyPartCalls(3))
	ranges, err := query.ClassifyRanges(ctx, inRanges, win)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]string{{"", "3f0"}, {"3f0", "a17"}, {"a17", "ff0"}, {"ff0", ""}}; !reflect.DeepEqual(ranges, want) {
		t.Fatalf("ranges %q, want %q", ranges, want)
	}
	// Parts of 2: the prefix 3f0 alone holds 3 calls, so 5 shards by hash.
	byHash := query.NewReader(s, query.WithClassifyPartCalls(2))
	if ranges, err := query.ClassifyRanges(ctx, byHash, win); err != nil || ranges != nil {
		t.Fatalf("parts of 2: ranges %q (%v), want shards by hash", ranges, err)
	}
	if parts, err := query.ClassifyParts(ctx, byHash, win); err != nil || parts != 5 {
		t.Fatalf("parts of 2: %d parts (%v), want 5", parts, err)
	}
	f := query.ToolFilter{Window: win, PerMinute: true}
	want, err := r.Tools(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	// 10 calls, 2 failed (1ab's and 3f0's first); a run's calls are
	// attempts 1, 2, … so 4 retries (attempt ≥ 2: 1ab's second, 3f0's
	// second, a17's second and third); durations 100, 137, …, 433 ms:
	// position ⌊0.95·10⌋ = 9 → 433, ⌊0.5·10⌋ = 5 → 285.
	if len(want) != 1 || want[0].Calls != 10 || want[0].Errors != 2 || want[0].Retries != 4 ||
		want[0].P50Ms != 285 || want[0].P95Ms != 433 {
		t.Fatalf("at once: %+v", want)
	}
	for name, rd := range map[string]*query.Reader{"in ranges": inRanges, "by hash": byHash} {
		got, err := rd.Tools(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}

func TestModelsRunCostsAndLoops(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	var rows []schema.Span
	// gpt-4o: 20 calls lasting 100, 200, …, 2000 ms; the even ones streamed
	// with ttfc = duration/10 (20, 40, …, 200 ms, 10 values).
	for i := range 20 {
		sp := span(fmt.Sprintf("m%d", i), "m", schema.TypeInference, time.Duration(i)*time.Second, time.Duration(i+1)*100*time.Millisecond)
		sp.Model, sp.CostTotal = "gpt-4o", 0.01
		if i%2 == 1 {
			sp.TTFCMs = float64(i+1) * 10
		}
		rows = append(rows, sp)
	}
	// Run x: an expensive run (0.5 + 0.75 = 1.25 USD) that also loops: the
	// same search succeeds 4 times, plus one failed call with the same args.
	a := span("x", "a", schema.TypeInference, 0, time.Second)
	a.Model, a.CostTotal = "claude", 0.5
	b := span("x", "b", schema.TypeInference, time.Second, time.Second)
	b.Model, b.CostTotal = "claude", 0.75
	rows = append(rows, a, b)
	for i := range 5 {
		sp := span("x", fmt.Sprintf("l%d", i), schema.TypeTool, time.Duration(2+i)*time.Second, time.Second)
		sp.ToolName, sp.ArgsHash = "web_search", "same"
		if i == 4 {
			sp.Status = "error"
		}
		rows = append(rows, sp)
	}
	if err := s.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	w := query.Window{Project: "p", Since: base, Until: base.Add(time.Hour)}

	models, err := r.Models(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 2 || models[1].Model != "gpt-4o" {
		t.Fatalf("models: %+v", models)
	}
	g := models[1]
	// Durations: position ⌊0.95·20⌋ = 19 → 2000 ms. TTFC of 10 streamed calls
	// 20…200 ms: position ⌊0.95·10⌋ = 9 → 200 ms; p50 position 5 → 120 ms.
	if g.Calls != 20 || g.P95Ms != 2000 || g.TTFCCalls != 10 || g.TTFCP95Ms != 200 || g.TTFCP50Ms != 120 {
		t.Errorf("gpt-4o: %+v", g)
	}
	if len(g.SlowestRuns) != 5 || g.SlowestRuns[0] != fmt.Sprintf("%032s", "m19") {
		t.Errorf("gpt-4o slowest: %v", g.SlowestRuns)
	}
	// claude never streamed: TTFC percentiles stay 0.
	if c := models[0]; c.Model != "claude" || c.TTFCCalls != 0 || c.TTFCP95Ms != 0 || c.P95Ms != 1000 {
		t.Errorf("claude: %+v", c)
	}

	over, err := r.RunsOverBudget(ctx, w, 1.0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(over) != 1 || over[0].TraceID != fmt.Sprintf("%032s", "x") || over[0].CostUSD != 1.25 {
		t.Errorf("runs over 1 USD: %+v", over)
	}

	loops, err := r.RepeatLoops(ctx, w, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(loops) != 1 || loops[0].Calls != 4 || loops[0].Tool != "web_search" {
		t.Errorf("loops of ≥ 4: %+v", loops)
	}
	if loops, _ := r.RepeatLoops(ctx, w, 5, 10); len(loops) != 0 {
		t.Errorf("loops of ≥ 5 (the failed call does not count): %+v", loops)
	}

	usage, err := r.UsageByMinute(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	// gpt-4o: 20 × 0.01 = 0.20 USD; claude 1.25 USD; all in minute 09:00.
	var cost float64
	for _, u := range usage {
		cost += u.CostUSD
		if !u.Minute.Equal(base) {
			t.Errorf("usage minute %v, want %v", u.Minute, base)
		}
	}
	if cost < 1.4499 || cost > 1.4501 {
		t.Errorf("usage cost %v, want 1.45", cost)
	}

	projects, err := r.Projects(ctx, base)
	if err != nil || !reflect.DeepEqual(projects, []string{"p"}) {
		t.Errorf("projects: %v %v", projects, err)
	}
}

func TestRunsFilterByTool(t *testing.T) {
	ctx := context.Background()
	r, s := openReader(t)
	// Run a calls web_search (delivered twice), run b calls fetch_url, run c
	// has a tool span without a tool name, run d only an inference call.
	a := span("a", "a1", schema.TypeTool, 0, time.Second)
	a.ToolName = "web_search"
	aDup := a
	aDup.Version = 2
	b := span("b", "b1", schema.TypeTool, time.Second, time.Second)
	b.ToolName = "fetch_url"
	c := span("c", "c1", schema.TypeTool, 2*time.Second, time.Second)
	d := span("d", "d1", schema.TypeInference, 3*time.Second, time.Second)
	d.Model = "gpt-4o"
	if err := s.InsertSpans(ctx, []schema.Span{a, aDup, b, c, d}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool string
		want []string
	}{
		{"web_search", []string{"a"}},
		{"fetch_url", []string{"b"}},
		{query.UnknownName, []string{"c"}}, // as the tool statistics name it
		{"vector_search", nil},
		{"", []string{"d", "c", "b", "a"}}, // no filter: all, newest first
	} {
		page, err := r.Runs(ctx, query.RunFilter{Project: "p", Tool: tc.tool, Since: base, Until: base.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, run := range page.Runs {
			got = append(got, strings.TrimLeft(run.TraceID, "0"))
			if tc.tool == "web_search" && run.ToolCalls != 1 {
				t.Errorf("run a counts %d tool calls, want 1 (the duplicate counts once)", run.ToolCalls)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("tool %q: runs %v, want %v", tc.tool, got, tc.want)
		}
	}
}

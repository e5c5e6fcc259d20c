package alerts_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// openStore returns a migrated store over a fresh database of the shared
// test ClickHouse.
func openStore(t testing.TB) *schema.Store {
	t.Helper()
	s := testenv.OpenStore(t)
	return s
}

// toolSpan is a tool call of project p in its own run, starting at start.
func toolSpan(tool, run string, start time.Time, dur time.Duration) schema.Span {
	return schema.Span{
		Project: "p", TraceID: fmt.Sprintf("%032s", run), SpanID: fmt.Sprintf("%016s", "s"+run),
		ParentSpanID: fmt.Sprintf("%016s", "root"), Start: start.Truncate(time.Second),
		StartNs: uint64(start.UnixNano()), EndNs: uint64(start.Add(dur).UnixNano()), DurationNs: uint64(dur),
		SpanType: schema.TypeTool, ToolName: tool, Status: "ok", Attempt: 1, IngestedAt: start, Version: 1,
	}
}

// callsWithRetries makes n calls of tool, one per run, every 2 s from start;
// the first retries of them are second attempts.
func callsWithRetries(tool, runPrefix string, n, retries int, start time.Time) []schema.Span {
	out := make([]schema.Span, n)
	for i := range out {
		out[i] = toolSpan(tool, fmt.Sprintf("%s%d", runPrefix, i), start.Add(time.Duration(i)*2*time.Second), 100*time.Millisecond)
		if i < retries {
			out[i].Attempt = 2
		}
	}
	return out
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// recorder is a Target that keeps every batch.
type recorder struct {
	mu      sync.Mutex
	batches [][]alerts.Notification
}

func (r *recorder) Name() string { return "recorder" }

func (r *recorder) Send(_ context.Context, b []alerts.Notification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, b)
	return nil
}

// waitBatches waits until n batches arrived (delivery is asynchronous) and
// returns them.
func (r *recorder) waitBatches(t *testing.T, n int) [][]alerts.Notification {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := append([][]alerts.Notification{}, r.batches...)
		r.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("got %d notification batches, want %d: %+v", len(got), n, got)
			}
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustRules(t *testing.T, y string) []alerts.Rule {
	t.Helper()
	rules, err := alerts.ParseRules([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func startEvaluator(t *testing.T, cfg alerts.Config) *alerts.Evaluator {
	t.Helper()
	ev, err := alerts.NewEvaluator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ev.RunDelivery(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ev
}

func evaluate(t *testing.T, ev *alerts.Evaluator) {
	t.Helper()
	if err := ev.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// states summarizes Alerts as "tool:state".
func states(ev *alerts.Evaluator) []string {
	var out []string
	for _, a := range ev.Alerts("p") {
		out = append(out, a.Labels["tool"]+":"+string(a.State))
	}
	return out
}

func TestRetryRateLifecycle(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	T := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	// 100 calls each from T-5m, every 2 s (last at T-5m+198s = T-1m42s).
	var rows []schema.Span
	rows = append(rows, callsWithRetries("flaky", "f", 100, 11, T.Add(-5*time.Minute))...) // 11% retried
	rows = append(rows, callsWithRetries("steady", "s", 100, 9, T.Add(-5*time.Minute))...) // 9%
	rows = append(rows, callsWithRetries("rare", "r", 10, 5, T.Add(-5*time.Minute))...)    // 50%, 10 < 20 calls
	if err := store.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	rules := mustRules(t, `
rules:
  - name: ToolRetryRate
    kind: tool_retry_rate
    threshold: 0.10
    window: 15m
    for: 5m
    min_samples: 20
    severity: page
    labels: {team: agents}
    runbook_url: https://runbooks.example/retries
`)
	clk := &clock{T}
	rec := &recorder{}
	statePath := filepath.Join(t.TempDir(), "alerts-state.json")
	cfg := alerts.Config{Rules: rules, Source: query.NewReader(store), Targets: []alerts.Target{rec},
		StatePath: statePath, ExternalURL: "http://tally.example", Now: clk.now, Projects: []string{"p"}}
	ev := startEvaluator(t, cfg)

	// T: flaky is above 10% with 100 ≥ 20 calls: pending. steady (9%) and
	// rare (too few calls) have no alert at all.
	evaluate(t, ev)
	if got := states(ev); !reflect.DeepEqual(got, []string{"flaky:pending"}) {
		t.Fatalf("at T: %v", got)
	}
	a := ev.Alerts("p")[0]
	if a.Value != 0.11 || a.Samples != 100 || a.Threshold != 0.10 || !a.ActiveAt.Equal(T) {
		t.Errorf("pending alert: %+v", a)
	}
	// T+3m: held for 3 of the 5 minutes of `for`: still pending.
	clk.t = T.Add(3 * time.Minute)
	evaluate(t, ev)
	if got := states(ev); !reflect.DeepEqual(got, []string{"flaky:pending"}) {
		t.Fatalf("at T+3m: %v", got)
	}
	// T+5m: held for 5 minutes: fires, and is sent.
	clk.t = T.Add(5 * time.Minute)
	evaluate(t, ev)
	if got := states(ev); !reflect.DeepEqual(got, []string{"flaky:firing"}) {
		t.Fatalf("at T+5m: %v", got)
	}
	b := rec.waitBatches(t, 1)
	n := b[0][0]
	wantLabels := map[string]string{"alertname": "ToolRetryRate", "project": "p", "tool": "flaky", "severity": "page", "team": "agents"}
	if n.Status != alerts.StateFiring || !reflect.DeepEqual(n.Labels, wantLabels) || !n.StartsAt.Equal(T.Add(5*time.Minute)) ||
		// endsAt = now + 4 × max(resend 1m, interval 1m) = T+5m+4m.
		!n.EndsAt.Equal(T.Add(9*time.Minute)) {
		t.Errorf("firing notification: %+v", n)
	}
	// 11 retried of 100: "11.0%"; threshold "10.0%".
	if want := "tool flaky retry rate 11.0% > 10.0% (11 of 100 calls retried in 15m)"; n.Annotations["summary"] != want {
		t.Errorf("summary %q, want %q", n.Annotations["summary"], want)
	}
	if n.Annotations["runbook_url"] != "https://runbooks.example/retries" || n.Annotations["description"] == "" {
		t.Errorf("annotations: %v", n.Annotations)
	}
	// Window start T+5m-15m = 09:50:00.
	if want := "http://tally.example/runs?since=2026-11-02T09%3A50%3A00Z&tool=flaky"; n.GeneratorURL != want {
		t.Errorf("generatorURL %q, want %q", n.GeneratorURL, want)
	}
	// The example runs are the retried ones (f0…f10), most recent first.
	if len(n.ExampleRunIDs) != 5 || n.ExampleRunIDs[0] != fmt.Sprintf("%032s", "f10") {
		t.Errorf("example runs %v", n.ExampleRunIDs)
	}

	// Restart: a new evaluator over the same state file still knows the
	// alert fired at T+5m and was sent then.
	ev2 := startEvaluator(t, cfg)
	if got := ev2.Alerts("p"); len(got) != 1 || got[0].State != alerts.StateFiring || !got[0].FiredAt.Equal(T.Add(5*time.Minute)) {
		t.Fatalf("after restart: %+v", got)
	}
	// T+5m30s: less than the 1m resend interval since the last send: nothing.
	clk.t = T.Add(5*time.Minute + 30*time.Second)
	evaluate(t, ev2)
	// T+6m: re-sent, same startsAt.
	clk.t = T.Add(6 * time.Minute)
	evaluate(t, ev2)
	b = rec.waitBatches(t, 2)
	if r := b[1][0]; r.Status != alerts.StateFiring || !r.StartsAt.Equal(T.Add(5*time.Minute)) {
		t.Errorf("re-sent notification: %+v", r)
	}

	// 100 more flaky calls, none retried: 11 of 200 = 5.5% < 10%: resolves.
	if err := store.InsertSpans(ctx, callsWithRetries("flaky", "g", 100, 0, T.Add(5*time.Minute))); err != nil {
		t.Fatal(err)
	}
	clk.t = T.Add(9 * time.Minute)
	evaluate(t, ev2)
	if got := states(ev2); !reflect.DeepEqual(got, []string{"flaky:resolved"}) {
		t.Fatalf("at T+9m: %v", got)
	}
	if a := ev2.Alerts("p")[0]; a.Value != 0.055 || a.Samples != 200 || !a.ResolvedAt.Equal(T.Add(9*time.Minute)) {
		t.Errorf("resolved alert: %+v", a)
	}
	b = rec.waitBatches(t, 3)
	if r := b[2][0]; r.Status != alerts.StateResolved || !r.EndsAt.Equal(T.Add(9*time.Minute)) ||
		!r.StartsAt.Equal(T.Add(5*time.Minute)) || !reflect.DeepEqual(r.Labels, wantLabels) {
		t.Errorf("resolution: %+v", r)
	}
	// Later cycles send nothing more; the resolved alert stays listed.
	clk.t = T.Add(10 * time.Minute)
	evaluate(t, ev2)
	clk.t = T.Add(40 * time.Minute)
	evaluate(t, ev2)
	rec.waitBatches(t, 3)
	if got := states(ev2); !reflect.DeepEqual(got, []string{"flaky:resolved"}) {
		t.Fatalf("at T+40m: %v", got)
	}

	// History: one episode, fired at T+5m at 11% over 10%, resolved at
	// T+9m at 5.5%: 240 s. Past the 24 h the resolved alert stays listed,
	// the episode is still in the history, across a restart too; a range
	// that ends before it fired, or a rule of another name, has none.
	clk.t = T.Add(25 * time.Hour)
	evaluate(t, ev2)
	if got := ev2.Alerts("p"); len(got) != 0 {
		t.Errorf("at T+25h the resolved alert is still listed: %+v", got)
	}
	ev3 := startEvaluator(t, cfg)
	for _, e := range []*alerts.Evaluator{ev2, ev3} {
		h := e.History("p", "", T, T.Add(26*time.Hour))
		if len(h) != 1 {
			t.Fatalf("history %+v, want one episode", h)
		}
		ep := h[0]
		if ep.Rule != "ToolRetryRate" || !ep.FiredAt.Equal(T.Add(5*time.Minute)) || !ep.ResolvedAt.Equal(T.Add(9*time.Minute)) ||
			ep.FiredValue != 0.11 || ep.Value != 0.055 || ep.Threshold != 0.10 || ep.DurationS != 240 ||
			ep.Severity != "page" || ep.Labels["tool"] != "flaky" || ep.Summary != "tool flaky retry rate 11.0% > 10.0% (11 of 100 calls retried in 15m)" {
			t.Errorf("episode %+v", ep)
		}
	}
	if h := ev3.History("p", "", T, T.Add(4*time.Minute)); len(h) != 0 {
		t.Errorf("history before it fired: %+v", h)
	}
	if h := ev3.History("p", "Other", T, T.Add(26*time.Hour)); len(h) != 0 {
		t.Errorf("history of another rule: %+v", h)
	}
	// 30 days after it resolved (the default retention) it is still kept; a
	// minute later it is gone.
	clk.t = T.Add(9*time.Minute + 30*24*time.Hour)
	evaluate(t, ev3)
	if h := ev3.History("p", "", T, clk.t); len(h) != 1 {
		t.Errorf("history at 30 days: %d episodes, want 1", len(h))
	}
	clk.t = clk.t.Add(time.Minute)
	evaluate(t, ev3)
	if h := ev3.History("p", "", T, clk.t); len(h) != 0 {
		t.Errorf("history past 30 days: %+v", h)
	}
}

// fakeCache is a cache-health source with fixed verdicts (the cache query
// is another package's; this tests only how its verdicts become alerts).
type fakeCache []alerts.CacheVerdict

func (f fakeCache) CacheVerdicts(context.Context, string, time.Time, time.Time) ([]alerts.CacheVerdict, error) {
	return f, nil
}

func TestEveryKind(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	T := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return T.Add(-10*time.Minute + time.Duration(i)*time.Second) }
	var rows []schema.Span
	for i := range 20 {
		// vector_search: 20 calls of 200 ms (p95 200 ms > 100 ms).
		rows = append(rows, toolSpan("vector_search", fmt.Sprintf("v%d", i), at(i), 200*time.Millisecond))
		// code_sandbox: 20 calls of 3 s (p95 3000 ms < its override 5000 ms).
		rows = append(rows, toolSpan("code_sandbox", fmt.Sprintf("c%d", i), at(i), 3*time.Second))
		// web_search: 5 of 20 calls fail (25% > 20%).
		w := toolSpan("web_search", fmt.Sprintf("w%d", i), at(i), 50*time.Millisecond)
		w.ArgsHash = fmt.Sprintf("args%d", i)
		if i < 5 {
			w.Status = "error"
		}
		rows = append(rows, w)
		// gpt-4o: 20 calls of 2 s (p95 2000 ms > 1000 ms), ttfc 300 ms (< 500).
		m := toolSpan("", fmt.Sprintf("m%d", i), at(i), 2*time.Second)
		m.SpanType, m.Model, m.TTFCMs = schema.TypeInference, "gpt-4o", 300
		rows = append(rows, m)
	}
	// Run x: web_search with the same arguments 4 times (≥ 3), and an
	// inference costing 0.5 + 0.75 = 1.25 USD (> 1.00).
	for i := range 4 {
		w := toolSpan("web_search", "x", at(30+i), 50*time.Millisecond)
		w.SpanID, w.ArgsHash = fmt.Sprintf("%016d", i), "same"
		rows = append(rows, w)
	}
	for i, c := range []float64{0.5, 0.75} {
		m := toolSpan("", "x", at(40+i), time.Second)
		m.SpanID, m.SpanType, m.Model, m.CostTotal = fmt.Sprintf("%016d", 10+i), schema.TypeInference, "claude", c
		rows = append(rows, m)
	}
	if err := store.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	rules := mustRules(t, `
rules:
  - {name: ToolSlow, kind: tool_latency_p95, threshold: 100, overrides: [{tool: code_sandbox, threshold: 5000}]}
  - {name: ToolErrors, kind: tool_error_rate, threshold: 0.2}
  - {name: ModelSlow, kind: model_latency_p95, threshold: 1000}
  - {name: ModelTTFC, kind: model_latency_p95, measure: ttfc, threshold: 500}
  - {name: CacheMiss, kind: cache_read_zero, min_samples: 10}
  - {name: RunCost, kind: run_cost, threshold: 1.0}
  - {name: Loop, kind: repeat_loop, threshold: 3}
  - {name: Repeats, kind: tool_repeat_rate, threshold: 0.1}
`)
	cache := fakeCache{
		{Agent: "summarizer", Model: "gpt-4o-mini", Verdict: "never_hit", EligibleCalls: 40, ExampleTraceIDs: []string{"t1"}},
		{Agent: "researcher", Model: "claude", Verdict: "healthy", EligibleCalls: 50, CacheReadTokens: 12000},
		{Agent: "coder", Model: "gpt-4o", Verdict: "never_hit", EligibleCalls: 3},
	}
	ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(store), Cache: cache,
		Now: func() time.Time { return T }})

	results, err := ev.Check(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var firing []string
	for _, r := range results {
		if r.Firing {
			firing = append(firing, r.Rule+" "+alerts.SubjectString(r.Subject))
		}
	}
	want := []string{
		"CacheMiss agent=summarizer model=gpt-4o-mini", // never_hit with 40 ≥ 10 cacheable calls; coder has 3
		"Loop tool=web_search",
		"ModelSlow model=gpt-4o",
		"Repeats tool=web_search", // run x repeats its successful call 3 times: 3 of 24 = 12.5% > 10%
		"RunCost ",
		"ToolErrors tool=web_search", // 5 of 24 web_search calls = 20.8% > 20%
		"ToolSlow tool=vector_search",
	}
	if !reflect.DeepEqual(firing, want) {
		t.Errorf("firing:\n%q\nwant\n%q", firing, want)
	}
	byRule := map[string]alerts.CheckResult{}
	for _, r := range results {
		byRule[r.Rule+" "+alerts.SubjectString(r.Subject)] = r
	}
	if r := byRule["RunCost "]; r.Value != 1.25 || r.Samples != 1 || r.Summary != "a run cost $1.25 > budget $1.00 (1 runs over budget in 15m)" {
		t.Errorf("run cost: %+v", r)
	}
	if r := byRule["Loop tool=web_search"]; r.Value != 4 || !reflect.DeepEqual(r.ExampleRunIDs, []string{fmt.Sprintf("%032s", "x")}) {
		t.Errorf("loop: %+v", r)
	}
	if r := byRule["Repeats tool=web_search"]; r.Value != 0.125 || r.Summary != "tool web_search repeat rate 12.5% > 10.0% (3 of 24 calls repeated in 15m)" {
		t.Errorf("repeat rate: %+v", r)
	}
	if r := byRule["Repeats tool=vector_search"]; r.Firing || r.Value != 0 {
		t.Errorf("vector_search repeat rate: %+v", r)
	}
	// A rule that is fine reads as fine (it read "3000 ms > 5000 ms").
	if r := byRule["ToolSlow tool=code_sandbox"]; r.Summary != "tool code_sandbox p95 latency 3000 ms ≤ 5000 ms (20 calls in 15m)" {
		t.Errorf("code_sandbox summary %q", r.Summary)
	}
	if r := byRule["Loop tool=web_search"]; r.Summary != "tool web_search called 4 times with the same arguments in one run ≥ 3 (same arguments repeated in 1 runs in 15m)" {
		t.Errorf("loop summary %q", r.Summary)
	}
	if r := byRule["ToolSlow tool=code_sandbox"]; r.Firing || r.Threshold != 5000 || r.Value != 3000 {
		t.Errorf("code_sandbox override: %+v", r)
	}
	if r := byRule["ModelTTFC model=gpt-4o"]; r.Firing || r.Value != 300 || r.Samples != 20 {
		t.Errorf("ttfc: %+v", r)
	}

	// With for = 0 the same alerts fire on the first evaluation.
	evaluate(t, ev)
	var names []string
	for _, a := range ev.Alerts("p") {
		if a.State != alerts.StateFiring {
			t.Errorf("%s is %s", a.Rule, a.State)
		}
		names = append(names, a.Rule)
	}
	sort.Strings(names)
	if want := []string{"CacheMiss", "Loop", "ModelSlow", "Repeats", "RunCost", "ToolErrors", "ToolSlow"}; !reflect.DeepEqual(names, want) {
		t.Errorf("alerts %v, want %v", names, want)
	}
}

// flipCache answers never_hit or healthy for one (agent, model) as its
// flag says, so a cache_read_zero alert fires and resolves on demand.
type flipCache struct{ never *bool }

func (f flipCache) CacheVerdicts(context.Context, string, time.Time, time.Time) ([]alerts.CacheVerdict, error) {
	v := "healthy"
	if *f.never {
		v = alerts.VerdictNeverHit
	}
	return []alerts.CacheVerdict{{Agent: "a", Model: "m", Verdict: v, EligibleCalls: 40}}, nil
}

// TestHistoryKeepsAtMostMaxHistory: an alert that fires and resolves three
// times leaves three episodes; with MaxHistory 2 the history keeps the two
// newest (fired at T+2m and T+4m), and the limit holds at its edge.
func TestHistoryKeepsAtMostMaxHistory(t *testing.T) {
	store := openStore(t)
	T := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	rules := mustRules(t, `
rules:
  - {name: NeverHit, kind: cache_read_zero, for: 0s}
`)
	for _, c := range []struct {
		max  int
		want []time.Time
	}{
		{2, []time.Time{T.Add(4 * time.Minute), T.Add(2 * time.Minute)}},
		{3, []time.Time{T.Add(4 * time.Minute), T.Add(2 * time.Minute), T}},
	} {
		never := false
		clk := &clock{T}
		ev := startEvaluator(t, alerts.Config{Rules: rules, Source: query.NewReader(store), Cache: flipCache{&never},
			Now: clk.now, Projects: []string{"p"}, MaxHistory: c.max})
		for i := 0; i < 3; i++ {
			never, clk.t = true, T.Add(time.Duration(2*i)*time.Minute)
			evaluate(t, ev)
			never, clk.t = false, clk.t.Add(time.Minute)
			evaluate(t, ev)
		}
		var got []time.Time
		for _, ep := range ev.History("p", "", T, T.Add(time.Hour)) {
			got = append(got, ep.FiredAt)
			if ep.DurationS != 60 || ep.ResolvedAt.Sub(ep.FiredAt) != time.Minute {
				t.Errorf("episode %+v: want 60 s", ep)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("MaxHistory %d: episodes fired at %v, want %v", c.max, got, c.want)
		}
	}
}

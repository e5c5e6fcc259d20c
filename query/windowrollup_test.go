package query_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/consistency"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/safety"
	"github.com/tallyhq/tally/schema"
)

// genRun is one settled run the window rollup test writes, with what the
// reports should make of it.
type genRun struct {
	row     schema.RunRow
	verdict int8 // the run's verdict by every outcome: 1 passed, -1 failed, 0 none
}

func (g *genRun) failed() bool { return g.row.Failed == 1 }
func (g *genRun) tokens() float64 {
	return float64(g.row.InputTokens + g.row.OutputTokens)
}

// genRuns writes settled runs over the hours [base−1h, base+8h): per hour
// and task 25–40 runs. Task "triage" has outcome verdicts on its spans
// ("pass:quality"/"fail:quality") for four runs in five; "research" and
// "code" are graded by status (one run in six, and in three, fails).
// Agents: planner on every run, coder on code's, reviewer on one in four.
// A few runs wait for approval. The measures are drawn wide (costs
// log-normal, steps 1–60, tokens 200–40,000) so that percentiles are not
// one bucket's. One code run in 17 is a loop (ten times the steps,
// tokens and cost, failed): runs over the caps set from the successful
// ones; one in 20 is verbose (four times the input, passed): passes over
// the budget.
func genRuns(t *testing.T, store *schema.Store, base time.Time) []genRun {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 11))
	var out []genRun
	n, codeN := 0, 0
	for h := -1; h < 8; h++ {
		for _, task := range []string{"triage", "research", "code"} {
			for range 25 + rng.IntN(16) {
				n++
				start := base.Add(time.Duration(h)*time.Hour + time.Duration(rng.IntN(3600))*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond)
				dur := time.Duration(500+rng.IntN(120_000)) * time.Millisecond
				llm, tools := 1+rng.IntN(30), rng.IntN(30)
				in, outT := 200+rng.IntN(30_000), 50+rng.IntN(10_000)
				cost := math.Exp(rng.NormFloat64()*0.8 - 3)
				loop, verbose := false, false
				if task == "code" {
					codeN++
					loop, verbose = codeN%17 == 0, codeN%20 == 3
				}
				if loop {
					llm, tools, in, cost = llm*10, tools*10, in*10, cost*10
				}
				if verbose {
					in *= 4
				}
				agents := []string{"planner"}
				if task == "code" {
					agents = append(agents, "coder")
				}
				if rng.IntN(4) == 0 {
					agents = append(agents, "reviewer")
				}
				slices.Sort(agents)
				g := genRun{row: schema.RunRow{Project: "p", TraceID: fmt.Sprintf("%032x", n), Start: start.Truncate(time.Second),
					StartNs: uint64(start.UnixNano()), EndNs: uint64(start.Add(dur).UnixNano()), Name: task, RootName: task, Task: task,
					Agents: agents, Spans: uint64(llm + tools + 1), LLMCalls: uint64(llm), ToolCalls: uint64(tools),
					InputTokens: uint64(in), OutputTokens: uint64(outT), CostTotal: cost, ActiveNs: uint64(dur), Version: 1}}
				if rng.IntN(8) == 0 {
					wait := time.Duration(1+rng.IntN(30_000)) * time.Millisecond
					g.row.WaitNs, g.row.ActiveNs = uint64(wait), uint64(max(dur-wait, 0))
				}
				switch task {
				case "triage":
					if rng.IntN(5) > 0 {
						g.verdict = 1
						if rng.IntN(3) == 0 {
							g.verdict = -1
						}
					}
					if rng.IntN(10) == 0 {
						g.row.Failed = 1
					}
				case "research":
					if rng.IntN(6) == 0 {
						g.row.Failed = 1
					}
				default:
					if rng.IntN(3) == 0 || loop {
						g.row.Failed = 1
					}
					if verbose {
						g.row.Failed = 0
					}
				}
				// Two versions of each task: the configuration changes at
				// base+4h; every run tries a dataset case of seven.
				version := 1
				if h >= 4 {
					version = 2
				}
				cfg := query.RunConfig{Models: []string{"m→m"}, Prompts: []string{fmt.Sprintf("%s@%d", task, version)}, Case: fmt.Sprint("case-", n%7)}
				cfg.Fingerprint = fmt.Sprintf("fp-%s-%d", task, version)
				raw, err := json.Marshal(cfg)
				if err != nil {
					t.Fatal(err)
				}
				g.row.Fingerprint, g.row.Config = cfg.Fingerprint, string(raw)
				// 0–3 tool steps; one run in six raised a signal on its
				// last step's tool (two kinds), one in 8 of those two.
				toolNames := []string{"search", "write_file", "charge"}
				effects := []string{"read", "idempotent", "non_idempotent"}
				statuses := []string{"ok", "ok", "ok", "retryable", "failed"}
				for range rng.IntN(4) {
					i := rng.IntN(3)
					g.row.StepTools = append(g.row.StepTools, toolNames[i])
					g.row.StepEffects = append(g.row.StepEffects, effects[i])
					g.row.StepStatuses = append(g.row.StepStatuses, statuses[rng.IntN(len(statuses))])
				}
				if n := len(g.row.StepTools); n > 0 && rng.IntN(6) == 0 {
					sigs := []safety.Signal{{Kind: "unsafe_retry", Tool: g.row.StepTools[n-1], Reason: fmt.Sprint("retried ", n)}}
					if rng.IntN(8) == 0 {
						sigs = append(sigs, safety.Signal{Kind: "duplicate_side_effect", Tool: g.row.StepTools[0], Reason: "twice"})
					}
					for _, sg := range sigs {
						g.row.SignalKinds = append(g.row.SignalKinds, string(sg.Kind))
						g.row.SignalTools = append(g.row.SignalTools, sg.Tool)
					}
					js, err := json.Marshal(sigs)
					if err != nil {
						t.Fatal(err)
					}
					g.row.Signals = string(js)
				}
				switch g.verdict {
				case 1:
					g.row.Verdicts = []string{"pass:quality"}
				case -1:
					g.row.Verdicts = []string{"fail:quality"}
				}
				out = append(out, g)
			}
		}
	}
	rows := make([]schema.RunRow, len(out))
	for i := range out {
		rows[i] = out[i].row
	}
	if err := store.InsertRuns(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	markSettled(t, store)
	return out
}

// markSettled says the run table is complete through now: no run is live.
func markSettled(t *testing.T, store *schema.Store) {
	t.Helper()
	now := uint64(time.Now().UnixNano())
	if err := store.InsertRunMark(context.Background(), schema.RunMarkRow{Name: schema.RunMarkSettled, Value: now, Version: now}); err != nil {
		t.Fatal(err)
	}
}

// TestWindowReportsFromTheRunRollup: the tasks and caps reports of a
// window of many runs, read from the run rollup, agree with the same
// reports read run by run and with the figures worked out here from the
// runs written: every count and the runs named exactly, the percentiles
// within the sketch's 1%, the counts over a cap exact for the cap the
// report suggests and the passes over its budget but for those within 1%
// of it. A run re-settled or an outcome
// posted after the rollup makes its hour read run by run, at once.
func TestWindowReportsFromTheRunRollup(t *testing.T) {
	store := openStore(t)
	ctx := context.Background()
	// Within LiveLookback, so that a run of the window can be in flight.
	base := time.Now().UTC().Add(-40 * time.Hour).Truncate(time.Hour)
	runs := genRuns(t, store, base)
	job := rollup.NewRunRollup(store, rollup.RunRollupConfig{})
	stats, err := job.RefreshRange(ctx, base.Add(-2*time.Hour), base.Add(10*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if stats.HoursRecomputed != 9 {
		t.Fatalf("refresh: %+v, want the 9 hours with runs computed", stats)
	}
	if again, err := job.RefreshRange(ctx, base.Add(-2*time.Hour), base.Add(10*time.Hour)); err != nil || again.HoursRecomputed != 0 {
		t.Fatalf("second refresh: %+v %v, want nothing recomputed", again, err)
	}
	exact := query.NewReader(store, query.WithWindowExactRuns(1<<30))
	// The rollup's reader looks the run table up by key three keys at a
	// time (flagged runs, versions' configurations): in parts.
	sketch := query.NewReader(store, query.WithWindowExactRuns(0), query.WithKeyLookupChunk(3))
	since, until := base.Add(-20*time.Minute), base.Add(7*time.Hour+40*time.Minute)
	inWindow := func(g *genRun) bool {
		s := time.Unix(0, int64(g.row.StartNs))
		return !s.Before(since) && !s.After(until)
	}

	// The hours read from the rollup: the 7 whole ones; the partial first
	// and last hours are read run by run.
	used, rolled, streamed, err := query.WindowRollup(ctx, sketch, query.RunFilter{Project: "p", Since: since, Until: until}, false)
	if err != nil {
		t.Fatal(err)
	}
	wantStreamed := 0
	for i := range runs {
		s := time.Unix(0, int64(runs[i].row.StartNs))
		if inWindow(&runs[i]) && (s.Before(base) || !s.Before(base.Add(7*time.Hour))) {
			wantStreamed++
		}
	}
	if !used || rolled != 7 || streamed != wantStreamed {
		t.Fatalf("rollup used %v, %d hours, %d runs one by one; want 7 hours and %d runs", used, rolled, streamed, wantStreamed)
	}

	check := func(t *testing.T) {
		for _, f := range []query.TaskFilter{
			{By: "task"}, {By: "agent"}, {By: "task", Task: "code"}, {By: "task", Agent: "reviewer"}, {By: "agent", Task: "triage"},
		} {
			t.Run(fmt.Sprintf("tasks by %s task %q agent %q", f.By, f.Task, f.Agent), func(t *testing.T) {
				f.Project, f.Since, f.Until = "p", since, until
				want, err := exact.Tasks(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sketch.Tasks(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if want.Quantiles != query.QuantilesExact || got.Quantiles != query.QuantilesSketch {
					t.Fatalf("quantiles %q and %q", want.Quantiles, got.Quantiles)
				}
				checkTasks(t, f, runs, inWindow, want, got)
			})
		}
		for _, task := range []string{"", "triage"} {
			t.Run(fmt.Sprintf("versions task %q", task), func(t *testing.T) {
				f := query.VersionFilter{Project: "p", Task: task, Since: since, Until: until}
				want, err := exact.Versions(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sketch.Versions(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				checkVersions(t, f, runs, inWindow, want, got)
			})
		}
		for _, f := range []query.SignalFilter{{}, {By: "task"}, {By: "agent", Task: "code"}, {Agent: "reviewer", Tool: "charge"},
			{Kind: "duplicate_side_effect"}} {
			t.Run(fmt.Sprintf("signals by %q task %q agent %q tool %q kind %q", f.By, f.Task, f.Agent, f.Tool, f.Kind), func(t *testing.T) {
				f.Project, f.Since, f.Until = "p", since, until
				want, err := exact.Signals(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sketch.Signals(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				checkSignals(t, f, runs, inWindow, want, got)
			})
		}
		for _, f := range []query.CapsFilter{{}, {Task: "code"}, {Agent: "coder"}} {
			t.Run(fmt.Sprintf("caps task %q agent %q", f.Task, f.Agent), func(t *testing.T) {
				f.Project, f.Since, f.Until = "p", since, until
				want, err := exact.Caps(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sketch.Caps(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				checkCaps(t, f, runs, inWindow, want, got)
			})
		}
	}
	t.Run("rolled up", check)
	if t.Failed() {
		return
	}

	// A run of the third hour re-settled (a late span: more cost and a
	// failure), and an outcome posted failing a passed triage run of the
	// fifth: both hours are read run by run until the next refresh.
	third := slices.IndexFunc(runs, func(g genRun) bool {
		return time.Unix(0, int64(g.row.StartNs)).Truncate(time.Hour).Equal(base.Add(2*time.Hour)) && g.row.Task == "research" && !g.failed()
	})
	fifth := slices.IndexFunc(runs, func(g genRun) bool {
		return time.Unix(0, int64(g.row.StartNs)).Truncate(time.Hour).Equal(base.Add(4*time.Hour)) && g.verdict == 1
	})
	if third < 0 || fifth < 0 {
		t.Fatal("no runs to change")
	}
	runs[third].row.CostTotal += 3
	runs[third].row.Failed = 1
	runs[third].row.Version = 2
	if err := store.InsertRuns(ctx, []schema.RunRow{runs[third].row}); err != nil {
		t.Fatal(err)
	}
	r5 := runs[fifth].row
	if err := store.InsertOutcomes(ctx, []schema.Outcome{{Project: "p", TraceID: r5.TraceID, Name: "review", Source: "human",
		Passed: schema.VerdictFailed, RunStart: r5.Start, CreatedAt: time.Now().UTC().Truncate(time.Second), Version: 5}}); err != nil {
		t.Fatal(err)
	}
	runs[fifth].verdict = -1 // a failed verdict fails the run
	markSettled(t, store)
	_, rolled, _, err = query.WindowRollup(ctx, sketch, query.RunFilter{Project: "p", Since: since, Until: until}, false)
	if err != nil {
		t.Fatal(err)
	}
	// The outcome's run_start hour and the one before it change state.
	if rolled != 4 {
		t.Fatalf("after the changes %d hours from the rollup, want 4 (the third, fourth and fifth read run by run)", rolled)
	}
	t.Run("changed, before the refresh", check)
	stats, err = job.RefreshRange(ctx, base.Add(-2*time.Hour), base.Add(10*time.Hour))
	if err != nil || stats.HoursRecomputed != 3 {
		t.Fatalf("refresh after the changes: %+v %v, want 3 hours recomputed", stats, err)
	}
	t.Run("changed, refreshed", check)
	if t.Failed() {
		return
	}

	// Two runs in flight (a span of each written after the settled mark),
	// read from their spans: a new one in the sixth hour, which the
	// rollup never held (the hours stay rolled up), and a settled run of
	// the seventh sent again (a late span at its start, its only span
	// now: the live run is that span), whose row the rollup added up: the
	// seventh hour is read run by run, without that row.
	seventh := slices.IndexFunc(runs, func(g genRun) bool {
		return time.Unix(0, int64(g.row.StartNs)).Truncate(time.Hour).Equal(base.Add(6*time.Hour)) && g.row.Task == "code"
	})
	if seventh < 0 {
		t.Fatal("no run to send again")
	}
	spanOf := func(traceID, name string, startNs uint64) schema.Span {
		at := time.Unix(0, int64(startNs)).UTC()
		return schema.Span{Project: "p", TraceID: traceID, SpanID: strings.Repeat("f", 16), Start: at.Truncate(time.Second),
			StartNs: startNs, EndNs: startNs + uint64(3*time.Second), DurationNs: uint64(3 * time.Second),
			Name: name, Kind: "internal", Status: "error", SpanType: schema.TypeAgent}
	}
	fresh := spanOf(strings.Repeat("f", 32), "research", uint64(base.Add(5*time.Hour+10*time.Minute).UnixNano()))
	again := spanOf(runs[seventh].row.TraceID, "code", runs[seventh].row.StartNs)
	insert(t, store, []schema.Span{fresh, again}, uint64(time.Now().UnixNano())+1)
	_, rolled, _, err = query.WindowRollup(ctx, sketch, query.RunFilter{Project: "p", Since: since, Until: until}, false)
	if err != nil || rolled != 6 {
		t.Fatalf("with runs in flight %d hours from the rollup (%v), want 6", rolled, err)
	}
	// Their configurations are empty: the fingerprint is the first 12 hex
	// digits of the SHA-256 of the empty configuration's JSON. Each is one
	// failed agent span of 3 s.
	empty, err := json.Marshal(query.RunConfig{Models: []string{}, AgentVersions: []string{}, Prompts: []string{}, Tools: []string{},
		Instructions: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(empty)
	liveRow := func(sp schema.Span) schema.RunRow {
		return schema.RunRow{TraceID: sp.TraceID, StartNs: sp.StartNs, EndNs: sp.EndNs, Task: sp.Name, Failed: 1,
			ActiveNs: uint64(3 * time.Second), Fingerprint: hex.EncodeToString(sum[:])[:12]}
	}
	runs = append(runs, genRun{row: liveRow(fresh)})
	runs[seventh] = genRun{row: liveRow(again)}
	t.Run("a run in flight", check)
}

// nearly reports whether got is within rel of want.
func nearly(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)+1e-9
}

func checkSpread(t *testing.T, what string, got, want consistency.Spread) {
	t.Helper()
	if got.N != want.N || got.Max != want.Max || !nearly(got.Mean, want.Mean, 1e-9) || !nearly(got.CV, want.CV, 1e-6) ||
		!nearly(got.P50, want.P50, consistency.SketchAccuracy) || !nearly(got.P99, want.P99, consistency.SketchAccuracy) {
		t.Errorf("%s: %+v, want %+v (percentiles within 1%%)", what, got, want)
	}
}

// groupsOf are the report groups g counts in.
func groupsOf(g *genRun, by string) []string {
	if by == "agent" {
		return g.row.Agents
	}
	return []string{g.row.Task}
}

func checkTasks(t *testing.T, f query.TaskFilter, runs []genRun, inWindow func(*genRun) bool, want, got *query.TasksReport) {
	t.Helper()
	// By hand: the runs of each group, graded.
	type tally struct{ runs, graded, passed, failed int }
	hand := map[string]*tally{}
	var selected []*genRun
	for i := range runs {
		g := &runs[i]
		if !inWindow(g) || f.Task != "" && g.row.Task != f.Task || f.Agent != "" && !slices.Contains(g.row.Agents, f.Agent) {
			continue
		}
		selected = append(selected, g)
	}
	if got.RunsRead != len(selected) || want.RunsRead != len(selected) {
		t.Errorf("runs read %d (run by run %d), want %d", got.RunsRead, want.RunsRead, len(selected))
	}
	fromOutcomes := map[string]bool{}
	for _, g := range selected {
		for _, k := range groupsOf(g, f.By) {
			if g.verdict != 0 {
				fromOutcomes[k] = true
			}
		}
	}
	for _, g := range selected {
		for _, k := range groupsOf(g, f.By) {
			x := hand[k]
			if x == nil {
				x = &tally{}
				hand[k] = x
			}
			x.runs++
			switch {
			case fromOutcomes[k] && g.verdict == 0:
			case fromOutcomes[k] && g.verdict > 0, !fromOutcomes[k] && !g.failed():
				x.graded++
				x.passed++
			default:
				x.graded++
				x.failed++
			}
		}
	}
	if len(got.Tasks) != len(hand) || len(want.Tasks) != len(hand) {
		t.Fatalf("%d groups (run by run %d), want %d", len(got.Tasks), len(want.Tasks), len(hand))
	}
	for i := range got.Tasks {
		g, w := got.Tasks[i], want.Tasks[i]
		x := hand[g.Key]
		if g.Key != w.Key || x == nil || g.Runs != x.runs || g.Graded != x.graded || g.Passed != x.passed || g.Failed != x.failed ||
			g.Ungraded != x.runs-x.graded || w.Runs != g.Runs || w.Passed != g.Passed || g.VerdictsFrom != w.VerdictsFrom {
			t.Errorf("group %d: %s %d runs %d graded %d passed %d failed (%s); run by run %s %d/%d/%d/%d; by hand %+v",
				i, g.Key, g.Runs, g.Graded, g.Passed, g.Failed, g.VerdictsFrom, w.Key, w.Runs, w.Graded, w.Passed, w.Failed, x)
			continue
		}
		for k, v := range w.PassAtK {
			if !nearly(g.PassAtK[k], v, 1e-12) || !nearly(g.PassHatK[k], w.PassHatK[k], 1e-12) {
				t.Errorf("%s pass@%s %v ^ %v, want %v ^ %v", g.Key, k, g.PassAtK[k], g.PassHatK[k], v, w.PassHatK[k])
			}
		}
		checkSpread(t, g.Key+" steps", g.Steps, w.Steps)
		checkSpread(t, g.Key+" tokens", g.Tokens, w.Tokens)
		checkSpread(t, g.Key+" cost", g.CostUSD, w.CostUSD)
		checkSpread(t, g.Key+" duration", g.DurationMs, w.DurationMs)
		if !nearly(*g.CostPerSuccess, *w.CostPerSuccess, 1e-9) || !nearly(g.BudgetTokens, w.BudgetTokens, consistency.SketchAccuracy) {
			t.Errorf("%s cost per success %v budget %v, want %v %v", g.Key, *g.CostPerSuccess, g.BudgetTokens, *w.CostPerSuccess, w.BudgetTokens)
		}
		// The passes over the budget the report set, counted here: from
		// the sketch, those within 1% of it may count on either side.
		lo, hi := 0, 0
		for _, r := range selected {
			passes := fromOutcomes[g.Key] && r.verdict > 0 || !fromOutcomes[g.Key] && !r.failed()
			if !slices.Contains(groupsOf(r, f.By), g.Key) || !passes {
				continue
			}
			if r.tokens() > g.BudgetTokens/(1-consistency.SketchAccuracy) {
				lo++
			}
			if r.tokens() > g.BudgetTokens/(1+consistency.SketchAccuracy) {
				hi++
			}
		}
		if g.OverBudgetPasses < lo || g.OverBudgetPasses > hi || hi == 0 && g.Key == "code" {
			t.Errorf("%s: %d passes over the budget %v, want %d to %d (and some for code)", g.Key, g.OverBudgetPasses, g.BudgetTokens, lo, hi)
		}
		if !slices.Equal(g.FailedRuns, w.FailedRuns) || len(g.FailedRuns) != 5 {
			t.Errorf("%s failed runs %v, want %v", g.Key, g.FailedRuns, w.FailedRuns)
		}
	}
}

func checkCaps(t *testing.T, f query.CapsFilter, runs []genRun, inWindow func(*genRun) bool, want, got *query.CapsReport) {
	t.Helper()
	if got.Quantiles != query.QuantilesSketch || got.RunsRead != want.RunsRead || len(got.Tasks) != len(want.Tasks) || len(got.Tasks) == 0 {
		t.Fatalf("%s, %d runs, %d tasks; run by run %d runs, %d tasks", got.Quantiles, got.RunsRead, len(got.Tasks), want.RunsRead, len(want.Tasks))
	}
	for i := range got.Tasks {
		g, w := got.Tasks[i], want.Tasks[i]
		if g.Task != w.Task || g.Runs != w.Runs || g.Successful != w.Successful || g.RunsWaiting != w.RunsWaiting || g.FewRuns != w.FewRuns ||
			g.VerdictsFrom != w.VerdictsFrom {
			t.Errorf("%s: %d runs %d successful %d waiting; want %s %d %d %d", g.Task, g.Runs, g.Successful, g.RunsWaiting, w.Task, w.Runs, w.Successful, w.RunsWaiting)
			continue
		}
		checkSpread(t, g.Task+" wait", g.WaitMs, w.WaitMs)
		gf := []query.CapFigure{g.Iterations, g.ToolCalls, g.Tokens, g.CostUSD, g.ActiveMs}
		wf := []query.CapFigure{w.Iterations, w.ToolCalls, w.Tokens, w.CostUSD, w.ActiveMs}
		for m := range gf {
			if !nearly(gf[m].P50, wf[m].P50, consistency.SketchAccuracy) || !nearly(gf[m].P99, wf[m].P99, consistency.SketchAccuracy) {
				t.Errorf("%s measure %d: p50 %v p99 %v, want %v %v", g.Task, m, gf[m].P50, gf[m].P99, wf[m].P50, wf[m].P99)
			}
		}
		// The runs over the caps the report suggests, counted here.
		var exceeded [5]int
		var overRuns []*genRun
		for j := range runs {
			r := &runs[j]
			if !inWindow(r) || r.row.Task != g.Task || f.Agent != "" && !slices.Contains(r.row.Agents, f.Agent) {
				continue
			}
			v := [5]float64{float64(r.row.LLMCalls), float64(r.row.ToolCalls), r.tokens(), r.row.CostTotal, float64(r.row.ActiveNs) / 1e6}
			over := false
			for m := range v {
				if gf[m].Suggested > 0 && v[m] > gf[m].Suggested {
					exceeded[m]++
					over = true
				}
			}
			if over {
				overRuns = append(overRuns, r)
			}
		}
		slices.SortFunc(overRuns, func(a, b *genRun) int {
			if a.row.StartNs != b.row.StartNs {
				return -compareU(a.row.StartNs, b.row.StartNs)
			}
			return -strings.Compare(a.row.TraceID, b.row.TraceID)
		})
		var names []string
		for _, r := range overRuns[:min(5, len(overRuns))] {
			names = append(names, r.row.TraceID)
		}
		for m := range gf {
			if gf[m].Exceeded != exceeded[m] {
				t.Errorf("%s measure %d: %d runs over %v, want %d", g.Task, m, gf[m].Exceeded, gf[m].Suggested, exceeded[m])
			}
		}
		if g.Exceeded != len(overRuns) || !slices.Equal(g.ExceededRuns, names) || g.Task == "code" && len(overRuns) == 0 {
			t.Errorf("%s: %d runs over a cap %v, want %d %v", g.Task, g.Exceeded, g.ExceededRuns, len(overRuns), names)
		}
	}
}

func compareU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func checkVersions(t *testing.T, f query.VersionFilter, runs []genRun, inWindow func(*genRun) bool, want, got []query.TaskVersions) {
	t.Helper()
	// By hand: each version's runs, first and last seen.
	type seen struct {
		runs        int
		first, last uint64
	}
	hand := map[string]*seen{}
	for i := range runs {
		g := &runs[i]
		if !inWindow(g) || f.Task != "" && g.row.Task != f.Task {
			continue
		}
		k := g.row.Task + "/" + g.row.Fingerprint
		x := hand[k]
		if x == nil {
			x = &seen{first: g.row.StartNs, last: g.row.StartNs}
			hand[k] = x
		}
		x.runs++
		x.first, x.last = min(x.first, g.row.StartNs), max(x.last, g.row.StartNs)
	}
	n := 0
	for _, tv := range got {
		n += len(tv.Versions)
	}
	if len(got) != len(want) || n != len(hand) {
		t.Fatalf("%d tasks, %d versions; run by run %d tasks, by hand %d versions", len(got), n, len(want), len(hand))
	}
	for i := range got {
		if got[i].Task != want[i].Task || len(got[i].Versions) != len(want[i].Versions) {
			t.Fatalf("task %d: %s with %d versions, want %s with %d", i, got[i].Task, len(got[i].Versions), want[i].Task, len(want[i].Versions))
		}
		for j := range got[i].Versions {
			g, w := got[i].Versions[j], want[i].Versions[j]
			x := hand[got[i].Task+"/"+g.Fingerprint]
			gc, _ := json.Marshal(g.Config)
			wc, _ := json.Marshal(w.Config)
			if x == nil || g.Fingerprint != w.Fingerprint || g.Runs != x.runs || w.Runs != x.runs || g.Graded != w.Graded || g.Passed != w.Passed ||
				uint64(g.FirstSeen.UnixNano()) != x.first || uint64(g.LastSeen.UnixNano()) != x.last || !g.FirstSeen.Equal(w.FirstSeen) ||
				!g.LastSeen.Equal(w.LastSeen) || string(gc) != string(wc) || !nearly(g.CostPerRun, w.CostPerRun, 1e-9) ||
				!nearly(g.P95Ms, w.P95Ms, consistency.SketchAccuracy) || (g.PassRate == nil) != (w.PassRate == nil) ||
				g.PassRate != nil && !nearly(*g.PassRate, *w.PassRate, 1e-12) {
				t.Errorf("%s version %s: %+v\nwant %+v (by hand %+v)", got[i].Task, g.Fingerprint, g, w, x)
			}
		}
	}
}

func checkSignals(t *testing.T, f query.SignalFilter, runs []genRun, inWindow func(*genRun) bool, want, got *query.SignalsReport) {
	t.Helper()
	// By hand: the runs read, the signals raised and the steps.
	runsRead, signals, steps := 0, 0, 0
	for i := range runs {
		g := &runs[i]
		if !inWindow(g) || f.Task != "" && g.row.Task != f.Task || f.Agent != "" && !slices.Contains(g.row.Agents, f.Agent) {
			continue
		}
		runsRead++
		for j, k := range g.row.SignalKinds {
			if (f.Kind == "" || string(f.Kind) == k) && (f.Tool == "" || f.Tool == g.row.SignalTools[j]) {
				signals++
			}
		}
		for _, tool := range g.row.StepTools {
			if f.Tool == "" || tool == f.Tool {
				steps++
			}
		}
	}
	gotSteps := 0
	for _, tr := range got.Tools {
		gotSteps += tr.Steps
	}
	if got.RunsRead != runsRead || got.Signals != signals || gotSteps != steps || signals == 0 {
		t.Errorf("%d runs, %d signals, %d steps; by hand %d, %d, %d (and some signals)", got.RunsRead, got.Signals, gotSteps, runsRead, signals, steps)
	}
	// The rest as read run by run, whole.
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("from the rollup:\n%s\nrun by run:\n%s", gj, wj)
	}
}

package query_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// chatRun builds one run: an agent span named agent and n chat calls of
// claude-sonnet-4-5 (minimum cacheable prefix 1024 tokens in the catalog)
// under it, each with input tokens and cache reads as given. The calls carry
// no agent name of their own: they belong to the agent by ancestry.
func chatRun(traceN int, agent string, at time.Time, n int, input, cacheRead uint64) []schema.Span {
	trace := fmt.Sprintf("%032x", traceN)
	root := schema.Span{Project: "cache", TraceID: trace, SpanID: fmt.Sprintf("%016x", traceN*100), Name: "invoke_agent " + agent,
		SpanType: schema.TypeAgent, AgentName: agent, Start: at, StartNs: uint64(at.UnixNano()),
		EndNs: uint64(at.Add(time.Minute).UnixNano()), Status: "ok"}
	spans := []schema.Span{root}
	for i := 1; i <= n; i++ {
		st := at.Add(time.Duration(i) * time.Second)
		spans = append(spans, schema.Span{Project: "cache", TraceID: trace, SpanID: fmt.Sprintf("%016x", traceN*100+i),
			ParentSpanID: root.SpanID, Name: "chat", SpanType: schema.TypeInference, Provider: "anthropic",
			Model: "claude-sonnet-4-5", Start: st.Truncate(time.Second), StartNs: uint64(st.UnixNano()),
			EndNs: uint64(st.Add(500 * time.Millisecond).UnixNano()), Status: "ok",
			InputTokens: input, CacheReadTokens: cacheRead, OutputTokens: 100, UsageMode: schema.UsageInclusive})
	}
	return spans
}

func TestCacheHealth(t *testing.T) {
	store := openStore(t)
	at := mustTime(t, "2026-01-12T08:00:00Z")
	var spans []schema.Span
	// looper: 2 runs × 3 calls of 5000 input tokens, never a cache read.
	spans = append(spans, chatRun(1, "looper", at, 3, 5000, 0)...)
	spans = append(spans, chatRun(2, "looper", at.Add(time.Minute), 3, 5000, 0)...)
	// cached: 6 calls of 5000 input of which 4000 read from the cache.
	spans = append(spans, chatRun(3, "cached", at, 6, 5000, 4000)...)
	// tiny: 6 calls of 300 input, below the 1024-token minimum.
	spans = append(spans, chatRun(4, "tiny", at, 6, 300, 0)...)
	// rare: 2 eligible calls without reads: too few to judge (< 5).
	spans = append(spans, chatRun(5, "rare", at, 1, 5000, 0)...)
	spans = append(spans, chatRun(6, "rare", at, 1, 5000, 0)...)
	// oneshot: 22 runs (traces 100…121, 10 s apart) of one eligible call
	// each, never a cache read: never_hit as a group (22 ≥ 5), although no
	// run has the 2 eligible calls to be judged on its own.
	for i := range 22 {
		spans = append(spans, chatRun(100+i, "oneshot", at.Add(time.Duration(i)*10*time.Second), 1, 5000, 0)...)
	}
	// named: the calls name their agent themselves (read in ClickHouse, no
	// attribution needed): 2 runs × 3 calls of 5000 input reading 1000 and
	// 2000 tokens each.
	for i, read := range []uint64{1000, 2000} {
		run := chatRun(200+i, "named", at, 3, 5000, read)
		for j := range run {
			run[j].AgentName = "named"
		}
		spans = append(spans, run...)
	}
	insert(t, store, spans, 1)
	insert(t, store, spans, 2) // delivered twice: counted once

	cr := query.NewCostReader(query.NewReader(store), builtin(t))
	rep, err := cr.Cache(context.Background(), query.CacheFilter{Project: "cache", Since: at.Add(-time.Hour), Until: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Thresholds != (attribution.CacheThresholds{MinEligibleCalls: 5, MinEligibleRunCalls: 2, DefaultMinPrefixTokens: 1024}) {
		t.Errorf("thresholds %+v, want the defaults 5, 2, 1024", rep.Thresholds)
	}
	type want struct {
		calls, eligible, cacheRead uint64
		ratio                      float64
		verdict                    string
		neverHitRuns               int
	}
	wants := map[string]want{
		"looper": {6, 6, 0, 0, attribution.VerdictNeverHit, 2},
		// 6×4000 / 6×5000 = 0.8
		"cached": {6, 6, 24000, 0.8, attribution.VerdictHealthy, 0},
		"tiny":   {6, 0, 0, 0, attribution.VerdictBelowMinPrefix, 0},
		// each rare run has 1 eligible call (< 2): not never_hit either.
		"rare":    {2, 2, 0, 0, attribution.VerdictInsufficientData, 0},
		"oneshot": {22, 22, 0, 0, attribution.VerdictNeverHit, 0},
		// (3×1000 + 3×2000) / 6×5000 = 0.3
		"named": {6, 6, 9000, 0.3, attribution.VerdictHealthy, 0},
	}
	if len(rep.Groups) != len(wants) {
		t.Fatalf("%d groups, want %d: %+v", len(rep.Groups), len(wants), rep.Groups)
	}
	// never_hit first, by eligible calls: oneshot (22), looper (6).
	if rep.Groups[0].Agent != "oneshot" || rep.Groups[1].Agent != "looper" {
		t.Errorf("first groups %q, %q, want the never_hit ones first", rep.Groups[0].Agent, rep.Groups[1].Agent)
	}
	// Example runs, most recent call first: looper's run 2 (last call at
	// +1m3s) then run 1 (+3s); oneshot's 20 most recent of its 22 runs,
	// trace 121 (+211 s) down to trace 102 (+21 s). Other verdicts list none.
	wantExamples := map[string][]string{"looper": {fmt.Sprintf("%032x", 2), fmt.Sprintf("%032x", 1)}}
	for i := 121; i >= 102; i-- {
		wantExamples["oneshot"] = append(wantExamples["oneshot"], fmt.Sprintf("%032x", i))
	}
	for _, g := range rep.Groups {
		if want := wantExamples[g.Agent]; !reflect.DeepEqual(g.ExampleRunIDs, append([]string{}, want...)) {
			t.Errorf("group %s example runs %v, want %v", g.Agent, g.ExampleRunIDs, want)
		}
	}
	for _, g := range rep.Groups {
		w := wants[g.Agent]
		if g.Model != "claude-sonnet-4-5" || g.MinPrefixTokens != 1024 || g.PrefixSource != attribution.PrefixFromCatalog ||
			g.Calls != w.calls || g.EligibleCalls != w.eligible || g.CacheReadTokens != w.cacheRead ||
			!near(g.HitRatio, w.ratio) || g.Verdict != w.verdict || g.NeverHitRuns != w.neverHitRuns {
			t.Errorf("group %s: %+v, want %+v", g.Agent, g, w)
		}
	}
	wantRuns := map[string]bool{fmt.Sprintf("%032x", 1): true, fmt.Sprintf("%032x", 2): true}
	if len(rep.NeverHitRuns) != 2 {
		t.Fatalf("never_hit runs %+v, want looper's two", rep.NeverHitRuns)
	}
	for _, r := range rep.NeverHitRuns {
		// No span carries task.name: the task is the root span's name.
		if !wantRuns[r.TraceID] || r.EligibleCalls != 3 || len(r.Agents) != 1 || r.Agents[0] != "looper" ||
			r.Task != "invoke_agent looper" {
			t.Errorf("never_hit run %+v, want a looper run (task invoke_agent looper) with 3 eligible calls", r)
		}
	}

	// Filters and thresholds: with MinEligibleCalls 7, looper's 6 calls are
	// not enough.
	rep, err = cr.Cache(context.Background(), query.CacheFilter{Project: "cache", Agent: "looper",
		Since: at.Add(-time.Hour), Until: at.Add(time.Hour), Thresholds: attribution.CacheThresholds{MinEligibleCalls: 7}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Groups) != 1 || rep.Groups[0].Verdict != attribution.VerdictInsufficientData || rep.Thresholds.MinEligibleCalls != 7 {
		t.Errorf("looper with min 7 eligible calls: %+v", rep)
	}
}

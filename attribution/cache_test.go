package attribution

import "testing"

func TestCacheVerdicts(t *testing.T) {
	const minEligible = 5
	for _, c := range []struct {
		name      string
		stats     CacheStats
		cacheable bool
		want      string
		ratio     float64
	}{
		{"eligible calls read from the cache", CacheStats{Calls: 6, EligibleCalls: 6, CacheReadTokens: 800,
			EligibleInputTokens: 1000, EligibleCacheReadTokens: 800}, true, VerdictHealthy, 0.8},
		{"enough eligible calls, no cache read", CacheStats{Calls: 6, EligibleCalls: 5, EligibleInputTokens: 6000},
			true, VerdictNeverHit, 0},
		{"no call reached the minimum prefix", CacheStats{Calls: 6}, true, VerdictBelowMinPrefix, 0},
		{"too few eligible calls to judge", CacheStats{Calls: 6, EligibleCalls: 4, EligibleInputTokens: 4000},
			true, VerdictInsufficientData, 0},
		{"no calls", CacheStats{}, true, VerdictInsufficientData, 0},
		{"a model without prompt caching", CacheStats{Calls: 6, EligibleCalls: 6}, false, VerdictInsufficientData, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.stats
			s.Judge(minEligible, c.cacheable)
			if s.Verdict != c.want || s.HitRatio != c.ratio {
				t.Fatalf("verdict %q, hit ratio %v; want %q, %v", s.Verdict, s.HitRatio, c.want, c.ratio)
			}
		})
	}
}

func TestCacheStatsAddCall(t *testing.T) {
	var s CacheStats
	s.AddCall(Usage{Input: 2000, CacheRead: 1500, CacheWrite: 100}, true)
	s.AddCall(Usage{Input: 300}, false)
	want := CacheStats{Calls: 2, EligibleCalls: 1, InputTokens: 2300, CacheReadTokens: 1500, CacheWriteTokens: 100,
		EligibleInputTokens: 2000, EligibleCacheReadTokens: 1500}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	if p := (Prefix{Tokens: 1024, Cacheable: true}); p.EligibleFrom() != 1024 {
		t.Errorf("EligibleFrom = %d, want 1024", p.EligibleFrom())
	}
	if p := (Prefix{Source: PrefixNoCache}); 1<<40 >= p.EligibleFrom() {
		t.Errorf("a model without prompt caching: EligibleFrom = %d, want no call eligible", p.EligibleFrom())
	}
}

func TestJudgeCacheGroupsWorstFirst(t *testing.T) {
	prefix := func(provider, model string) Prefix {
		return Prefix{Tokens: 1024, Source: PrefixFromCatalog, Cacheable: true}
	}
	rows := []CacheCalls{
		{TraceID: "r1", Agent: "looper", Provider: "openai", Model: "m", FirstNs: 1, LastNs: 2,
			Stats: CacheStats{Calls: 3, EligibleCalls: 3, InputTokens: 6000, EligibleInputTokens: 6000}},
		{TraceID: "r2", Agent: "looper", Provider: "openai", Model: "m", FirstNs: 3, LastNs: 4,
			Stats: CacheStats{Calls: 3, EligibleCalls: 3, InputTokens: 6000, EligibleInputTokens: 6000}},
		{TraceID: "r3", Agent: "cached", Provider: "openai", Model: "m", FirstNs: 5, LastNs: 6,
			Stats: CacheStats{Calls: 9, EligibleCalls: 9, InputTokens: 9000, CacheReadTokens: 4500,
				EligibleInputTokens: 9000, EligibleCacheReadTokens: 4500}},
	}
	groups, runs, truncated := JudgeCache(rows, prefix, CacheThresholds{}.WithDefaults(), 1)
	if len(groups) != 2 || groups[0].Agent != "looper" || groups[0].Verdict != VerdictNeverHit ||
		groups[0].NeverHitRuns != 2 || groups[0].RunsWithoutCacheRead != 2 || len(groups[0].ExampleRunIDs) != 2 || groups[0].ExampleRunIDs[0] != "r2" ||
		groups[1].Verdict != VerdictHealthy || len(groups[1].ExampleRunIDs) != 0 {
		t.Fatalf("groups %+v", groups)
	}
	if len(runs) != 1 || !truncated || runs[0].TraceID != "r1" || runs[0].Verdict != VerdictNeverHit {
		t.Fatalf("runs %+v (truncated %v), want r1 of two never_hit runs", runs, truncated)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/query"
)

func TestPrintCacheListsNeverHitExamples(t *testing.T) {
	at := time.Date(2026, 1, 12, 8, 0, 0, 0, time.UTC)
	rep := query.CacheReport{Since: at, Until: at.Add(time.Hour),
		Thresholds: attribution.CacheThresholds{MinEligibleCalls: 5, MinEligibleRunCalls: 2, DefaultMinPrefixTokens: 1024},
		Groups: []attribution.CacheGroup{
			{Agent: "summarizer", Model: "gpt-4o-mini", MinPrefixTokens: 1024, PrefixSource: attribution.PrefixFromCatalog,
				CacheStats:    attribution.CacheStats{Calls: 6, EligibleCalls: 6, Verdict: attribution.VerdictNeverHit},
				ExampleRunIDs: []string{"trace-b", "trace-a"}, RunsWithoutCacheRead: 7},
			{Agent: "researcher", Model: "claude", MinPrefixTokens: 1024, PrefixSource: attribution.PrefixFromCatalog,
				CacheStats: attribution.CacheStats{Calls: 6, EligibleCalls: 6, CacheReadTokens: 100, Verdict: attribution.VerdictHealthy}},
		}}
	var out bytes.Buffer
	printCache(&out, rep)
	got := out.String()
	// The column and the list count the same runs (the column said 0 while
	// the list showed runs: it counted runs judged never_hit alone).
	want := "summarizer on gpt-4o-mini never read the cache; the latest 2 of its 7 runs with cacheable calls and no cache read (open with `tally run <trace id>`):\n  trace-b\n  trace-a\n"
	if !strings.Contains(got, want) {
		t.Errorf("output\n%s\nlacks\n%s", got, want)
	}
	if !strings.Contains(got, "never_hit  7") {
		t.Errorf("the summarizer row does not count its 7 runs without cache read:\n%s", got)
	}
	if strings.Contains(got, "researcher on claude never") {
		t.Errorf("a healthy group lists runs:\n%s", got)
	}
}

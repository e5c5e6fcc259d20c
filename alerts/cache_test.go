package alerts_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tallyhq/tally/alerts"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

// The never-caching agent of the demo, through the real cache-health query.
func TestCacheReadZeroFromCacheReport(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	T := time.Date(2026, 11, 6, 8, 0, 0, 0, time.UTC)
	var rows []schema.Span
	// summarizer: 12 calls of 4000 input tokens (above gpt-4o-mini's minimum
	// cacheable prefix), zero cache reads, one call per run. researcher:
	// 12 calls that read 3000 tokens from the cache each.
	for i := range 12 {
		for _, a := range []struct {
			agent string
			read  uint64
		}{{"summarizer", 0}, {"researcher", 3000}} {
			s := toolSpan("", fmt.Sprintf("%s%d", a.agent, i), T.Add(-30*time.Minute+time.Duration(i)*time.Minute), time.Second)
			s.SpanType, s.AgentName, s.Provider, s.Model = schema.TypeInference, a.agent, "openai", "gpt-4o-mini"
			s.UsageMode, s.InputTokens, s.CacheReadTokens, s.OutputTokens = schema.UsageInclusive, 4000, a.read, 100
			rows = append(rows, s)
		}
	}
	if err := store.InsertSpans(ctx, rows); err != nil {
		t.Fatal(err)
	}
	catalog, err := pricing.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cache := alerts.CacheFromReports(query.NewCostReader(query.NewReader(store), catalog))
	ev := startEvaluator(t, alerts.Config{
		Rules:  mustRules(t, "rules:\n  - {name: CacheMiss, kind: cache_read_zero, min_samples: 10}\n"),
		Source: query.NewReader(store), Cache: cache, Now: func() time.Time { return T },
	})
	evaluate(t, ev)
	got := ev.Alerts("p")
	if len(got) != 1 {
		t.Fatalf("alerts: %+v", got)
	}
	a := got[0]
	// 12 eligible calls ≥ 10, 0 cache-read tokens.
	if a.State != alerts.StateFiring || a.Labels["agent"] != "summarizer" || a.Labels["model"] != "gpt-4o-mini" ||
		a.Samples != 12 || a.Value != 0 {
		t.Errorf("alert %+v", a)
	}
	if want := "agent summarizer on model gpt-4o-mini read 0 tokens from the prompt cache (12 cacheable calls in 1h, verdict never_hit)"; a.Annotations["summary"] != want {
		t.Errorf("summary %q, want %q", a.Annotations["summary"], want)
	}
	// One eligible call per run is too few to judge a run on its own (< 2),
	// yet the alert names the group's runs to open: the 5 most recent of
	// the 12, summarizer11 (T−19m) back to summarizer7 (T−23m).
	var want []string
	for i := 11; i >= 7; i-- {
		want = append(want, fmt.Sprintf("%032s", fmt.Sprintf("summarizer%d", i)))
	}
	if !reflect.DeepEqual(a.ExampleRunIDs, want) {
		t.Errorf("example runs %v, want %v", a.ExampleRunIDs, want)
	}
}

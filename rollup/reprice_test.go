package rollup_test

import (
	"context"
	"testing"
	"time"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/internal/goldentest"
	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/rollup"
	"github.com/tallyhq/tally/schema"
)

func TestRepriceAfterOverride(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	insert(t, store, loadCorpus(t, "../query/testdata/golden.json", "golden", builtin(t)), 1)
	since, until := mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z")
	job := rollup.New(store, rollup.Config{})
	if _, err := job.RefreshRange(ctx, since, until); err != nil {
		t.Fatal(err)
	}

	// A negotiated gpt-4o price, a price for the unknown acme-large-2, and
	// one for acme-mini, whose spans carry a client cost that must win.
	catalog := builtin(t).WithOverrides([]pricing.Entry{
		{Provider: "openai", Model: "gpt-4o", Price: pricing.Price{Input: 5, CacheRead: 2, CacheWrite: 5, Output: 20}},
		{Provider: "acme", Model: "acme-large-2", Price: pricing.Price{Input: 1, CacheRead: 1, CacheWrite: 1, Output: 2}},
		{Provider: "acme", Model: "acme-mini", Price: pricing.Price{Input: 100, CacheRead: 100, CacheWrite: 100, Output: 100}},
	})
	const (
		// gpt-4o span: 200 uncached + 1000 cache read input, 300 output.
		// (200×5 + 1000×2 + 300×20)/1e6 = (1000 + 2000 + 6000)/1e6
		newGPT4o = 0.009
		// acme-large-2: (100×1 + 50×2)/1e6 = 200/1e6
		newAcme = 0.0002
	)
	res, err := rollup.Reprice(ctx, store, ingest.Options{Pricer: catalog}, rollup.RepriceFilter{Since: since, Until: until}, job)
	if err != nil {
		t.Fatal(err)
	}
	// 15 spans in range; changed: the gpt-4o span and acme-large-2 (was
	// unpriced); the client-cost span is left alone.
	if res.Scanned != 15 || res.Changed != 2 || res.ClientCost != 1 || res.Rollup.HoursRecomputed == 0 {
		t.Errorf("first reprice %+v, want 15 scanned, 2 changed, 1 client cost, rollup hours recomputed", res)
	}
	r := query.NewReader(store)
	check := func(label string) {
		t.Helper()
		want := map[string]struct {
			source string
			total  float64
		}{
			"0000000000000102": {schema.CostCatalog, newGPT4o},
			"0000000000000104": {schema.CostCatalog, goldentest.CostClaudeAdditive},
			"0000000000000402": {schema.CostCatalog, newAcme},
			"0000000000000403": {schema.CostClient, goldentest.CostClient},
		}
		for _, trace := range []string{"00000000000000000000000000000001", "00000000000000000000000000000004"} {
			spans, err := r.Spans(ctx, "golden", trace)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range spans {
				if w, ok := want[s.SpanID]; ok && (s.CostSource != w.source || !near(s.CostTotal, w.total)) {
					t.Errorf("%s: span %s cost %v (%s), want %v (%s)", label, s.SpanID, s.CostTotal, s.CostSource, w.total, w.source)
				}
			}
		}
		// The rolled-up figures follow.
		rep, err := r.Costs(ctx, query.CostFilter{Project: "golden", By: query.ByAgent, Since: since, Until: until})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Freshness.RolledUpHours != 24 {
			t.Errorf("%s: %d rolled-up hours, want 24", label, rep.Freshness.RolledUpHours)
		}
		goldentest.CheckGroups(t, label, rep, map[string]goldentest.GroupWant{
			"planner": {Spans: 5, LLM: 2, ToolCalls: 2, Retries: 1, Errors: 1, Input: 3800, CacheRead: 3000,
				CacheWrite: 500, Output: 700, Cost: newGPT4o + goldentest.CostClaudeAdditive, Tax: goldentest.CostClaudeAdditive},
			"experimenter": {Spans: 4, LLM: 3, Input: 2110, Output: 155, Cost: newAcme + goldentest.CostClient + goldentest.CostBedrockHaiku, Client: 1},
		}, false)
		if len(rep.Unmatched) != 0 {
			t.Errorf("%s: unmatched %+v, want none after pricing acme-large-2", label, rep.Unmatched)
		}
	}
	check("after one reprice")

	res, err = rollup.Reprice(ctx, store, ingest.Options{Pricer: catalog}, rollup.RepriceFilter{Since: since, Until: until}, job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed != 0 {
		t.Errorf("second reprice changed %d spans, want 0", res.Changed)
	}
	check("after two reprices")

	// A model filter limits the reprice: back to the built-in prices for
	// gpt-4o only ("gpt-4o" matches the stored gpt-4o-2024-08-06).
	res, err = rollup.Reprice(ctx, store, ingest.Options{Pricer: builtin(t)}, rollup.RepriceFilter{Since: since, Until: until, Model: "gpt-4o"}, job)
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned != 1 || res.Changed != 1 {
		t.Errorf("reprice of gpt-4o: %+v, want 1 scanned and changed", res)
	}
}

// TestRepriceRederivesUsage stores an OpenLLMetry Anthropic call the way
// tally stored it before it read usage per instrumentation: the reported
// 9,040 input tokens (40 uncached + 8,000 cache read + 1,000 cache write,
// OpenLLMetry's inclusive count) taken as exclusive, so 18,040 stored, and
// the usage attributes consumed. Reprice re-derives it with the current
// readings: 9,040 and Anthropic's bill, 40 × $3 + 8,000 × $0.30 + 1,000 ×
// $3.75 + 200 × $15 per million = $0.00927. Twice is once.
func TestRepriceRederivesUsage(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	catalog := builtin(t)
	start := mustTime(t, "2026-06-01T10:00:00Z")
	old := schema.Span{Project: "p", TraceID: "0000000000000000000000000000000a", SpanID: "000000000000000a",
		Start: start, StartNs: uint64(start.UnixNano()), EndNs: uint64(start.UnixNano()) + 1e9, DurationNs: 1e9,
		Name: "anthropic.chat", Kind: "client", Status: "ok", ScopeName: "opentelemetry.instrumentation.anthropic",
		ScopeVersion: "0.62.1", SpanType: schema.TypeInference, Operation: "chat", Provider: "anthropic",
		RequestModel: "claude-sonnet-4-5", ResponseModel: "claude-sonnet-4-5-20250929", Model: "claude-sonnet-4-5-20250929",
		InputTokens: 18040, CacheReadTokens: 8000, CacheWriteTokens: 1000, OutputTokens: 200, UsageMode: schema.UsageAdditive}
	catalog.Apply(&old)
	insert(t, store, []schema.Span{old}, 1)

	r := query.NewReader(store)
	check := func(label string, wantInput uint64, wantCost float64) {
		t.Helper()
		run, err := r.Run(ctx, "p", old.TraceID)
		if err != nil {
			t.Fatal(err)
		}
		if u := run.Summary.Usage; u.Input != wantInput || u.CacheRead != 8000 || u.CacheWrite != 1000 || u.Output != 200 {
			t.Errorf("%s: usage %+v, want input %d", label, u, wantInput)
		}
		if !near(run.Summary.Cost.Total, wantCost) {
			t.Errorf("%s: cost %v, want %v", label, run.Summary.Cost.Total, wantCost)
		}
	}
	// Stored double: 18,040 input of which 9,040 uncached:
	// 9040 × 3 + 8000 × 0.30 + 1000 × 3.75 + 200 × 15 = 27120 + 2400 + 3750 + 3000.
	check("as stored", 18040, 0.03627)
	since, until := start.Add(-time.Hour), start.Add(time.Hour)
	rules := ingest.Options{Pricer: catalog}
	res, err := rollup.Reprice(ctx, store, rules, rollup.RepriceFilter{Since: since, Until: until}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned != 1 || res.Changed != 1 {
		t.Errorf("first reprice: %+v, want 1 scanned, 1 changed", res)
	}
	check("re-derived", 9040, 0.00927)
	res, err = rollup.Reprice(ctx, store, rules, rollup.RepriceFilter{Since: since, Until: until}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed != 0 {
		t.Errorf("second reprice changed %d spans, want 0", res.Changed)
	}
	// A configured reading applies on the next reprice: declaring this
	// instrumentation exclusive brings the double count back, on purpose.
	rules.Usage = ingest.UsagePolicy{Readings: map[string]bool{"openllmetry-anthropic": true}}
	if _, err := rollup.Reprice(ctx, store, rules, rollup.RepriceFilter{Since: since, Until: until}, nil); err != nil {
		t.Fatal(err)
	}
	check("configured exclusive", 18040, 0.03627)
}

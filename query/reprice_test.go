package query_test

import (
	"context"
	"testing"

	"github.com/tallyhq/tally/pricing"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/schema"
)

func TestRepriceAfterOverride(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	insert(t, store, loadCorpus(t, "testdata/golden.json", "golden", builtin(t)), 1)
	since, until := mustTime(t, "2026-01-10T00:00:00Z"), mustTime(t, "2026-01-11T00:00:00Z")
	rollup := query.NewRollup(store, query.RollupConfig{})
	if _, err := rollup.RefreshRange(ctx, since, until); err != nil {
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
	res, err := query.Reprice(ctx, store, catalog, query.RepriceFilter{Since: since, Until: until}, rollup)
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
			"0000000000000104": {schema.CostCatalog, costClaudeAdditive},
			"0000000000000402": {schema.CostCatalog, newAcme},
			"0000000000000403": {schema.CostClient, costClient},
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
		checkGroups(t, label, rep, map[string]groupWant{
			"planner": {spans: 5, llm: 2, toolCalls: 2, retries: 1, errors: 1, input: 3800, cacheRead: 3000,
				cacheWrite: 500, output: 700, cost: newGPT4o + costClaudeAdditive, tax: costClaudeAdditive},
			"experimenter": {spans: 4, llm: 3, input: 2110, output: 155, cost: newAcme + costClient + costBedrockHaiku, client: 1},
		}, false)
		if len(rep.Unmatched) != 0 {
			t.Errorf("%s: unmatched %+v, want none after pricing acme-large-2", label, rep.Unmatched)
		}
	}
	check("after one reprice")

	res, err = query.Reprice(ctx, store, catalog, query.RepriceFilter{Since: since, Until: until}, rollup)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed != 0 {
		t.Errorf("second reprice changed %d spans, want 0", res.Changed)
	}
	check("after two reprices")

	// A model filter limits the reprice: back to the built-in prices for
	// gpt-4o only ("gpt-4o" matches the stored gpt-4o-2024-08-06).
	res, err = query.Reprice(ctx, store, builtin(t), query.RepriceFilter{Since: since, Until: until, Model: "gpt-4o"}, rollup)
	if err != nil {
		t.Fatal(err)
	}
	if res.Scanned != 1 || res.Changed != 1 {
		t.Errorf("reprice of gpt-4o: %+v, want 1 scanned and changed", res)
	}
}

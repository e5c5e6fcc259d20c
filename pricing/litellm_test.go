package pricing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tallyhq/tally/schema"
)

func loadLiteLLMSample(t *testing.T) []Entry {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "litellm_sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := LoadLiteLLM(f)
	if err != nil {
		t.Fatalf("LoadLiteLLM: %v", err)
	}
	return entries
}

func TestLoadLiteLLM(t *testing.T) {
	entries := loadLiteLLMSample(t)
	// sample_spec, the image and audio models, the broken entry and the dated
	// duplicate of claude-sonnet-4-5 are skipped.
	want := []struct {
		id, provider, mode string
		price              Price // per million: per-token price × 1e6
		tiers              []Tier
	}{
		{
			// 3e-06 → $3, 1.5e-05 → $15, 3e-07 → $0.30, 3.75e-06 → $3.75, 6e-06 (1h) → $6;
			// above 200k: 6e-06 → $6, 2.25e-05 → $22.50, 6e-07 → $0.60, 7.5e-06 → $7.50 (1h: the 5-minute tier price)
			id: "litellm/claude-sonnet-4-5", provider: "anthropic", mode: ModeChat,
			price: Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75, CacheWrite1h: 6},
			tiers: []Tier{{AboveInputTokens: 200000, Price: Price{Input: 6, Output: 22.5, CacheRead: 0.6, CacheWrite: 7.5, CacheWrite1h: 7.5}}},
		},
		{
			// 3e-07 → $0.30, 2.5e-06 → $2.50, 3e-08 → $0.03; no write price: billed as input ($0.30)
			id: "litellm/gemini/gemini-2.5-flash", provider: "gcp.gemini", mode: ModeChat,
			price: Price{Input: 0.3, Output: 2.5, CacheRead: 0.03, CacheWrite: 0.3, CacheWrite1h: 0.3},
		},
		{
			// a price given as a string: "0.000001" → $1; 2e-06 → $2; no mode means chat
			id: "litellm/my-org/custom-model", provider: "openai", mode: ModeChat,
			price: Price{Input: 1, Output: 2, CacheRead: 1, CacheWrite: 1, CacheWrite1h: 1},
		},
		{
			// 2e-08 → $0.02
			id: "litellm/text-embedding-3-small", provider: "openai", mode: ModeEmbedding,
			price: Price{Input: 0.02, Output: 0, CacheRead: 0.02, CacheWrite: 0.02, CacheWrite1h: 0.02},
		},
	}
	if len(entries) != len(want) {
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i] = e.ID
		}
		t.Fatalf("got %d entries %v, want %d", len(entries), ids, len(want))
	}
	for i, w := range want {
		e := entries[i]
		if e.ID != w.id || e.Provider != w.provider || e.Mode != w.mode || e.Version != "litellm" {
			t.Errorf("entry %d: %s %s %s %s, want %s %s %s litellm", i, e.ID, e.Provider, e.Mode, e.Version, w.id, w.provider, w.mode)
		}
		if !samePrice(e.Price, w.price) {
			t.Errorf("%s: price %+v, want %+v", w.id, e.Price, w.price)
		}
		if len(e.Tiers) != len(w.tiers) {
			t.Errorf("%s: tiers %+v, want %+v", w.id, e.Tiers, w.tiers)
			continue
		}
		for j := range w.tiers {
			if e.Tiers[j].AboveInputTokens != w.tiers[j].AboveInputTokens || !samePrice(e.Tiers[j].Price, w.tiers[j].Price) {
				t.Errorf("%s: tier %+v, want %+v", w.id, e.Tiers[j], w.tiers[j])
			}
		}
	}
}

func samePrice(a, b Price) bool {
	return near(a.Input, b.Input) && near(a.Output, b.Output) && near(a.CacheRead, b.CacheRead) &&
		near(a.CacheWrite, b.CacheWrite) && near(a.CacheWrite1h, b.CacheWrite1h)
}

func TestLiteLLMOverridesBuiltin(t *testing.T) {
	c := builtin(t).WithOverrides(loadLiteLLMSample(t))
	// The LiteLLM entry replaces the builtin anthropic/claude-sonnet-4-5 by (provider, model).
	// 300000 input is above 200k: 300000 × $6/M + 1000 output × $22.50/M = 1.8 + 0.0225 = 1.8225
	s := schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", Start: date("2025-11-15"),
		InputTokens: 300000, OutputTokens: 1000, UsageMode: schema.UsageAdditive}
	c.Apply(&s)
	if s.PriceEntry != "litellm/claude-sonnet-4-5" || s.PriceVersion != "litellm" {
		t.Errorf("entry %q version %q, want litellm/claude-sonnet-4-5 litellm", s.PriceEntry, s.PriceVersion)
	}
	checkCosts(t, "litellm long context", s, costs{1.8, 0, 0, 0.0225, 1.8225})
	// LiteLLM says nothing about the cache minimum: the builtin one is kept.
	if n, ok := c.MinCachePrefix("anthropic", "claude-sonnet-4-5", date("2025-11-15")); n != 1024 || !ok {
		t.Errorf("MinCachePrefix = %d, %v; want 1024, true", n, ok)
	}
}

func TestLoadLiteLLMRejectsMalformedDocuments(t *testing.T) {
	for _, doc := range []string{"", "[1, 2]", "{\"a\": "} {
		if _, err := LoadLiteLLM(strings.NewReader(doc)); err == nil {
			t.Errorf("LoadLiteLLM(%q): no error", doc)
		}
	}
}

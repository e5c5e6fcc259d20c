package pricing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tallyhq/tally/schema"
)

func TestBuiltinEntriesAreComplete(t *testing.T) {
	c := builtin(t)
	if c.AsOf() == "" {
		t.Error("the builtin catalog has no as_of date")
	}
	entries := c.Entries()
	if len(entries) < 60 {
		t.Errorf("builtin catalog has %d entries, expected the full list", len(entries))
	}
	for _, e := range entries {
		if e.ID == "" || e.Provider == "" || e.Model == "" || e.Version == "" || e.EffectiveFrom.IsZero() {
			t.Errorf("%s: id, provider, model, version and effective_from are all required: %+v", e.ID, e)
		}
		prices := []Price{e.Price}
		for _, tier := range e.Tiers {
			prices = append(prices, tier.Price)
		}
		for _, p := range prices {
			if p.Input <= 0 {
				t.Errorf("%s: input price %v, want > 0", e.ID, p.Input)
			}
			if e.Mode != ModeEmbedding && p.Output <= 0 {
				t.Errorf("%s: output price %v, want > 0", e.ID, p.Output)
			}
			if p.CacheRead <= 0 || p.CacheWrite <= 0 || p.CacheWrite1h <= 0 {
				t.Errorf("%s: cache prices %+v, want > 0", e.ID, p)
			}
		}
		if e.MinCachePrefixTokens <= 0 && !e.NoPromptCache {
			t.Errorf("%s: neither a minimum cache prefix nor no_prompt_cache", e.ID)
		}
	}
}

func TestBuiltinCoversTheListedModels(t *testing.T) {
	c := builtin(t)
	models := map[string][]string{
		"openai": {"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o1", "o3", "o3-mini",
			"o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano", "text-embedding-3-small", "text-embedding-3-large"},
		"anthropic": {"claude-3-5-haiku", "claude-3-7-sonnet", "claude-sonnet-4", "claude-sonnet-4-5",
			"claude-opus-4", "claude-opus-4-1", "claude-haiku-4-5"},
		"gcp.gemini":  {"gemini-2.0-flash", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.5-pro"},
		"mistral_ai":  {"mistral-large", "mistral-medium", "mistral-small", "codestral"},
		"deepseek":    {"deepseek-chat", "deepseek-reasoner"},
		"x_ai":        {"grok-3", "grok-3-mini", "grok-4"},
		"groq":        {"llama-3.3-70b-versatile", "llama-3.1-8b-instant"},
		"aws.bedrock": {"claude-3-5-haiku", "claude-3-7-sonnet", "claude-sonnet-4", "claude-sonnet-4-5", "claude-opus-4", "claude-opus-4-1", "claude-haiku-4-5"},
		"gcp.vertex_ai": {"claude-3-5-haiku", "claude-3-7-sonnet", "claude-sonnet-4", "claude-sonnet-4-5",
			"claude-opus-4", "claude-opus-4-1", "claude-haiku-4-5"},
	}
	for provider, names := range models {
		for _, name := range names {
			e, _, ok := c.Lookup(provider, name, date("2025-11-15"))
			if !ok || e.Provider != provider || Normalize(e.Model) != Normalize(name) {
				t.Errorf("%s/%s: matched %q (ok %v), want an exact %s entry", provider, name, e.ID, ok, provider)
			}
		}
	}
}

func TestBuiltinCloudEntriesCostWhatAnthropicCharges(t *testing.T) {
	c := builtin(t)
	anthropic := make(map[string]Entry)
	for _, e := range c.Entries() {
		if e.Provider == "anthropic" {
			anthropic[Normalize(e.Model)] = e
		}
	}
	for _, e := range c.Entries() {
		if e.Provider != "aws.bedrock" && e.Provider != "gcp.vertex_ai" {
			continue
		}
		a, ok := anthropic[Normalize(e.Model)]
		if !ok {
			t.Errorf("%s: no Anthropic entry for %s", e.ID, e.Model)
			continue
		}
		if e.Price != a.Price || len(e.Tiers) != len(a.Tiers) || e.MinCachePrefixTokens != a.MinCachePrefixTokens {
			t.Errorf("%s: prices %+v differ from %s's %+v", e.ID, e.Price, a.ID, a.Price)
		}
	}
}

func TestOverrideFileWinsOverBuiltin(t *testing.T) {
	base := builtin(t)
	overrides, err := LoadFile(filepath.Join("testdata", "prices.yaml"))
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	c := base.WithOverrides(overrides)

	tests := []struct {
		name        string
		span        schema.Span
		wantEntry   string
		wantVersion string
		want        costs
	}{
		{
			// negotiated-1: 1000 × $2.70/M + 100 output × $13.50/M = 0.0027 + 0.00135 = 0.00405
			name: "override by id, first version",
			span: schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5-20250929", Start: date("2025-11-15"),
				InputTokens: 1000, OutputTokens: 100, UsageMode: schema.UsageAdditive},
			wantEntry: "anthropic/claude-sonnet-4-5", wantVersion: "negotiated-1",
			want: costs{0.0027, 0, 0, 0.00135, 0.00405},
		},
		{
			// negotiated-2 from 2026-02-01: 500 uncached × $2.40/M + 500 read × $0.24/M + 100 output × $12/M
			// = 0.0012 + 0.00012 + 0.0012 = 0.00252
			name: "override by id, second version",
			span: schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5", Start: date("2026-03-01"),
				InputTokens: 1000, CacheReadTokens: 500, OutputTokens: 100, UsageMode: schema.UsageAdditive},
			wantEntry: "anthropic/claude-sonnet-4-5", wantVersion: "negotiated-2",
			want: costs{0.0012, 0.00012, 0, 0.0012, 0.00252},
		},
		{
			// The override replaces the built-in tiers too: 300000 × $2.70/M = 0.81
			name: "override drops the builtin long-context tier",
			span: schema.Span{Provider: "anthropic", Model: "claude-sonnet-4-5", Start: date("2025-11-15"),
				InputTokens: 300000, UsageMode: schema.UsageAdditive},
			wantEntry: "anthropic/claude-sonnet-4-5", wantVersion: "negotiated-1",
			want: costs{0.81, 0, 0, 0, 0.81},
		},
		{
			// override by (provider, model) without an id; cache reads default to the input price:
			// 500 uncached × $2/M + 500 read × $2/M + 1000 output × $8/M = 0.001 + 0.001 + 0.008 = 0.01
			name: "override by provider and model",
			span: schema.Span{Provider: "openai", Model: "gpt-4o", Start: date("2025-11-15"),
				InputTokens: 1000, CacheReadTokens: 500, OutputTokens: 1000, UsageMode: schema.UsageInclusive},
			wantEntry: "openai/gpt-4o", wantVersion: "unversioned",
			want: costs{0.001, 0.001, 0, 0.008, 0.01},
		},
		{
			// a dated snapshot billed as its alias follows the alias's override: the same 0.01
			name: "a snapshot at its alias's price follows the alias",
			span: schema.Span{Provider: "openai", Model: "gpt-4o-2024-11-20", Start: date("2025-11-15"),
				InputTokens: 1000, CacheReadTokens: 500, OutputTokens: 1000, UsageMode: schema.UsageInclusive},
			wantEntry: "openai/gpt-4o", wantVersion: "unversioned",
			want: costs{0.001, 0.001, 0, 0.008, 0.01},
		},
		{
			// the snapshot priced apart takes its own override, not gpt-4o's:
			// 1000 × $4/M + 1000 × $12/M = 0.004 + 0.012 = 0.016 (no cache price: reads at input)
			name: "a snapshot priced apart keeps its own entry",
			span: schema.Span{Provider: "openai", Model: "gpt-4o-2024-05-13", Start: date("2025-11-15"),
				InputTokens: 1000, OutputTokens: 1000, UsageMode: schema.UsageInclusive},
			wantEntry: "openai/gpt-4o-2024-05-13", wantVersion: "unversioned",
			want: costs{0.004, 0, 0, 0.012, 0.016},
		},
		{
			// a new model: 1000 × $1/M + 1000 × $2/M = 0.001 + 0.002 = 0.003
			name: "added model",
			span: schema.Span{Provider: "acme", Model: "acme-large", Start: date("2025-11-15"),
				InputTokens: 1000, OutputTokens: 1000, UsageMode: schema.UsageInclusive},
			wantEntry: "acme/acme-large", wantVersion: "2025-01-01",
			want: costs{0.001, 0, 0, 0.002, 0.003},
		},
		{
			// Bedrock's entry is another (provider, model) and keeps the builtin price:
			// 1000 × $3/M + 100 × $15/M = 0.003 + 0.0015 = 0.0045
			name: "other providers of the model keep their prices",
			span: schema.Span{Provider: "aws.bedrock", Model: "anthropic.claude-sonnet-4-5-20250929-v1:0", Start: date("2025-11-15"),
				InputTokens: 1000, OutputTokens: 100, UsageMode: schema.UsageAdditive},
			wantEntry: "aws.bedrock/claude-sonnet-4-5", wantVersion: "2025-09-29",
			want: costs{0.003, 0, 0, 0.0015, 0.0045},
		},
	}
	for _, tt := range tests {
		s := tt.span
		c.Apply(&s)
		if s.PriceEntry != tt.wantEntry || s.PriceVersion != tt.wantVersion {
			t.Errorf("%s: entry %q version %q, want %q %q", tt.name, s.PriceEntry, s.PriceVersion, tt.wantEntry, tt.wantVersion)
		}
		checkCosts(t, tt.name, s, tt.want)
	}

	// The override states nothing about caching: the builtin minimum prefix is kept.
	if n, ok := c.MinCachePrefix("anthropic", "claude-sonnet-4-5", date("2025-11-15")); n != 1024 || !ok {
		t.Errorf("MinCachePrefix after override = %d, %v; want 1024, true", n, ok)
	}
	if n, ok := c.MinCachePrefix("acme", "acme-large", date("2025-11-15")); n != 512 || !ok {
		t.Errorf("MinCachePrefix of the added model = %d, %v; want 512, true", n, ok)
	}
	// The base catalog is unchanged: builtin $3/M.
	if _, p, _ := base.Lookup("anthropic", "claude-sonnet-4-5", date("2025-11-15")); p.Input != 3 {
		t.Errorf("base catalog changed: input %v, want 3", p.Input)
	}
	// One builtin sonnet-4-5 entry replaced by two versions (+1), gpt-4o and gpt-4o-2024-05-13 replaced by
	// one each (0), acme added (+1).
	if len(c.Entries()) != len(base.Entries())+2 {
		t.Errorf("overridden catalog has %d entries, want %d", len(c.Entries()), len(base.Entries())+2)
	}
}

func TestLoadFileRejectsBadFiles(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"unknown field", "entries:\n  - provider: a\n    model: m\n    input: 1\n    output: 2\n    inptu: 3\n", "inptu"},
		{"no input price", "entries:\n  - provider: a\n    model: m\n    output: 2\n", "input price is required"},
		{"no output price", "entries:\n  - provider: a\n    model: m\n    input: 2\n", "output price is required"},
		{"no provider", "entries:\n  - model: m\n    input: 1\n    output: 2\n", "provider is required"},
		{"negative price", "entries:\n  - provider: a\n    model: m\n    input: -1\n    output: 2\n", "non-negative"},
		{"bad date", "entries:\n  - provider: a\n    model: m\n    input: 1\n    output: 2\n    effective_from: soon\n", "effective_from"},
		{"tiers not ascending", "entries:\n  - provider: a\n    model: m\n    input: 1\n    output: 2\n    tiers:\n      - {above_input_tokens: 200000, input: 2, output: 4}\n      - {above_input_tokens: 100000, input: 3, output: 5}\n", "ascending"},
		{"one id, two models", "entries:\n  - {id: x, provider: a, model: m1, input: 1, output: 2}\n  - {id: x, provider: a, model: m2, input: 1, output: 2, effective_from: \"2025-01-01\"}\n", "two models"},
		{"one id, one date twice", "entries:\n  - {id: x, provider: a, model: m, input: 1, output: 2}\n  - {id: x, provider: a, model: m, input: 1, output: 3}\n", "same date"},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		path := filepath.Join(dir, "prices"+string(rune('a'+i))+".yaml")
		if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadFile(path)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file: no error")
	}
}

package ingest

import (
	"math"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/tallyhq/tally/schema"
)

func TestReconcile(t *testing.T) {
	cases := []struct {
		name         string
		c            tokenCounts
		additive     bool
		wantInput    uint64
		wantMode     string
		unreconciled bool
	}{
		// 900 > 100: the input cannot have included the cache.
		{"cache above input", tokenCounts{input: 100, cacheRead: 900, hasInput: true}, false, 1000, schema.UsageAdditive, false},
		{"cache within input, inclusive policy", tokenCounts{input: 1000, cacheRead: 900, hasInput: true}, false, 1000, schema.UsageInclusive, false},
		// 1000 + 900 + 100.
		{"cache within input, additive policy", tokenCounts{input: 1000, cacheRead: 900, cacheWrite: 100, hasInput: true}, true, 2000, schema.UsageAdditive, false},
		{"no cache, additive policy adds nothing", tokenCounts{input: 50, hasInput: true}, true, 50, schema.UsageInclusive, false},
		// 30 + 20 = 50 > 40: additive, 40 + 50 = 90.
		{"read plus write above input", tokenCounts{input: 40, cacheRead: 30, cacheWrite: 20, hasInput: true}, false, 90, schema.UsageAdditive, false},
		{"reasoning above output", tokenCounts{input: 10, output: 5, reasoning: 6, hasInput: true}, false, 10, schema.UsageInclusive, true},
		{"reasoning equal to output", tokenCounts{input: 10, output: 6, reasoning: 6, hasInput: true}, false, 10, schema.UsageInclusive, false},
		{"cache without any input count", tokenCounts{cacheRead: 70}, false, 70, schema.UsageAdditive, true},
		{"malformed bucket", tokenCounts{input: 10, hasInput: true, malformed: true}, false, 10, schema.UsageInclusive, true},
		{"overflow", tokenCounts{input: math.MaxUint64 - 1, cacheRead: 5, hasInput: true}, true, math.MaxUint64 - 1, schema.UsageInclusive, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := reconcile(tc.c, tc.additive)
			if r.input != tc.wantInput || r.mode != tc.wantMode || r.unreconciled != tc.unreconciled {
				t.Errorf("got input %d mode %q unreconciled %v, want %d %q %v",
					r.input, r.mode, r.unreconciled, tc.wantInput, tc.wantMode, tc.unreconciled)
			}
		})
	}
}

func TestUsagePolicyAdditive(t *testing.T) {
	custom := UsagePolicy{
		Providers: map[string]bool{"anthropic": false, "gcp.*": true, "groq": true},
		Scopes:    map[string]bool{"openlit": true},
	}
	cases := []struct {
		name            string
		policy          UsagePolicy
		scope, provider string
		want            bool
	}{
		{"default anthropic", UsagePolicy{}, "", "anthropic", true},
		{"default bedrock", UsagePolicy{}, "", "aws.bedrock", true},
		{"default openai", UsagePolicy{}, "", "openai", false},
		{"default gemini", UsagePolicy{}, "", "gcp.gemini", false},
		{"default azure", UsagePolicy{}, "", "azure.ai.openai", false},
		{"default unknown", UsagePolicy{}, "", "", false},
		{"spelled-out defaults", DefaultUsagePolicy(), "", "gcp.vertex_ai", false},
		{"override provider", custom, "", "anthropic", false},
		{"wildcard", custom, "", "gcp.vertex_ai", true},
		{"exact", custom, "", "groq", true},
		{"built-in behind config", custom, "", "aws.bedrock", true},
		{"scope beats provider", custom, "openlit", "openai", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.policy.Additive(tc.scope, tc.provider); got != tc.want {
				t.Errorf("Additive(%q, %q) = %v, want %v", tc.scope, tc.provider, got, tc.want)
			}
		})
	}
}

func TestTokenValue(t *testing.T) {
	cases := []struct {
		name string
		v    pcommon.Value
		want uint64
		ok   bool
	}{
		{"int", pcommon.NewValueInt(42), 42, true},
		{"negative int", pcommon.NewValueInt(-1), 0, false},
		{"integral double", pcommon.NewValueDouble(42), 42, true},
		{"fractional double", pcommon.NewValueDouble(4.5), 0, false},
		{"NaN", pcommon.NewValueDouble(math.NaN()), 0, false},
		{"string", pcommon.NewValueStr(" 42 "), 42, true},
		{"string double", pcommon.NewValueStr("42.0"), 42, true},
		{"garbage", pcommon.NewValueStr("many"), 0, false},
		{"bool", pcommon.NewValueBool(true), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tokenValue(tc.v)
			if got != tc.want || ok != tc.ok {
				t.Errorf("tokenValue = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestProviderFromModel(t *testing.T) {
	cases := []struct {
		model, want string
	}{
		{"gpt-4o-2024-08-06", "openai"},
		{"openai/gpt-4o", "openai"},
		{"o3-mini", "openai"},
		{"o1", "openai"},
		{"chatgpt-4o-latest", "openai"},
		{"claude-sonnet-4-5-20250929", "anthropic"},
		{"anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic"},
		{"gemini-2.5-pro", "gcp.gemini"},
		{"mixtral-8x7b", "mistral_ai"},
		{"codestral-latest", "mistral_ai"},
		{"deepseek-chat", "deepseek"},
		{"grok-4", "x_ai"},
		{"command-r-plus", "cohere"},
		{"llama-3.1-70b", ""},
		{"o1x", ""},
	}
	for _, tc := range cases {
		got, _ := providerFromModel(tc.model)
		if got != tc.want {
			t.Errorf("providerFromModel(%q) = %q, want %q", tc.model, got, tc.want)
		}
	}
}

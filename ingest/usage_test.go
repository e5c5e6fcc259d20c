package ingest

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tallyhq/tally/ingest/wire"
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
			r := reconcile(tc.c, tc.additive, false)
			if r.input != tc.wantInput || r.mode != tc.wantMode || r.unreconciled != tc.unreconciled {
				t.Errorf("got input %d mode %q unreconciled %v, want %d %q %v",
					r.input, r.mode, r.unreconciled, tc.wantInput, tc.wantMode, tc.unreconciled)
			}
		})
	}
}

func TestUsagePolicyResolve(t *testing.T) {
	custom := UsagePolicy{
		Providers: map[string]bool{"anthropic": false, "gcp.*": true, "groq": true},
		Readings:  map[string]bool{"my.scope": true, "openinference": false, "openlit": true},
	}
	cases := []struct {
		name                     string
		policy                   UsagePolicy
		scope, version, provider string
		dialect                  string
		wantName                 string
		wantExclusive            bool
	}{
		{"unknown scope, anthropic", UsagePolicy{}, "x", "", "anthropic", "", ProviderDefault, true},
		{"unknown scope, bedrock", UsagePolicy{}, "", "", "aws.bedrock", "", ProviderDefault, true},
		{"unknown scope, openai", UsagePolicy{}, "", "", "openai", "", ProviderDefault, false},
		{"unknown scope, gemini", UsagePolicy{}, "", "", "gcp.gemini", "", ProviderDefault, false},
		{"unknown scope, no provider", UsagePolicy{}, "", "", "", "", ProviderDefault, false},
		{"spelled-out defaults", DefaultUsagePolicy(), "", "", "gcp.vertex_ai", "", ProviderDefault, false},
		// The table beats the provider default: OpenLLMetry's anthropic
		// instrumentation includes cache from 0.33 on, excluded it before.
		{"openllmetry anthropic 0.40", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "0.40.6", "anthropic", "", "openllmetry-anthropic", false},
		{"openllmetry anthropic 0.32", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "0.32.1", "anthropic", "", "openllmetry-anthropic-legacy", true},
		{"openllmetry anthropic 0.33.4, the first inclusive release", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "0.33.4", "anthropic", "", "openllmetry-anthropic", false},
		{"openllmetry anthropic, no version", UsagePolicy{}, "opentelemetry.instrumentation.anthropic", "", "anthropic", "", ProviderDefault, true},
		{"openinference prefix", UsagePolicy{}, "openinference.instrumentation.anthropic", "0.1.20", "anthropic", "", "openinference", false},
		{"openinference by dialect", UsagePolicy{}, "custom", "", "anthropic", "openinference", "openinference", false},
		{"reading defers to provider", UsagePolicy{}, "openlit.otel.tracing", "", "anthropic", "", "openlit", true},
		{"vercel by dialect defers to provider", UsagePolicy{}, "ai", "", "anthropic", "vercel-ai", "vercel-ai", true},
		{"override provider", custom, "", "", "anthropic", "", ProviderDefault, false},
		{"wildcard", custom, "", "", "gcp.vertex_ai", "", ProviderDefault, true},
		{"exact", custom, "", "", "groq", "", ProviderDefault, true},
		{"built-in behind config", custom, "", "", "aws.bedrock", "", ProviderDefault, true},
		{"configured scope beats provider", custom, "my.scope", "", "openai", "", ProviderDefault, true},
		{"configured reading beats table", custom, "openinference.instrumentation.openai", "1.0", "openai", "", "openinference", false},
		{"configured reading name", custom, "openinference.instrumentation.anthropic", "1.0", "anthropic", "", "openinference", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.policy.resolve(tc.policy.table(), spanIdentity{scope: tc.scope, version: tc.version, provider: tc.provider, dialect: tc.dialect})
			if a.name != tc.wantName || a.exclusive != tc.wantExclusive {
				t.Errorf("resolve(%q %q, %q) = %s exclusive %v (%s), want %s exclusive %v",
					tc.scope, tc.version, tc.provider, a.name, a.exclusive, a.why, tc.wantName, tc.wantExclusive)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"0.40.6", []int{0, 40, 6}, true},
		{"v1.2.0b1", []int{1, 2, 0}, true},
		{"0.1b0", []int{0, 1}, true},
		{"", nil, false},
		{"dev", nil, false},
	}
	for _, tc := range cases {
		got, ok := parseVersion(tc.in)
		if ok != tc.ok || len(got) != len(tc.want) {
			t.Errorf("parseVersion(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseVersion(%q) = %v, want %v", tc.in, got, tc.want)
			}
		}
	}
}

func TestTokenValue(t *testing.T) {
	cases := []struct {
		name string
		v    wire.Value
		want uint64
		ok   bool
	}{
		{"int", wire.IntValue(42), 42, true},
		{"negative int", wire.IntValue(-1), 0, false},
		{"integral double", wire.DoubleValue(42), 42, true},
		{"fractional double", wire.DoubleValue(4.5), 0, false},
		{"NaN", wire.DoubleValue(math.NaN()), 0, false},
		{"string", wire.StrValue(" 42 "), 42, true},
		{"string double", wire.StrValue("42.0"), 42, true},
		{"garbage", wire.StrValue("many"), 0, false},
		{"bool", wire.BoolValue(true), 0, false},
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

func TestParseUsagePolicy(t *testing.T) {
	p, err := ParseUsagePolicy([]string{"openlit=inclusive", " my.scope = exclusive"}, []string{"groq=exclusive", "gcp.*=inclusive"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := p.Readings["openlit"]; !ok || v {
		t.Errorf("openlit: %v %v, want inclusive", v, ok)
	}
	if v, ok := p.Readings["my.scope"]; !ok || !v {
		t.Errorf("my.scope: %v %v, want exclusive", v, ok)
	}
	if !p.Providers["groq"] || p.Providers["gcp.*"] || !p.Providers["anthropic"] {
		t.Errorf("providers %v: want groq exclusive, gcp.* inclusive, the anthropic default kept", p.Providers)
	}
	for _, bad := range [][2][]string{
		{{"openlit"}, nil},
		{{"=inclusive"}, nil},
		{{"openlit=sometimes"}, nil},
		{nil, {"anthropic=yes"}},
	} {
		if _, err := ParseUsagePolicy(bad[0], bad[1]); err == nil {
			t.Errorf("ParseUsagePolicy(%q, %q): no error", bad[0], bad[1])
		}
	}
}

// TestReadingsDocumented keeps the readings table of docs/instrumentations.md
// in step with the table in code: every reading is listed there by name.
func TestReadingsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../docs/instrumentations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Readings() {
		if !strings.Contains(string(readme), "`"+r.Name+"`") {
			t.Errorf("reading %s is not in the readings table of docs/instrumentations.md", r.Name)
		}
		if r.Source == "" || r.Instrumentation == "" {
			t.Errorf("reading %s: needs an instrumentation and a source", r.Name)
		}
	}
}

// TestLangfuseCostPartsSumInKeyOrder: a cost_details object without a
// total is summed in key order, so the same span costs the same to the last
// bit on every ingest, replay and re-derivation. Summed in map order these
// parts gave 0.02082 or 0.020819999999999998 from run to run (found by
// FuzzNormalize's differential check).
func TestLangfuseCostPartsSumInKeyOrder(t *testing.T) {
	parts := `{"input": 0.0042, "input_cache_read": 0.00031, "input_cache_creation": 0.0127, "output": 0.00339}`
	// In key order: input, input_cache_creation, input_cache_read, output.
	want := ((0.0042 + 0.0127) + 0.00031) + 0.00339
	for i := range 200 {
		req := newRequest(t, "langfuse-sdk")
		req.span("generation", "langfuse.observation.type", "generation", "gen_ai.request.model", "claude-sonnet-4",
			"langfuse.observation.cost_details", parts)
		batch, _ := Normalize(req.td, Options{Project: "p", Now: fixedNow})
		if got := batch.Spans[0].CostTotal; got != want || batch.Spans[0].CostSource != schema.CostClient {
			t.Fatalf("run %d: cost %v (%s), want %v exactly, client-sent", i, got, batch.Spans[0].CostSource, want)
		}
	}
}

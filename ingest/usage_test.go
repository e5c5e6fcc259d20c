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

// TestTotalsDecideReasoning checks that every total a span reports (each
// dialect's key and the provider's usage object) says whether the output
// counts the reasoning tokens (issue #38, defect 3).
func TestTotalsDecideReasoning(t *testing.T) {
	cases := []struct {
		name         string
		scope        string
		attrs        []any
		wantOutput   uint64
		unreconciled bool
		wantStep     string // a step of the explanation
	}{
		{"gen_ai.usage.total_tokens: reasoning apart", "opentelemetry.instrumentation.openai.v1", []any{
			"gen_ai.operation.name", "chat", "gen_ai.provider.name", "openai", "gen_ai.request.model", "gemini-2.5-flash",
			"gen_ai.usage.input_tokens", 1000, "gen_ai.usage.output_tokens", 100, "gen_ai.usage.reasoning_tokens", 400,
			"gen_ai.usage.total_tokens", 1500}, 500, false,
			"gen_ai.usage.total_tokens 1500 = input 1000 + output 100 + reasoning 400"},
		{"llm.usage.total_tokens: reasoning apart", "opentelemetry.instrumentation.openai.v1", []any{
			"gen_ai.operation.name", "chat", "gen_ai.request.model", "gemini-2.5-flash",
			"gen_ai.usage.input_tokens", 1000, "gen_ai.usage.output_tokens", 100, "gen_ai.usage.reasoning_tokens", 40,
			"llm.usage.total_tokens", 1140}, 140, false, "llm.usage.total_tokens 1140"},
		{"llm.token_count.total: reasoning apart", "openinference.instrumentation.openai", []any{
			"openinference.span.kind", "LLM", "llm.model_name", "gemini-2.5-pro",
			"llm.token_count.prompt", 300, "llm.token_count.completion", 20, "llm.token_count.completion_details.reasoning", 80,
			"llm.token_count.total", 400}, 100, false, "llm.token_count.total 400"},
		{"llm.token_count.total: reasoning inside", "openinference.instrumentation.openai", []any{
			"openinference.span.kind", "LLM", "llm.model_name", "o4-mini",
			"llm.token_count.prompt", 300, "llm.token_count.completion", 100, "llm.token_count.completion_details.reasoning", 80,
			"llm.token_count.total", 400}, 100, false, "llm.token_count.total 400 = input 300 + output 100: reasoning 80 is part of the output"},
		{"ai.usage.totalTokens: reasoning apart", "ai", []any{
			"ai.operationId", "ai.streamText.doStream", "ai.model.provider", "gemini.chat", "ai.model.id", "gemini-2.5-flash",
			"ai.usage.inputTokens", 900, "ai.usage.outputTokens", 50, "ai.usage.reasoningTokens", 250, "ai.usage.totalTokens", 1200},
			300, false, "ai.usage.totalTokens 1200"},
		{"total sent as a string", "ai", []any{
			"ai.operationId", "ai.streamText.doStream", "ai.model.provider", "gemini.chat", "ai.model.id", "gemini-2.5-flash",
			"ai.usage.inputTokens", 900, "ai.usage.outputTokens", 50, "ai.usage.reasoningTokens", 250, "ai.usage.totalTokens", "1200"},
			300, false, "ai.usage.totalTokens 1200"},
		// The total counts the input with its cache (OpenAI-style) while the
		// reading says the input was reported without it: the other reading
		// of the input decides.
		{"total with the cache, input without", "", []any{
			"gen_ai.operation.name", "chat", "gen_ai.provider.name", "anthropic", "gen_ai.request.model", "claude-sonnet-4-5",
			"gen_ai.usage.input_tokens", 100, "gen_ai.usage.cache_read.input_tokens", 900, "gen_ai.usage.output_tokens", 50,
			"gen_ai.usage.reasoning_tokens", 200, "gen_ai.usage.total_tokens", 1250}, 250, false,
			"gen_ai.usage.total_tokens 1250 = input 1000 + output 50 + reasoning 200"},
		// Only the provider's object reports a total: Gemini's
		// totalTokenCount, with no candidatesTokenCount to compare.
		{"provider object total (gen_ai.usage.raw)", "logfire.openai", []any{
			"gen_ai.operation.name", "chat", "gen_ai.provider.name", "openai", "gen_ai.request.model", "gemini-2.5-flash",
			"gen_ai.usage.input_tokens", 700, "gen_ai.usage.output_tokens", 30,
			"gen_ai.usage.raw", `{"prompt_tokens":700,"completion_tokens":30,"total_tokens":1000,"completion_tokens_details":{"reasoning_tokens":270}}`},
			300, false, "total_tokens in gen_ai.usage.raw 1000 = input 700 + output 30 + reasoning 270"},
		{"provider object total, no usage object of its own", "logfire.openai", []any{
			"gen_ai.operation.name", "chat", "gen_ai.provider.name", "openai", "gen_ai.request.model", "gemini-2.5-flash",
			"gen_ai.usage.input_tokens", 700, "gen_ai.usage.output_tokens", 30, "gen_ai.usage.reasoning_tokens", 270,
			"gen_ai.usage.raw", `{"prompt_tokens":700,"completion_tokens":30,"total_tokens":1000}`},
			300, false, "total_tokens in gen_ai.usage.raw 1000"},
		// Two totals: the span's matches neither sum, the provider's decides.
		{"first total matches neither, the next decides", "ai", []any{
			"ai.operationId", "ai.streamText.doStream", "ai.model.provider", "google.generative-ai", "ai.model.id", "gemini-2.5-flash",
			"ai.usage.inputTokens", 900, "ai.usage.outputTokens", 50, "ai.usage.reasoningTokens", 250, "ai.usage.totalTokens", 7,
			"ai.response.providerMetadata", `{"google":{"usageMetadata":{"promptTokenCount":900,"totalTokenCount":1200}}}`},
			300, false, "totalTokenCount in ai.response.providerMetadata 1200"},
		// A total that matches neither sum leaves today's reading, and says so.
		{"total matches neither", "opentelemetry.instrumentation.openai.v1", []any{
			"gen_ai.operation.name", "chat", "gen_ai.request.model", "gemini-2.5-flash",
			"gen_ai.usage.input_tokens", 1000, "gen_ai.usage.output_tokens", 100, "gen_ai.usage.reasoning_tokens", 400,
			"gen_ai.usage.total_tokens", 9999}, 100, true, "no total decides, the reading stands"},
		// Both sums match with the reported input's and the other reading
		// of it: the reported input (what the reading says) decides.
		{"reported input decides", "", []any{
			"gen_ai.operation.name", "chat", "gen_ai.provider.name", "anthropic", "gen_ai.request.model", "claude-sonnet-4-5",
			"gen_ai.usage.input_tokens", 500, "gen_ai.usage.cache_read.input_tokens", 200, "gen_ai.usage.output_tokens", 300,
			"gen_ai.usage.reasoning_tokens", 200, "gen_ai.usage.total_tokens", 1000}, 500, false,
			"gen_ai.usage.total_tokens 1000 = input 500 + output 300 + reasoning 200"},
		// The reported input matches neither sum, and the other readings of
		// it match both (uncached 400 + 100 + 1200 = 1600 + 100): ambiguous,
		// today's reading stands.
		{"ambiguous total", "ai", []any{
			"ai.operationId", "ai.streamText.doStream", "ai.model.provider", "gemini.chat", "ai.model.id", "gemini-2.5-flash",
			"ai.usage.inputTokens", 1000, "ai.usage.inputTokenDetails.noCacheTokens", 400, "ai.usage.inputTokenDetails.cacheReadTokens", 600,
			"ai.usage.outputTokens", 100, "ai.usage.reasoningTokens", 1200, "ai.usage.totalTokens", 1700}, 100, true,
			"is input + output for one reading of input and input + output + reasoning for another"},
		// The reading already says the output leaves reasoning out (Gemini's
		// candidatesTokenCount): the total agrees and nothing is added twice.
		{"no double count", "ai", []any{
			"ai.operationId", "ai.streamText.doStream", "ai.model.provider", "google.generative-ai", "ai.model.id", "gemini-2.5-flash",
			"ai.usage.inputTokens", 900, "ai.usage.outputTokens", 50, "ai.usage.reasoningTokens", 250, "ai.usage.totalTokens", 1200,
			"ai.response.providerMetadata", `{"google":{"usageMetadata":{"promptTokenCount":900,"candidatesTokenCount":50,"thoughtsTokenCount":250,"totalTokenCount":1200}}}`},
			300, false, "output: 50 reported without reasoning, + reasoning 250 = 300"},
		// OpenInference google-genai 0.1.12–0.1.15 counts cached tokens twice
		// in the prompt; its total is that prompt + completion.
		{"total over the doubled prompt", "openinference.instrumentation.google_genai", []any{
			"openinference.span.kind", "LLM", "llm.provider", "google", "llm.model_name", "gemini-2.5-flash",
			"llm.token_count.prompt", 1600, "llm.token_count.prompt_details.cache_read", 600,
			"llm.token_count.completion", 300, "llm.token_count.completion_details.reasoning", 200, "llm.token_count.total", 1900},
			300, false, "llm.token_count.total 1900 = input 1600 + output 300: reasoning 200 is part of the output"},
		{"no reasoning: the total is not read", "opentelemetry.instrumentation.openai.v1", []any{
			"gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o",
			"gen_ai.usage.input_tokens", 1000, "gen_ai.usage.output_tokens", 100, "gen_ai.usage.total_tokens", 5}, 100, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scope := tc.scope
			if scope == "" {
				scope = "my.app"
			}
			r := newRequest(t, scope)
			r.span("call", tc.attrs...)
			if tc.scope == "openinference.instrumentation.google_genai" {
				r.td.ResourceSpans().At(0).ScopeSpans().At(0).Scope().SetVersion("0.1.13")
			}
			batch, rej := Normalize(r.td, Options{Project: "demo", Now: fixedNow})
			if rej.Spans != 0 || len(batch.Spans) != 1 {
				t.Fatalf("rejected %d: %s", rej.Spans, rej.Message)
			}
			s := batch.Spans[0]
			ex := Explain(s, Options{})
			if s.OutputTokens != tc.wantOutput || (s.UsageUnreconciled == 1) != tc.unreconciled {
				t.Errorf("output %d unreconciled %v, want %d %v; steps %q", s.OutputTokens, s.UsageUnreconciled == 1, tc.wantOutput, tc.unreconciled, ex.Steps)
			}
			if tc.wantStep != "" && !strings.Contains(strings.Join(ex.Steps, "\n"), tc.wantStep) {
				t.Errorf("no step says %q: %q", tc.wantStep, ex.Steps)
			}
			if tc.wantStep == "" && strings.Contains(strings.Join(ex.Steps, "\n"), "total") {
				t.Errorf("a total was read: %q", ex.Steps)
			}
			if ex.Usage.Output != s.OutputTokens {
				t.Errorf("explain derives output %d, stored %d", ex.Usage.Output, s.OutputTokens)
			}
		})
	}
}

func TestReasoningFromTotals(t *testing.T) {
	c := tokenCounts{input: 100, output: 10, reasoning: 40}
	for _, tc := range []struct {
		name   string
		inputs []uint64
		totals []reportedTotal
		want   totalVerdict
	}{
		{"apart", []uint64{100}, []reportedTotal{{150, "t", ""}}, totalReasoningOut},
		{"inside", []uint64{100}, []reportedTotal{{110, "t", ""}}, totalReasoningIn},
		{"neither", []uint64{100}, []reportedTotal{{111, "t", ""}}, totalSilent},
		{"none", []uint64{100}, nil, totalSilent},
		// The reported input decides before the other readings of it.
		{"reported input first", []uint64{100, 140}, []reportedTotal{{150, "t", ""}}, totalReasoningOut},
		{"other reading decides", []uint64{7, 100}, []reportedTotal{{110, "t", ""}}, totalReasoningIn},
		{"ambiguous across readings", []uint64{7, 100, 140}, []reportedTotal{{150, "t", ""}}, totalSilent},
		{"ambiguous, next total decides", []uint64{7, 100, 140}, []reportedTotal{{150, "a", ""}, {57, "b", ""}}, totalReasoningOut},
		{"overflow is no match", []uint64{math.MaxUint64}, []reportedTotal{{9, "t", ""}}, totalSilent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, explain := range []bool{false, true} {
				got, why := reasoningFromTotals(c, tc.inputs, tc.totals, explain)
				if got != tc.want {
					t.Errorf("explain=%v: got %d (%s), want %d", explain, got, why, tc.want)
				}
				if !explain && why != "" {
					t.Errorf("why written without explain: %q", why)
				}
			}
		})
	}
}

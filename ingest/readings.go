package ingest

import (
	"slices"
	"strconv"
	"strings"
)

// InputRule says whether an instrumentation's reported input token count
// includes the prompt-cache tokens (read and write) or not.
type InputRule uint8

// The input rules.
const (
	// InputByProvider: the instrumentation is not known to decide it; the
	// provider's default applies (see UsagePolicy).
	InputByProvider InputRule = iota
	// InputIncludesCache: input = uncached + cache read + cache write, what
	// the GenAI conventions ask for.
	InputIncludesCache
	// InputExcludesCache: input is the uncached part only (the Anthropic and
	// Bedrock APIs' own numbers passed through); tally adds the cache buckets.
	InputExcludesCache
	// InputCountsCacheReadTwice: input counts the cache reads twice (a bug
	// of OpenInference's google-genai instrumentor 0.1.12–0.1.15); tally
	// takes them out once.
	InputCountsCacheReadTwice
)

func (r InputRule) String() string {
	switch r {
	case InputIncludesCache:
		return "input includes cache"
	case InputExcludesCache:
		return "input excludes cache"
	case InputCountsCacheReadTwice:
		return "input counts cache reads twice"
	}
	return "input per provider default"
}

// Reading is how one instrumentation reports usage: which of its numbers
// mean what. Normalize identifies the instrumentation of every span (by
// instrumentation scope name and version, and by attribute dialect when the
// scope says nothing), applies its Reading, and records the Reading's Name on
// the span (attribute AttrUsageReading), so every stored number can be
// explained and re-derived when a Reading is corrected.
type Reading struct {
	// Name is the stable identifier recorded on spans and accepted in
	// configuration ("openllmetry-anthropic").
	Name string
	// Instrumentation names the package and language, for people.
	Instrumentation string
	// Scopes are the instrumentation scope (tracer) names it uses, exactly;
	// an entry ending in "*" matches any scope name with that prefix.
	Scopes []string
	// MinVersion and BelowVersion bound the scope versions it applies to
	// (dotted numbers compared numerically; "" is unbounded). A span whose
	// scope version is empty or unparsable matches only an unbounded reading.
	MinVersion, BelowVersion string
	// SpanNames, when set, limits the reading to spans of these names (one
	// instrumentation, two API paths that report differently).
	SpanNames []string
	// VendorPrefixedModel, when true, limits the reading to spans whose
	// model is written "vendor/model" (LiteLLM's spelling, as Strands
	// passes it through).
	VendorPrefixedModel bool
	// Input says whether the reported input includes cache tokens.
	Input InputRule
	// OutputExcludesReasoning is true when the reported output count leaves
	// the reasoning (thinking) tokens out, so tally adds them.
	OutputExcludesReasoning bool
	// Source is where the rule was read: repository, file and commit.
	Source string
}

// Readings is the table of known instrumentations, most specific first: the
// first entry whose scope, version and conditions match a span decides. It
// is the one place the rules live; the readings table in docs/instrumentations.md and the
// conformance corpus (testdata/conformance, one file a scenario, each citing
// the source file and commit it was written from) document and verify them.
func Readings() []Reading {
	return []Reading{
		// OpenLLMetry (traceloop/openllmetry, Python).
		{Name: "openllmetry-anthropic", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic 0.33.4+",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.33.4", Input: InputIncludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/opentelemetry/instrumentation/anthropic/__init__.py _set_token_usage (PR #2175, 144c82a1)"},
		{Name: "openllmetry-anthropic-legacy", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic before 0.33.4",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.1", BelowVersion: "0.33.4", Input: InputExcludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic before 144c82a1"},
		{Name: "openllmetry-bedrock", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-bedrock: Anthropic's uncached input_tokens, cache from response headers",
			Scopes: []string{"opentelemetry.instrumentation.bedrock"}, Input: InputExcludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-bedrock @93429cfb"},
		{Name: "openllmetry", Instrumentation: "OpenLLMetry openai, langchain, crewai, … (the SDK's inclusive numbers)",
			Scopes: []string{"opentelemetry.instrumentation.openai*", "opentelemetry.instrumentation.langchain", "opentelemetry.instrumentation.crewai*"},
			Input:  InputIncludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-openai, -langchain, -crewai @93429cfb"},
		// OpenLLMetry-JS.
		{Name: "openllmetry-js-anthropic-legacy", Instrumentation: "OpenLLMetry-JS @traceloop/instrumentation-anthropic up to 0.27.0: input_tokens as Anthropic reports it",
			Scopes: []string{"@traceloop/instrumentation-anthropic"}, BelowVersion: "0.27.1", MinVersion: "0.1", Input: InputExcludesCache,
			Source: "traceloop/openllmetry-js packages/instrumentation-anthropic/src/instrumentation.ts @8b37d7e8 (v0.27.0)"},
		{Name: "openllmetry-js-anthropic", Instrumentation: "OpenLLMetry-JS @traceloop/instrumentation-anthropic after 0.27.0 (PR #1028)",
			Scopes: []string{"@traceloop/instrumentation-anthropic"}, MinVersion: "0.27.1", Input: InputIncludesCache,
			Source: "traceloop/openllmetry-js packages/instrumentation-anthropic/src/instrumentation.ts @3867c361"},
		// OpenTelemetry GenAI (python-genai, python-contrib, js-contrib).
		{Name: "otel-genai", Instrumentation: "OpenTelemetry GenAI instrumentations and opentelemetry-util-genai: input includes cache, output includes reasoning",
			Scopes: []string{"opentelemetry.instrumentation.genai.*", "opentelemetry.util.genai*", "opentelemetry.instrumentation.openai_v2",
				"opentelemetry.instrumentation.google_genai", "opentelemetry.instrumentation.vertexai", "@opentelemetry/instrumentation-openai"},
			Input:  InputIncludesCache,
			Source: "open-telemetry/opentelemetry-python-genai instrumentation/opentelemetry-instrumentation-genai-anthropic/.../messages_extractors.py @1f26b4ed; opentelemetry-python-contrib instrumentation-genai @466ae4c0"},
		// OpenInference (Arize-ai/openinference).
		{Name: "openinference-claude-agent-sdk", Instrumentation: "OpenInference claude-agent-sdk: prompt is Anthropic's uncached input_tokens",
			Scopes: []string{"openinference.instrumentation.claude_agent_sdk"}, Input: InputExcludesCache,
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-claude-agent-sdk @1fe497f1"},
		{Name: "openinference-bedrock-converse", Instrumentation: "OpenInference bedrock, Converse API: prompt is Bedrock's uncached inputTokens",
			Scopes: []string{"openinference.instrumentation.bedrock"}, SpanNames: []string{"bedrock.converse", "bedrock.converse_stream"},
			Input:  InputExcludesCache,
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-bedrock @1fe497f1"},
		{Name: "openinference-anthropic-legacy", Instrumentation: "OpenInference anthropic before 0.1.14: prompt without cache",
			Scopes: []string{"openinference.instrumentation.anthropic"}, MinVersion: "0.1", BelowVersion: "0.1.14", Input: InputExcludesCache,
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-anthropic _utils.py before 0.1.14"},
		{Name: "openinference-google-genai-double-cache", Instrumentation: "OpenInference google-genai 0.1.12–0.1.15: cached tokens counted twice in prompt",
			Scopes: []string{"openinference.instrumentation.google_genai"}, MinVersion: "0.1.12", BelowVersion: "0.1.16", Input: InputCountsCacheReadTwice,
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-google-genai (fixed in 0.1.16)"},
		{Name: "openinference-js-anthropic-legacy", Instrumentation: "OpenInference JS anthropic before 0.2: input_tokens as Anthropic reports it, cache never read",
			Scopes: []string{"@arizeai/openinference-instrumentation-anthropic"}, MinVersion: "0.1", BelowVersion: "0.2", Input: InputExcludesCache,
			Source: "Arize-ai/openinference js/packages/openinference-instrumentation-anthropic @1fe497f1 (0.1.x; published 0.1.7–0.1.22 checked)"},
		// The Anthropic TypeScript SDK traces itself (0.134+, on by default
		// when a tracer provider is registered).
		{Name: "anthropic-sdk-ts", Instrumentation: "Anthropic TypeScript SDK's own tracing: gen_ai.usage.input_tokens includes cache read and write",
			Scopes: []string{"com.anthropic.sdk.typescript*"}, Input: InputIncludesCache,
			Source: "@anthropic-ai/sdk 1.14.0 lib/internal/tracing (setUsageSumAttributes), run by internal/realclients"},
		{Name: "openinference", Instrumentation: "OpenInference instrumentors: llm.token_count.prompt is the whole prompt, prompt_details included",
			Scopes: []string{"openinference.instrumentation.*", "@arizeai/openinference-*"}, Input: InputIncludesCache,
			Source: "Arize-ai/openinference spec/semantic_conventions.md; python/instrumentation/openinference-instrumentation-anthropic _utils.py @1fe497f1"},
		// Vercel AI SDK (vercel/ai).
		{Name: "vercel-ai-otel", Instrumentation: "Vercel AI SDK 7 @ai-sdk/otel OpenTelemetry(): gen_ai.usage.input_tokens is the total",
			Scopes: []string{"gen_ai"}, Input: InputIncludesCache,
			Source: "vercel/ai packages/otel @ed857f50 (ai@7.0.77)"},
		{Name: "vercel-ai", Instrumentation: "Vercel AI SDK (ai): 6.0.119+ say the uncached input outright (noCacheTokens); otherwise the provider's own usage object in providerMetadata decides; else the provider package's convention (5: Anthropic without cache)",
			Scopes: nil, Input: InputByProvider,
			Source: "vercel/ai packages/ai/src/telemetry @526e8a54 (ai@6.0.264), packages/ai/core/generate-text @f69601ac (ai@5.0.244), packages/anthropic"},
		// Frameworks.
		{Name: "pydantic-ai", Instrumentation: "pydantic-ai: input includes cache for every provider",
			Scopes: []string{"pydantic-ai"}, Input: InputIncludesCache,
			Source: "pydantic/pydantic-ai pydantic_ai_slim/pydantic_ai/usage.py @1d7eb695 (v2.33.0)"},
		{Name: "litellm", Instrumentation: "LiteLLM OpenTelemetry callback: prompt_tokens includes cache; the split only in metadata.usage_object",
			Scopes: []string{"litellm"}, Input: InputIncludesCache,
			Source: "BerriAI/litellm litellm/integrations/opentelemetry.py @00145a6c"},
		{Name: "strands-litellm", Instrumentation: "Strands Agents with a LiteLLM model (vendor/model): LiteLLM's inclusive numbers",
			Scopes: []string{"strands.telemetry.tracer"}, VendorPrefixedModel: true, Input: InputIncludesCache,
			Source: "strands-agents/sdk-python src/strands/models/litellm.py @1232230d"},
		{Name: "strands", Instrumentation: "Strands Agents (Bedrock, Anthropic): the model API's numbers, input without cache",
			Scopes: []string{"strands.telemetry.tracer"}, Input: InputByProvider,
			Source: "strands-agents/sdk-python src/strands/telemetry/tracer.py @1232230d"},
		{Name: "google-adk", Instrumentation: "Google ADK (gcp.vertex.agent): Gemini's prompt_token_count includes cached content",
			Scopes: []string{"gcp.vertex.agent"}, Input: InputIncludesCache,
			Source: "google/adk-python src/google/adk/telemetry/tracing.py"},
		{Name: "logfire-anthropic-legacy", Instrumentation: "Logfire anthropic up to 4.30: input_tokens without cache (the split in gen_ai.usage.raw)",
			Scopes: []string{"logfire.anthropic"}, MinVersion: "0.1", BelowVersion: "4.31", Input: InputExcludesCache,
			Source: "pydantic/logfire logfire/_internal/integrations/llm_providers/anthropic.py before 9272a064"},
		{Name: "logfire", Instrumentation: "Logfire openai and anthropic (4.31+): input includes cache; the split in gen_ai.usage.raw",
			Scopes: []string{"logfire.*"}, Input: InputIncludesCache,
			Source: "pydantic/logfire logfire/_internal/integrations/llm_providers @e484a6b5 (v4.41.0)"},
		{Name: "openlit", Instrumentation: "OpenLIT: the provider API's numbers (Anthropic without cache, OpenAI with)",
			Scopes: []string{"openlit.otel.tracing", "openlit*"}, Input: InputByProvider,
			Source: "openlit/openlit sdk/python/src/openlit/instrumentation/anthropic @ad20b7b4"},
		{Name: "langfuse", Instrumentation: "Langfuse SDK: usage_details types are disjoint (OpenAI's raw usage object when it holds one)",
			Scopes: nil, Input: InputExcludesCache,
			Source: "langfuse/langfuse-python langfuse/_client/attributes.py @c3c6a09e"},
	}
}

// matches reports whether the reading applies to a span. A reading without
// scopes applies only when named by a dialect.
func (r *Reading) matches(id spanIdentity) bool {
	if !matchScope(r.Scopes, id.scope) || !matchVersion(id.version, r.MinVersion, r.BelowVersion) {
		return false
	}
	if len(r.SpanNames) > 0 && !slices.Contains(r.SpanNames, id.name) {
		return false
	}
	if r.VendorPrefixedModel && !strings.Contains(id.model, "/") {
		return false
	}
	return true
}

// ProviderDefault is the name recorded for spans whose instrumentation is
// not in the table (or whose reading defers to the provider): the provider's
// API convention decides.
const ProviderDefault = "provider-default"

// matchScope reports whether scope matches one of patterns.
func matchScope(patterns []string, scope string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(scope, prefix) {
				return true
			}
		} else if p == scope {
			return true
		}
	}
	return false
}

// matchVersion reports whether version lies in [min, below).
func matchVersion(version, min, below string) bool {
	if min == "" && below == "" {
		return true
	}
	v, ok := parseVersion(version)
	if !ok {
		return false
	}
	if min != "" {
		if m, _ := parseVersion(min); compareVersion(v, m) < 0 {
			return false
		}
	}
	if below != "" {
		if b, _ := parseVersion(below); compareVersion(v, b) >= 0 {
			return false
		}
	}
	return true
}

// parseVersion reads the leading dotted numbers of a version ("0.40.2",
// "v1.2.0b1" → [1 2 0]); ok is false when there is none.
func parseVersion(s string) ([]int, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	var out []int
	for _, part := range strings.Split(s, ".") {
		end := 0
		for end < len(part) && part[end] >= '0' && part[end] <= '9' {
			end++
		}
		if end == 0 {
			break
		}
		n, err := strconv.Atoi(part[:end])
		if err != nil {
			break
		}
		out = append(out, n)
		if end < len(part) {
			break
		}
	}
	return out, len(out) > 0
}

func compareVersion(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

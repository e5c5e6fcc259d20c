package ingest

import (
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
)

func (r InputRule) String() string {
	switch r {
	case InputIncludesCache:
		return "input includes cache"
	case InputExcludesCache:
		return "input excludes cache"
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
	// Input says whether the reported input includes cache tokens.
	Input InputRule
	// OutputExcludesReasoning is true when the reported output count leaves
	// the reasoning (thinking) tokens out, so tally adds them.
	OutputExcludesReasoning bool
	// Source is where the rule was read: repository, file and commit.
	Source string
}

// Readings is the table of known instrumentations, most specific first: the
// first entry whose scope and version match a span decides. It is the one
// place the rules live; the README's instrumentation table and the
// conformance corpus (testdata/conformance) document and verify each.
func Readings() []Reading {
	return []Reading{
		{
			Name: "otel-genai-anthropic", Instrumentation: "OpenTelemetry python-contrib opentelemetry-instrumentation-anthropic (and opentelemetry-util-genai)",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.1", BelowVersion: "0.10",
			Input:  InputIncludesCache,
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-anthropic",
		},
		{
			Name: "openllmetry-anthropic", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic (Python) 0.33 and later",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.33",
			Input:  InputIncludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/opentelemetry/instrumentation/anthropic/utils.py",
		},
		{
			Name: "openllmetry-anthropic-legacy", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic (Python) before 0.33",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.10", BelowVersion: "0.33",
			Input:  InputExcludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic (before the cache-inclusive change)",
		},
		{
			Name: "openllmetry-bedrock", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-bedrock (Python)",
			Scopes: []string{"opentelemetry.instrumentation.bedrock"},
			Input:  InputExcludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-bedrock",
		},
		{
			Name: "openllmetry-js-anthropic", Instrumentation: "OpenLLMetry-JS @traceloop/instrumentation-anthropic",
			Scopes: []string{"@traceloop/instrumentation-anthropic"},
			Input:  InputIncludesCache,
			Source: "traceloop/openllmetry-js packages/instrumentation-anthropic/src/instrumentation.ts",
		},
		{
			Name: "openinference", Instrumentation: "OpenInference instrumentors (Python and JS): llm.token_count.prompt is the total",
			Scopes: []string{"openinference.instrumentation.*", "@arizeai/openinference-instrumentation-*"},
			Input:  InputIncludesCache,
			Source: "Arize-ai/openinference spec/semantic_conventions.md (llm.token_count.prompt includes prompt_details)",
		},
		{
			Name: "vercel-ai", Instrumentation: "Vercel AI SDK (ai): 6 and later report the total and noCacheTokens; 5 passes the provider's numbers through",
			Scopes: []string{"ai"},
			Input:  InputByProvider,
			Source: "vercel/ai packages/ai/src/telemetry",
		},
		{
			Name: "pydantic-ai", Instrumentation: "pydantic-ai: input includes cache for every provider",
			Scopes: []string{"pydantic-ai"},
			Input:  InputIncludesCache,
			Source: "pydantic/pydantic-ai pydantic_ai_slim/pydantic_ai/usage.py",
		},
		{
			Name: "litellm", Instrumentation: "LiteLLM OpenTelemetry callback: prompt_tokens includes cache",
			Scopes: []string{"litellm"},
			Input:  InputIncludesCache,
			Source: "BerriAI/litellm litellm/integrations/opentelemetry.py",
		},
		{
			Name: "openlit", Instrumentation: "OpenLIT: passes the provider API's numbers through",
			Scopes: []string{"openlit.otel.tracing", "openlit*"},
			Input:  InputByProvider,
			Source: "openlit/openlit sdk/python/src/openlit/instrumentation",
		},
		{
			Name: "strands", Instrumentation: "Strands Agents: the model provider's numbers passed through",
			Scopes: []string{"strands.telemetry.tracer", "strands-agents"},
			Input:  InputByProvider,
			Source: "strands-agents/sdk-python src/strands/telemetry/tracer.py",
		},
		{
			Name: "otel-genai", Instrumentation: "OpenTelemetry GenAI instrumentations (python-contrib openai-v2, google-genai, vertexai; js-contrib openai): input includes cache",
			Scopes: []string{"opentelemetry.instrumentation.openai_v2", "opentelemetry.instrumentation.google_genai",
				"opentelemetry.instrumentation.vertexai", "@opentelemetry/instrumentation-openai"},
			Input:  InputIncludesCache,
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai; open-telemetry/opentelemetry-js-contrib",
		},
		{
			Name: "google-adk", Instrumentation: "Google ADK (gcp.vertex.agent): Gemini's prompt_token_count includes cached content",
			Scopes: []string{"gcp.vertex.agent"},
			Input:  InputIncludesCache,
			Source: "google/adk-python src/google/adk/telemetry.py",
		},
	}
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

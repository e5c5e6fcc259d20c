package ingest

import (
	"regexp"
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

// VersionScheme is the shape of an instrumentation's scope versions.
type VersionScheme uint8

// The version schemes.
const (
	// VersionsAny: any version (or none), subject to MinVersion and
	// BelowVersion.
	VersionsAny VersionScheme = iota
	// VersionsRelease: only plain release versions, dotted numbers and
	// nothing else ("0.47.5", OpenLLMetry's scheme: every release of its
	// packages so far). An empty version or a PEP 440 pre- or dev-release
	// under the same scope name is not that project's.
	VersionsRelease
	// VersionsPreRelease: only PEP 440 pre- and dev-releases ("2.0b0.dev",
	// "0.2b0", "1.1rc1"), the OpenTelemetry Python contrib scheme.
	VersionsPreRelease
	// VersionsNone: only spans whose scope has no version at all (the
	// OpenTelemetry contrib instrumentations that call get_tracer(__name__,
	// "")), never a release of another project under the same name.
	VersionsNone
)

func (s VersionScheme) String() string {
	switch s {
	case VersionsRelease:
		return "release versions"
	case VersionsPreRelease:
		return "pre-release versions"
	case VersionsNone:
		return "no version"
	}
	return "any version"
}

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
	// Versions limits the reading to one version scheme, for a scope name
	// two projects share (OpenLLMetry and the OpenTelemetry contrib GenAI
	// instrumentations both name their tracer after their Python module).
	Versions VersionScheme
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
		// OpenLLMetry (traceloop/openllmetry, Python). Its tracers are named
		// after the module (get_tracer(__name__, __version__)), and so were
		// the OpenTelemetry python-contrib GenAI instrumentations': the two
		// projects share the scope names opentelemetry.instrumentation.
		// anthropic, .langchain, .vertexai and .openai_agents. OpenLLMetry
		// always sends its version, and every one of its releases is plain
		// dotted numbers ("0.47.5"); contrib sends PEP 440 pre-releases
		// ("2.0b0.dev") or no version at all. So the OpenLLMetry readings of
		// a shared scope take release versions only (Versions), and the
		// OpenTelemetry readings below take the rest.
		{Name: "openllmetry-anthropic", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic 0.33.4+",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.33.4", Versions: VersionsRelease, Input: InputIncludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/opentelemetry/instrumentation/anthropic/__init__.py _set_token_usage (PR #2175, 144c82a1); get_tracer(__name__, __version__) and release-only version.py @93429cfb"},
		{Name: "openllmetry-anthropic-legacy", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic before 0.33.4",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.1", BelowVersion: "0.33.4", Versions: VersionsRelease, Input: InputExcludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic before 144c82a1"},
		// OpenTelemetry python-contrib's own anthropic and langchain
		// instrumentations (never released to PyPI, removed from contrib by
		// #4903, 16f32f89, for opentelemetry-python-genai) under the module
		// scope name OpenLLMetry also uses, told apart by their PEP 440
		// pre-release version.
		{Name: "otel-genai-contrib", Instrumentation: "OpenTelemetry python-contrib opentelemetry-instrumentation-anthropic / -langchain (2.0b0.dev) under OpenLLMetry's scope names: input includes cache",
			Scopes: []string{"opentelemetry.instrumentation.anthropic", "opentelemetry.instrumentation.langchain"}, Versions: VersionsPreRelease, Input: InputIncludesCache,
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-anthropic: __init__.py get_tracer(__name__, …) @3cd9a74f, version.py 2.0b0.dev, messages_extractors.py extract_usage_tokens input = input + cache_creation + cache_read @ff7f60ef (spans of 81db857c–16f32f89 carry util-genai's scope, see otel-genai); -langchain __init__.py get_tracer(__name__, \"2.0b0.dev\") @60a670f0, callback_handler.py input_tokens = LangChain usage_metadata.input_tokens (cache included)"},
		{Name: "openllmetry-bedrock", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-bedrock: Anthropic's uncached input_tokens, cache from response headers",
			Scopes: []string{"opentelemetry.instrumentation.bedrock"}, Input: InputExcludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-bedrock @93429cfb"},
		{Name: "openllmetry", Instrumentation: "OpenLLMetry openai, openai-agents, langchain, crewai, vertexai (the SDK's inclusive numbers)",
			Scopes: []string{"opentelemetry.instrumentation.openai", "opentelemetry.instrumentation.openai.*", "opentelemetry.instrumentation.openai_agents",
				"opentelemetry.instrumentation.langchain", "opentelemetry.instrumentation.crewai*", "opentelemetry.instrumentation.vertexai"},
			Versions: VersionsRelease, Input: InputIncludesCache,
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-openai (scopes …openai.v0, …openai.v1), -openai-agents, -langchain, -crewai, -vertexai span_utils.py (input = prompt_token_count) @93429cfb"},
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
				"opentelemetry.instrumentation.google_genai", "opentelemetry.instrumentation.vertexai", "opentelemetry.instrumentation.openai_agents",
				"@opentelemetry/instrumentation-openai"},
			Input:  InputIncludesCache,
			Source: "open-telemetry/opentelemetry-python-genai instrumentation/opentelemetry-instrumentation-genai-anthropic/.../messages_extractors.py @1f26b4ed; opentelemetry-python-contrib instrumentation-genai @466ae4c0 (vertexai and openai-agents-v2 get_tracer(__name__, \"\"): no version)"},
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
	switch r.Versions {
	case VersionsRelease:
		if !isReleaseVersion(id.version) {
			return false
		}
	case VersionsPreRelease:
		if !isPreReleaseVersion(id.version) {
			return false
		}
	case VersionsNone:
		if strings.TrimSpace(id.version) != "" {
			return false
		}
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

// matchVersion reports whether version lies in [min, below). A pre-release
// sorts before its release, as PEP 440 and semver order them: 0.33.4b1 is
// below 0.33.4.
func matchVersion(version, min, below string) bool {
	if min == "" && below == "" {
		return true
	}
	if _, ok := parseVersion(version); !ok {
		return false
	}
	if min != "" && compareVersions(version, min) < 0 {
		return false
	}
	if below != "" && compareVersions(version, below) >= 0 {
		return false
	}
	return true
}

// compareVersions orders two parsable versions by their dotted numbers, a
// pre-release before the release of the same numbers.
func compareVersions(a, b string) int {
	x, _ := parseVersion(a)
	y, _ := parseVersion(b)
	if c := compareVersion(x, y); c != 0 {
		return c
	}
	switch pa, pb := isPreReleaseVersion(a), isPreReleaseVersion(b); {
	case pa && !pb:
		return -1
	case pb && !pa:
		return 1
	}
	return 0
}

// releaseVersion is a plain release: dotted numbers, nothing else.
var releaseVersion = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)*$`)

// preReleaseVersion is a PEP 440 (or semver) pre- or dev-release: dotted
// numbers, then an alpha, beta or release-candidate tag and/or a dev tag
// ("2.0b0.dev", "0.2b0", "1.1rc1", "0.61b0.dev0", "1.0.0-beta.2").
var preReleaseVersion = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)*(([-_.]?(a|b|c|rc|alpha|beta|pre|preview)([-_.]?[0-9]+)?)([-_.]?dev([-_.]?[0-9]+)?)?|[-_.]?dev([-_.]?[0-9]+)?)$`)

func isReleaseVersion(s string) bool {
	return releaseVersion.MatchString(strings.ToLower(strings.TrimSpace(s)))
}

func isPreReleaseVersion(s string) bool {
	return preReleaseVersion.MatchString(strings.ToLower(strings.TrimSpace(s)))
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

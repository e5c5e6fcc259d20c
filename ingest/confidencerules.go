package ingest

// Providers whose models bill in the ways the rules below depend on.
var (
	// openAIProviders discount cached input automatically (prompts of
	// 1,024 tokens and more) and count reasoning inside completion tokens.
	openAIProviders = []string{"openai", "azure.ai.openai"}
	// geminiProviders bill thoughts as output apart from
	// candidatesTokenCount, and discount cached content.
	geminiProviders = []string{"gcp.gemini", "gcp.vertex_ai", "gcp.gen_ai"}
)

// ConfidenceRules is the table of known gaps: for each confidence level
// the first rule that applies to a span decides (an upper- and a
// lower-bound rule together make the cost approximate). Each cites the
// instrumentation source it was read from, like the readings do; the
// README's instrumentation table and docs/instrumentations.md list them,
// and the conformance corpus holds scenarios for them.
func ConfidenceRules() []ConfidenceRule {
	return []ConfidenceRule{
		// Corrections the readings make.
		{Name: "openinference-google-genai-double-cache", Instrumentation: "OpenInference google-genai 0.1.12–0.1.15",
			Scopes: []string{"openinference.instrumentation.google_genai"}, MinVersion: "0.1.12", BelowVersion: "0.1.16", Gap: GapCorrected,
			Reason: "the prompt count includes the cached tokens twice; the reading takes them out once",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-google-genai (fixed in 0.1.16)"},

		// No cached-input count: cache reads billed as fresh input.
		{Name: "otel-openai-v2-no-cache-read", Instrumentation: "OpenTelemetry python-contrib opentelemetry-instrumentation-openai-v2 2.0b0–2.4b0 (chat)",
			Scopes: []string{"opentelemetry.instrumentation.openai_v2"}, Providers: openAIProviders, Gap: GapNoCacheRead,
			Reason: "sends prompt_tokens and completion_tokens only, never prompt_tokens_details.cached_tokens: cache reads are billed at the full input price",
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-openai-v2/src/opentelemetry/instrumentation/openai_v2/patch.py @f691ef4b (2.0b0–2.4b0; get_tracer(__name__, \"\"): no scope version)"},
		{Name: "otel-js-openai-no-cache-read", Instrumentation: "OpenTelemetry JS contrib @opentelemetry/instrumentation-openai 0.1.0–0.19.0",
			Scopes: []string{"@opentelemetry/instrumentation-openai"}, Providers: openAIProviders, Gap: GapNoCacheRead,
			Reason: "sends input and output tokens only (chat and Responses API), no cached-token count: cache reads are billed at the full input price",
			Source: "open-telemetry/opentelemetry-js-contrib packages/instrumentation-openai/src/instrumentation.ts @27e172a9 (v0.1.0–v0.19.0)"},
		{Name: "openllmetry-openai-no-cache-read", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-openai before 0.39.2",
			Scopes: []string{"opentelemetry.instrumentation.openai", "opentelemetry.instrumentation.openai.*"}, MinVersion: "0.1", BelowVersion: "0.39.2",
			Versions: VersionsRelease, Providers: openAIProviders, Gap: GapNoCacheRead,
			Reason: "sends no cached-token count before 0.39.2: cache reads are billed at the full input price",
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-openai shared/__init__.py (cache read since 0.39.2) @93429cfb"},
		{Name: "openllmetry-js-openai-no-cache-read", Instrumentation: "OpenLLMetry-JS @traceloop/instrumentation-openai (chat)",
			Scopes: []string{"@traceloop/instrumentation-openai"}, Providers: openAIProviders, Gap: GapNoCacheRead,
			Reason: "chat spans carry prompt and completion tokens, never cached tokens: cache reads are billed at the full input price",
			Source: "traceloop/openllmetry-js packages/instrumentation-openai/src/instrumentation.ts @1faf69de"},
		{Name: "otel-google-genai-contrib-no-cache-read", Instrumentation: "OpenTelemetry python-contrib opentelemetry-instrumentation-google-genai 0.1b0–0.7b1",
			Scopes: []string{"opentelemetry.instrumentation.google_genai"}, MinVersion: "0.1", BelowVersion: "0.8", Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "input is prompt_token_count with cached content inside, and cached_content_token_count is never sent: cache reads are billed at the full input price (0.1b0–0.6b0 streaming also summed each chunk's cumulative usage)",
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-google-genai/src/opentelemetry/instrumentation/google_genai/generate_content.py @3b3502de (0.7b1), @49011ae4 (0.1b0 streaming sum, fixed by 1f64f15d in 0.7b0)"},
		{Name: "otel-vertexai-contrib-no-cache-read", Instrumentation: "OpenTelemetry python-contrib opentelemetry-instrumentation-vertexai 2.0b0–2.2b0",
			Scopes: []string{"opentelemetry.instrumentation.vertexai"}, Versions: VersionsNone, Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "input is prompt_token_count and the cached count is never sent: cache reads are billed at the full input price",
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-vertexai/src/opentelemetry/instrumentation/vertexai/utils.py @5d81f09a (2.0b0–2.2b0; get_tracer(__name__, \"\"): no scope version)"},
		{Name: "openllmetry-vertexai-no-cache-read", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-vertexai before 0.62.0",
			Scopes: []string{"opentelemetry.instrumentation.vertexai"}, MinVersion: "0.1", BelowVersion: "0.62.0", Versions: VersionsRelease, Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "sends no cached-content count before 0.62.0: cache reads are billed at the full input price",
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-vertexai/opentelemetry/instrumentation/vertexai/span_utils.py (cache read since aa4a4698, 0.62.0) @93429cfb"},
		{Name: "openinference-openai-no-cache-read", Instrumentation: "OpenInference openai before 0.1.23",
			Scopes: []string{"openinference.instrumentation.openai"}, MinVersion: "0.1", BelowVersion: "0.1.23", Providers: openAIProviders, Gap: GapNoCacheRead,
			Reason: "llm.token_count.prompt_details.cache_read is sent for chat only since 0.1.23: cache reads are billed at the full input price",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-openai _response_attributes_extractor.py (cache read since 2db59185, 0.1.23) @1fe497f1"},
		{Name: "openinference-google-genai-no-cache-read", Instrumentation: "OpenInference google-genai before 0.1.12",
			Scopes: []string{"openinference.instrumentation.google_genai"}, MinVersion: "0.1", BelowVersion: "0.1.12", Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "the cached-content count is sent since 0.1.12: cache reads are billed at the full input price",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-google-genai _utils.py (cache read since 01ed0c10, 0.1.12) @1fe497f1"},
		{Name: "openinference-vertexai-no-cache-read", Instrumentation: "OpenInference vertexai",
			Scopes: []string{"openinference.instrumentation.vertexai"}, Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "sends prompt and completion counts only, no cached-content count: cache reads are billed at the full input price",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-vertexai/src/openinference/instrumentation/vertexai/_wrapper.py @1fe497f1 (to 0.1.18)"},
		{Name: "openinference-google-adk-no-cache-read", Instrumentation: "OpenInference google-adk",
			Scopes: []string{"openinference.instrumentation.google_adk"}, Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "sends no cached-content count: cache reads are billed at the full input price",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-google-adk/src/openinference/instrumentation/google_adk/_wrappers.py @1fe497f1 (to 0.1.20)"},
		{Name: "google-adk-no-cache-read", Instrumentation: "Google ADK (gcp.vertex.agent) with Gemini",
			Scopes: []string{"gcp.vertex.agent"}, Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "call_llm carries prompt_token_count and candidates_token_count, never cached_content_token_count: cache reads are billed at the full input price",
			Source: "google/adk-python src/google/adk/telemetry/tracing.py trace_call_llm (usage since ea69c909, 1.5.0; read to 77bf325d, 1.27)"},
		{Name: "strands-gemini-no-cache-read", Instrumentation: "Strands Agents with its Gemini model",
			Scopes: []string{"strands.telemetry.tracer"}, Providers: geminiProviders, Gap: GapNoCacheRead,
			Reason: "the Gemini model passes on prompt_token_count and no cached-content count: cache reads are billed at the full input price",
			Source: "strands-agents/sdk-python src/strands/models/gemini.py (since 54bc162f, 1.10.0) @1232230d"},

		// Counts that can only be too high.
		{Name: "openllmetry-anthropic-stream-output", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic 0.33.4+ (streamed messages)",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.33.4", Versions: VersionsRelease, Streaming: true, Gap: GapOverCount,
			Reason: "adds message_delta's cumulative output_tokens to message_start's (usually 1–5 tokens, more with several deltas), which the span does not hold: the output is a few tokens too high",
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/opentelemetry/instrumentation/anthropic/streaming.py _process_response_item (since 144c82a1, 0.33.4; still in 0.62.1 @93429cfb); the Anthropic SDK assigns it: anthropics/anthropic-sdk-python src/anthropic/lib/streaming/_messages.py accumulate_event @00568be7"},

		// No reasoning count, output without it.
		{Name: "otel-google-genai-contrib-no-thoughts", Instrumentation: "OpenTelemetry python-contrib opentelemetry-instrumentation-google-genai 0.1b0–0.7b1",
			Scopes: []string{"opentelemetry.instrumentation.google_genai"}, MinVersion: "0.1", BelowVersion: "0.8", Providers: geminiProviders, Gap: GapNoReasoning,
			Reason: "output is candidates_token_count, which leaves thoughts out, and thoughts_token_count is never sent: a thinking model's thoughts go unbilled",
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-google-genai/src/opentelemetry/instrumentation/google_genai/generate_content.py @3b3502de (0.1b0–0.7b1)"},
		{Name: "otel-vertexai-contrib-no-thoughts", Instrumentation: "OpenTelemetry python-contrib opentelemetry-instrumentation-vertexai 2.0b0–2.2b0",
			Scopes: []string{"opentelemetry.instrumentation.vertexai"}, Versions: VersionsNone, Providers: geminiProviders, Gap: GapNoReasoning,
			Reason: "output is candidates_token_count, without thoughts, and no thoughts count is sent: a thinking model's thoughts go unbilled",
			Source: "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-vertexai/src/opentelemetry/instrumentation/vertexai/utils.py @5d81f09a"},
		{Name: "openllmetry-vertexai-no-thoughts", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-vertexai",
			Scopes: []string{"opentelemetry.instrumentation.vertexai"}, Versions: VersionsRelease, Providers: geminiProviders, Gap: GapNoReasoning,
			Reason: "output is candidates_token_count, without thoughts, and no thoughts count is sent: a thinking model's thoughts go unbilled",
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-vertexai/opentelemetry/instrumentation/vertexai/span_utils.py set_model_response_attributes @93429cfb"},
		{Name: "openinference-vertexai-no-thoughts", Instrumentation: "OpenInference vertexai",
			Scopes: []string{"openinference.instrumentation.vertexai"}, Providers: geminiProviders, Gap: GapNoReasoning,
			Reason: "completion is candidates_token_count, without thoughts, and no reasoning count is sent: a thinking model's thoughts go unbilled",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-vertexai/src/openinference/instrumentation/vertexai/_wrapper.py @1fe497f1 (to 0.1.18)"},
		{Name: "openinference-google-genai-no-thoughts", Instrumentation: "OpenInference google-genai before 0.1.4",
			Scopes: []string{"openinference.instrumentation.google_genai"}, MinVersion: "0.1", BelowVersion: "0.1.4", Providers: geminiProviders, Gap: GapNoReasoning,
			Reason: "completion is candidates_token_count without thoughts before 0.1.4: a thinking model's thoughts go unbilled",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-google-genai (thoughts in completion since 921ff073, 0.1.4) @1fe497f1"},
		{Name: "google-adk-no-thoughts", Instrumentation: "Google ADK (gcp.vertex.agent) with Gemini",
			Scopes: []string{"gcp.vertex.agent"}, Providers: geminiProviders, Gap: GapNoReasoning,
			Reason: "output is candidates_token_count, without thoughts (1.27 adds them only as gen_ai.usage.experimental.reasoning_tokens): a thinking model's thoughts go unbilled",
			Source: "google/adk-python src/google/adk/telemetry/tracing.py trace_call_llm (ea69c909, 1.5.0; 77bf325d, 1.27)"},
		{Name: "openlit-vertexai-no-thoughts", Instrumentation: "OpenLIT vertexai",
			Scopes: []string{"openlit.otel.tracing", "openlit*"}, Providers: []string{"gcp.vertex_ai"}, Gap: GapNoReasoning,
			Reason: "output is candidates_token_count and thoughts_token_count is never sent: a thinking model's thoughts go unbilled",
			Source: "openlit/openlit sdk/python/src/openlit/instrumentation/vertexai/utils.py @ad20b7b4 (py-1.45.0)"},

		// Input without the cache, and no cache counts.
		{Name: "openllmetry-bedrock-no-cache", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-bedrock before 0.62.0",
			Scopes: []string{"opentelemetry.instrumentation.bedrock"}, MinVersion: "0.1", BelowVersion: "0.62.0", Versions: VersionsRelease, Gap: GapCacheLeftOut,
			Reason: "input is Bedrock's uncached input, and the cache read and write counts went only to a metric (gen_ai.prompt_caching marks the span): cached tokens go unbilled",
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-bedrock/opentelemetry/instrumentation/bedrock/prompt_caching.py, span_utils.py @4643b882 (0.61.0); counts on the span since 0c0cf0e3 (0.62.0)"},
		{Name: "openllmetry-anthropic-legacy-no-cache", Instrumentation: "OpenLLMetry opentelemetry-instrumentation-anthropic before 0.33.4",
			Scopes: []string{"opentelemetry.instrumentation.anthropic"}, MinVersion: "0.1", BelowVersion: "0.33.4", Versions: VersionsRelease, Gap: GapCacheLeftOut,
			Reason: "input is Anthropic's uncached input_tokens and no cache counts are sent: cached tokens go unbilled",
			Source: "traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic before 144c82a1 (#2175, 0.33.4)"},
		{Name: "openinference-anthropic-legacy-no-cache", Instrumentation: "OpenInference anthropic before 0.1.14",
			Scopes: []string{"openinference.instrumentation.anthropic"}, MinVersion: "0.1", BelowVersion: "0.1.14", Gap: GapCacheLeftOut,
			Reason: "the prompt count is Anthropic's uncached input_tokens and no cache counts are sent: cached tokens go unbilled",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-anthropic _utils.py _get_token_counts (cache counts since d6765e0e, 0.1.15) @1fe497f1"},
		{Name: "openinference-bedrock-converse-no-cache", Instrumentation: "OpenInference bedrock Converse before 0.1.36",
			Scopes: []string{"openinference.instrumentation.bedrock"}, MinVersion: "0.1", BelowVersion: "0.1.36", Gap: GapCacheLeftOut,
			Reason: "the prompt count is Bedrock's uncached inputTokens and the cache counts are sent since 0.1.36: cached tokens go unbilled",
			Source: "Arize-ai/openinference python/instrumentation/openinference-instrumentation-bedrock _converse_attributes.py (cache counts since 282a67be, 0.1.36) @1fe497f1"},
		{Name: "strands-anthropic-no-cache", Instrumentation: "Strands Agents with its Anthropic model",
			Scopes: []string{"strands.telemetry.tracer"}, Providers: []string{"anthropic"}, Gap: GapCacheLeftOut,
			Reason: "the Anthropic model copies input, output and total from the stream's metadata and drops the cache counts; input is Anthropic's uncached input_tokens: cached tokens go unbilled",
			Source: "strands-agents/sdk-python src/strands/models/anthropic.py format_chunk (metadata) @1232230d (to 1.40.0)"},
		{Name: "google-adk-claude-no-cache", Instrumentation: "Google ADK (gcp.vertex.agent) with its Claude model",
			Scopes: []string{"gcp.vertex.agent"}, Providers: []string{"anthropic"}, Gap: GapCacheLeftOut,
			Reason: "prompt_token_count is Anthropic's uncached input_tokens and no cache fields are set: cached tokens go unbilled",
			Source: "google/adk-python src/google/adk/models/anthropic_llm.py (read to 1.27)"},
	}
}

package ingest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/schema"
)

// gist is the part of a span row that the alias tests check.
type gist struct {
	SpanType, Operation, Provider, Model, RequestModel, ResponseModel string
	AgentName, ConversationID, UserID, ToolName, ToolCallID           string
	In, Out, CacheRead, CacheWrite, Reasoning                         uint64
	UsageMode                                                         string
	Unreconciled                                                      uint8
	CostSource                                                        string
	CostTotal                                                         float64
}

func gistOf(s schema.Span) gist {
	return gist{
		SpanType: s.SpanType, Operation: s.Operation, Provider: s.Provider, Model: s.Model,
		RequestModel: s.RequestModel, ResponseModel: s.ResponseModel,
		AgentName: s.AgentName, ConversationID: s.ConversationID, UserID: s.UserID,
		ToolName: s.ToolName, ToolCallID: s.ToolCallID,
		In: s.InputTokens, Out: s.OutputTokens, CacheRead: s.CacheReadTokens,
		CacheWrite: s.CacheWriteTokens, Reasoning: s.ReasoningTokens,
		UsageMode: s.UsageMode, Unreconciled: s.UsageUnreconciled,
		CostSource: s.CostSource, CostTotal: s.CostTotal,
	}
}

// SHA-256 of `{"city":"Paris","units":"c"}`, computed with sha256sum.
const parisArgsHash = "2c790ae63cf4acf84f31cbd51586a2558f5f694a1ccb9653e3683409e93b721d"

func TestNormalizeAliases(t *testing.T) {
	cases := []struct {
		name     string
		scope    string
		res      []any
		spanName string
		attrs    []any
		usage    UsagePolicy
		want     gist
		// wantAttrs must all be present in AttrKeys/AttrValues; wantGone
		// must be absent (consumed into a column or content).
		wantAttrs map[string]string
		wantGone  []string
		// wantContent maps a content row's source key to its kind.
		wantContent map[string]string
		wantArgs    string
	}{
		{
			// ai 6.0.0–6.0.118 report the total without noCacheTokens; the
			// Anthropic usage object in providerMetadata says 50 uncached.
			name:     "vercel 6 before noCacheTokens: the provider usage object decides",
			scope:    "ai",
			spanName: "ai.generateText.doGenerate",
			attrs: []any{
				"ai.model.provider", "anthropic.messages",
				"ai.model.id", "claude-sonnet-4-5",
				"ai.usage.inputTokens", int64(7250),
				"ai.usage.cachedInputTokens", int64(6000),
				"ai.usage.outputTokens", int64(400),
				"ai.response.providerMetadata", "{\"anthropic\":{\"usage\":{\"input_tokens\":50,\"cache_read_input_tokens\":6000,\"cache_creation_input_tokens\":1200,\"output_tokens\":400},\"cacheCreationInputTokens\":1200}}",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic", Model: "claude-sonnet-4-5", RequestModel: "claude-sonnet-4-5",
				In: 7250, Out: 400, CacheRead: 6000, CacheWrite: 1200, UsageMode: "inclusive", CostSource: "unpriced"},
		},
		{
			// ai 5 passes Anthropic's 50 through; the same object gives 50 + 6000 + 1200.
			name:     "vercel 5 with anthropic: input without cache",
			scope:    "ai",
			spanName: "ai.generateText.doGenerate",
			attrs: []any{
				"ai.model.provider", "anthropic.messages",
				"ai.model.id", "claude-sonnet-4-5",
				"ai.usage.promptTokens", int64(50),
				"ai.usage.completionTokens", int64(400),
				"ai.response.providerMetadata", "{\"anthropic\":{\"usage\":{\"input_tokens\":50,\"cache_read_input_tokens\":6000,\"cache_creation_input_tokens\":1200,\"output_tokens\":400},\"cacheCreationInputTokens\":1200}}",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic", Model: "claude-sonnet-4-5", RequestModel: "claude-sonnet-4-5",
				In: 7250, Out: 400, CacheRead: 6000, CacheWrite: 1200, UsageMode: "additive", CostSource: "unpriced"},
		},
		{
			// ai 5 with @ai-sdk/google: outputTokens is candidatesTokenCount,
			// thoughts reported apart; Google bills thoughts as output:
			// 420 + 980 = 1400.
			name:     "vercel 5 with google: output without thoughts",
			scope:    "ai",
			spanName: "ai.generateText.doGenerate",
			attrs: []any{
				"ai.model.provider", "google.generative-ai",
				"ai.model.id", "gemini-2.5-flash",
				"ai.usage.inputTokens", int64(9600),
				"ai.usage.outputTokens", int64(420),
				"ai.usage.reasoningTokens", int64(980),
				"ai.usage.cachedInputTokens", int64(7168),
				"ai.response.providerMetadata", "{\"google\":{\"usageMetadata\":{\"promptTokenCount\":9600,\"candidatesTokenCount\":420,\"cachedContentTokenCount\":7168,\"thoughtsTokenCount\":980}}}",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "gcp.gemini", Model: "gemini-2.5-flash", RequestModel: "gemini-2.5-flash",
				In: 9600, Out: 1400, CacheRead: 7168, Reasoning: 980, UsageMode: "inclusive", CostSource: "unpriced"},
		},
		{
			name:     "bedrock application inference profile ARN as the model",
			scope:    "strands.telemetry.tracer",
			spanName: "chat",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.system", "strands-agents",
				"gen_ai.request.model", "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
				"gen_ai.usage.input_tokens", int64(100),
				"gen_ai.usage.output_tokens", int64(10),
			},
			// Bedrock by the ARN, although the framework names itself as the
			// system; the profile id names no model, so it stays unpriced.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "aws.bedrock",
				Model:        "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
				RequestModel: "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
				In:           100, Out: 10, UsageMode: "inclusive", CostSource: "unpriced"},
		},
		{
			name:     "ADK tool call without an id: the placeholder identifies nothing",
			scope:    "gcp.vertex.agent",
			spanName: "execute_tool get_weather",
			attrs: []any{
				"gen_ai.operation.name", "execute_tool",
				"gen_ai.tool.name", "get_weather",
				"gen_ai.tool.call.id", "<not specified>",
			},
			want:      gist{SpanType: "tool", Operation: "execute_tool", ToolName: "get_weather"},
			wantAttrs: map[string]string{"gen_ai.tool.call.id": "<not specified>"},
		},
		{
			name:     "LiteLLM names the operation after the call type",
			scope:    "litellm",
			spanName: "litellm_request",
			attrs: []any{
				"gen_ai.operation.name", "acompletion",
				"gen_ai.system", "openai",
				"gen_ai.request.model", "gpt-4o",
				"gen_ai.usage.input_tokens", int64(100),
				"gen_ai.usage.output_tokens", int64(10),
				"gen_ai.cost.total_cost", 0.00035,
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "openai", Model: "gpt-4o", RequestModel: "gpt-4o",
				In: 100, Out: 10, UsageMode: "inclusive", CostSource: "client", CostTotal: 0.00035},
			wantAttrs: map[string]string{"gen_ai.operation.name": "acompletion", AttrUsageReading: "litellm"},
		},
		{
			name:     "spec 1.41 chat, openai inclusive",
			spanName: "chat gpt-4o",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "openai",
				"gen_ai.request.model", "gpt-4o",
				"gen_ai.response.model", "gpt-4o-2024-08-06",
				"gen_ai.conversation.id", "conv-1",
				"gen_ai.usage.input_tokens", int64(1200),
				"gen_ai.usage.output_tokens", int64(300),
				"gen_ai.usage.cache_read.input_tokens", int64(1000),
				"gen_ai.usage.reasoning.output_tokens", int64(100),
				"gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`,
				"gen_ai.output.messages", `[{"role":"assistant","parts":[]}]`,
				"gen_ai.system_instructions", `[{"type":"text","content":"be brief"}]`,
				"gen_ai.tool.definitions", []any{map[string]any{"name": "get_weather"}},
				"server.address", "api.openai.com",
			},
			// cache 1000 <= input 1200 and openai is inclusive: input stays 1200.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "openai",
				Model: "gpt-4o-2024-08-06", RequestModel: "gpt-4o", ResponseModel: "gpt-4o-2024-08-06",
				ConversationID: "conv-1", In: 1200, Out: 300, CacheRead: 1000, Reasoning: 100,
				UsageMode: "inclusive", CostSource: "unpriced"},
			// Usage is kept as reported, so a corrected reading can be applied later.
			wantAttrs: map[string]string{"server.address": "api.openai.com", "gen_ai.usage.input_tokens": "1200",
				"gen_ai.usage.cache_read.input_tokens": "1000", AttrUsageReading: ProviderDefault},
			wantGone: []string{"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model",
				"gen_ai.response.model", "gen_ai.conversation.id"},
			wantContent: map[string]string{
				"gen_ai.input.messages":      schema.ContentInputMessages,
				"gen_ai.output.messages":     schema.ContentOutputMessages,
				"gen_ai.system_instructions": schema.ContentSystemInstructions,
				"gen_ai.tool.definitions":    schema.ContentToolDefinitions,
			},
		},
		{
			name:     "newer cache_write beats 1.40 cache_creation, anthropic additive by numbers",
			spanName: "chat claude",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "anthropic",
				"gen_ai.request.model", "claude-sonnet-4-5",
				"gen_ai.usage.input_tokens", int64(100),
				"gen_ai.usage.output_tokens", int64(20),
				"gen_ai.usage.cache_read.input_tokens", int64(200),
				"gen_ai.usage.cache_write.input_tokens", int64(50),
				"gen_ai.usage.cache_creation.input_tokens", int64(999),
			},
			// cache 200+50 = 250 > input 100: additive, input = 100+250 = 350.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic",
				Model: "claude-sonnet-4-5", RequestModel: "claude-sonnet-4-5",
				In: 350, Out: 20, CacheRead: 200, CacheWrite: 50,
				UsageMode: "additive", CostSource: "unpriced"},
			// The losing alias stays visible.
			wantAttrs: map[string]string{"gen_ai.usage.cache_creation.input_tokens": "999"},
		},
		{
			name:     "anthropic-style report without cache in input",
			spanName: "chat",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "anthropic",
				"gen_ai.request.model", "claude-opus-4-1",
				"gen_ai.usage.input_tokens", int64(100),
				"gen_ai.usage.output_tokens", int64(10),
				"gen_ai.usage.cache_read.input_tokens", int64(900),
			},
			// 900 > 100: the input excluded the cache; 100 + 900 = 1000.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic",
				Model: "claude-opus-4-1", RequestModel: "claude-opus-4-1",
				In: 1000, Out: 10, CacheRead: 900, UsageMode: "additive", CostSource: "unpriced"},
		},
		{
			name:     "openai-style report with cache inside input",
			spanName: "chat",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "openai",
				"gen_ai.request.model", "gpt-4o",
				"gen_ai.usage.input_tokens", int64(1000),
				"gen_ai.usage.output_tokens", int64(10),
				"gen_ai.usage.cache_read.input_tokens", int64(900),
			},
			// 900 <= 1000 and openai is inclusive: 1000 stays.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "openai",
				Model: "gpt-4o", RequestModel: "gpt-4o",
				In: 1000, Out: 10, CacheRead: 900, UsageMode: "inclusive", CostSource: "unpriced"},
		},
		{
			name:     "deprecated names",
			spanName: "openai.chat",
			attrs: []any{
				"gen_ai.system", "openai",
				"gen_ai.request.model", "gpt-4o-mini",
				"gen_ai.usage.prompt_tokens", int64(10),
				"gen_ai.usage.completion_tokens", int64(5),
				"gen_ai.prompt", "Say hi",
				"gen_ai.completion", "Hi",
			},
			// No operation, kind or tool: a model present means inference.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "openai",
				Model: "gpt-4o-mini", RequestModel: "gpt-4o-mini",
				In: 10, Out: 5, UsageMode: "inclusive", CostSource: "unpriced"},
			wantGone: []string{"gen_ai.system", "gen_ai.prompt"},
			wantContent: map[string]string{
				"gen_ai.prompt":     schema.ContentInputMessages,
				"gen_ai.completion": schema.ContentOutputMessages,
			},
		},
		{
			name:     "ints as doubles and strings",
			spanName: "chat",
			attrs: []any{
				"gen_ai.operation.name", "Chat",
				"gen_ai.provider.name", "openai",
				"gen_ai.request.model", "gpt-4o",
				"gen_ai.usage.input_tokens", 40.0,
				"gen_ai.usage.output_tokens", "7",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "openai",
				Model: "gpt-4o", RequestModel: "gpt-4o",
				In: 40, Out: 7, UsageMode: "inclusive", CostSource: "unpriced"},
		},
		{
			name:     "openinference LLM, scope policy says inclusive",
			scope:    "openinference.instrumentation.anthropic",
			usage:    UsagePolicy{Readings: map[string]bool{"openinference.instrumentation.anthropic": false}},
			spanName: "Messages",
			attrs: []any{
				"openinference.span.kind", "LLM",
				"llm.model_name", "claude-sonnet-4-5-20250929",
				"llm.provider", "anthropic",
				"llm.token_count.prompt", int64(2000),
				"llm.token_count.completion", int64(150),
				"llm.token_count.prompt_details.cache_read", int64(1500),
				"input.value", `{"messages":[]}`,
				"session.id", "sess-9",
			},
			// cache 1500 <= 2000 and the scope is configured inclusive: 2000 stays.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic",
				Model: "claude-sonnet-4-5-20250929", ConversationID: "sess-9",
				In: 2000, Out: 150, CacheRead: 1500, UsageMode: "inclusive", CostSource: "unpriced"},
			wantAttrs:   map[string]string{"openinference.span.kind": "LLM"},
			wantContent: map[string]string{"input.value": schema.ContentInputMessages},
		},
		{
			name:     "openinference LLM without a scope: the dialect's prompt count includes cache",
			spanName: "Messages",
			attrs: []any{
				"openinference.span.kind", "LLM",
				"llm.model_name", "claude-sonnet-4-5-20250929",
				"llm.provider", "anthropic",
				"llm.token_count.prompt", int64(2000),
				"llm.token_count.completion", int64(150),
				"llm.token_count.prompt_details.cache_read", int64(1500),
			},
			// OpenInference's llm.token_count.prompt is the whole prompt,
			// prompt_details included (Arize-ai/openinference
			// spec/semantic_conventions.md), whatever the provider: 2000
			// stands, although anthropic's API default is exclusive.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic",
				Model: "claude-sonnet-4-5-20250929",
				In:    2000, Out: 150, CacheRead: 1500, UsageMode: "inclusive", CostSource: "unpriced"},
		},
		{
			name:     "openinference TOOL with input.value and output.value",
			spanName: "get_weather",
			attrs: []any{
				"openinference.span.kind", "TOOL",
				"tool.name", "get_weather",
				"input.value", `{"city":"Paris","units":"c"}`,
				"output.value", `{"temp":21}`,
			},
			want:      gist{SpanType: "tool", Operation: "execute_tool", ToolName: "get_weather"},
			wantGone:  []string{"tool.name", "input.value", "output.value"},
			wantArgs:  parisArgsHash,
			wantAttrs: map[string]string{"openinference.span.kind": "TOOL"},
			wantContent: map[string]string{
				"input.value":  schema.ContentToolArguments,
				"output.value": schema.ContentToolResult,
			},
		},
		{
			name:     "openinference CHAIN is an agent span",
			spanName: "RunnableSequence",
			attrs:    []any{"openinference.span.kind", "CHAIN"},
			want:     gist{SpanType: "agent", Operation: "invoke_workflow"},
		},
		{
			name:     "openinference RETRIEVER is other",
			spanName: "retrieve",
			attrs:    []any{"openinference.span.kind", "RETRIEVER"},
			want:     gist{SpanType: "other", Operation: "retrieval"},
		},
		{
			name:     "traceloop tool",
			spanName: "search_docs.tool",
			attrs: []any{
				"traceloop.span.kind", "tool",
				"traceloop.entity.name", "search_docs",
				"traceloop.entity.input", `{"query":"refund policy"}`,
				"traceloop.entity.output", `["doc1"]`,
				"traceloop.association.properties.session_id", "s-1",
				"traceloop.association.properties.user_id", "u-1",
			},
			want: gist{SpanType: "tool", Operation: "execute_tool", ToolName: "search_docs",
				ConversationID: "s-1", UserID: "u-1"},
			// sha256sum of `{"query":"refund policy"}`.
			wantArgs: "cfb7b9e24993e2079be817f26458fbfe854c97ecca332a83bf03bc33912064a0",
			wantContent: map[string]string{
				"traceloop.entity.input":  schema.ContentToolArguments,
				"traceloop.entity.output": schema.ContentToolResult,
			},
		},
		{
			name:     "traceloop agent",
			spanName: "planner.agent",
			attrs: []any{
				"traceloop.span.kind", "agent",
				"traceloop.entity.name", "planner",
			},
			want:     gist{SpanType: "agent", Operation: "invoke_agent", AgentName: "planner"},
			wantGone: []string{"traceloop.entity.name"},
		},
		{
			name:     "traceloop workflow name is not an agent name",
			spanName: "plan_trip.workflow",
			attrs: []any{
				"traceloop.span.kind", "workflow",
				"traceloop.entity.name", "plan_trip",
			},
			want:      gist{SpanType: "agent", Operation: "invoke_workflow"},
			wantAttrs: map[string]string{"traceloop.entity.name": "plan_trip"},
		},
		{
			name:     "openllmetry anthropic with underscore cache keys",
			spanName: "anthropic.chat",
			attrs: []any{
				"gen_ai.system", "Anthropic",
				"gen_ai.request.model", "claude-3-5-haiku-20241022",
				"gen_ai.response.model", "claude-3-5-haiku-20241022",
				"gen_ai.usage.prompt_tokens", int64(100),
				"gen_ai.usage.completion_tokens", int64(20),
				"gen_ai.usage.cache_read_input_tokens", int64(900),
				"gen_ai.usage.cache_creation_input_tokens", int64(50),
				"llm.request.type", "chat",
			},
			// cache 900+50 = 950 > 100: additive, input = 100+950 = 1050.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic",
				Model: "claude-3-5-haiku-20241022", RequestModel: "claude-3-5-haiku-20241022",
				ResponseModel: "claude-3-5-haiku-20241022",
				In:            1050, Out: 20, CacheRead: 900, CacheWrite: 50,
				UsageMode: "additive", CostSource: "unpriced"},
			// "Anthropic" was canonicalized, so the original spelling stays.
			wantAttrs: map[string]string{"gen_ai.system": "Anthropic", "llm.request.type": "chat"},
		},
		{
			name:     "vercel outer ai.generateText is aggregated",
			spanName: "ai.generateText",
			attrs: []any{
				"ai.model.id", "claude-sonnet-4-5",
				"ai.model.provider", "anthropic.messages",
				"ai.telemetry.functionId", "trip-agent",
				"ai.usage.inputTokens", int64(100),
				"ai.usage.outputTokens", int64(50),
				"ai.usage.cachedInputTokens", int64(900),
				"ai.prompt", `{"prompt":"plan a trip"}`,
				"ai.response.text", "Here is your plan",
			},
			// cache 900 > 100: input = 1000; agent span: aggregated, never priced.
			want: gist{SpanType: "agent", Operation: "invoke_agent", Provider: "anthropic",
				Model: "claude-sonnet-4-5", RequestModel: "claude-sonnet-4-5", AgentName: "trip-agent",
				In: 1000, Out: 50, CacheRead: 900, UsageMode: "aggregated", CostSource: "unpriced"},
			wantAttrs: map[string]string{"ai.model.provider": "anthropic.messages"},
			wantContent: map[string]string{
				"ai.prompt":        schema.ContentInputMessages,
				"ai.response.text": schema.ContentOutputMessages,
			},
		},
		{
			name:     "vercel doGenerate",
			spanName: "ai.generateText.doGenerate",
			attrs: []any{
				"ai.model.id", "claude-sonnet-4-5",
				"ai.response.model", "claude-sonnet-4-5-20250929",
				"ai.model.provider", "anthropic.messages",
				"ai.usage.inputTokens", int64(100),
				"ai.usage.outputTokens", int64(50),
				"ai.usage.cachedInputTokens", int64(900),
				"ai.prompt.messages", `[{"role":"user","content":"plan a trip"}]`,
				"ai.response.finishReason", "stop",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "anthropic",
				Model: "claude-sonnet-4-5-20250929", RequestModel: "claude-sonnet-4-5",
				ResponseModel: "claude-sonnet-4-5-20250929",
				In:            1000, Out: 50, CacheRead: 900, UsageMode: "additive", CostSource: "unpriced"},
			wantContent: map[string]string{"ai.prompt.messages": schema.ContentInputMessages},
		},
		{
			name:     "vercel toolCall, other key order, same args hash",
			spanName: "ai.toolCall",
			attrs: []any{
				"ai.toolCall.name", "get_weather",
				"ai.toolCall.id", "call_1",
				"ai.toolCall.args", `{ "units": "c", "city": "Paris" }`,
				"ai.toolCall.result", `{"temp":21}`,
			},
			want:     gist{SpanType: "tool", Operation: "execute_tool", ToolName: "get_weather", ToolCallID: "call_1"},
			wantArgs: parisArgsHash,
			wantContent: map[string]string{
				"ai.toolCall.args":   schema.ContentToolArguments,
				"ai.toolCall.result": schema.ContentToolResult,
			},
		},
		{
			name:     "spec execute_tool with structured arguments",
			spanName: "execute_tool get_weather",
			attrs: []any{
				"gen_ai.operation.name", "execute_tool",
				"gen_ai.tool.name", "get_weather",
				"gen_ai.tool.call.id", "call_2",
				"gen_ai.tool.type", "function",
				"gen_ai.tool.call.arguments", map[string]any{"units": "c", "city": "Paris"},
			},
			want:        gist{SpanType: "tool", Operation: "execute_tool", ToolName: "get_weather", ToolCallID: "call_2"},
			wantArgs:    parisArgsHash,
			wantContent: map[string]string{"gen_ai.tool.call.arguments": schema.ContentToolArguments},
		},
		{
			name:     "strands invoke_agent: framework provider, aggregated usage",
			spanName: "invoke_agent Strands Agents",
			attrs: []any{
				"gen_ai.operation.name", "invoke_agent",
				"gen_ai.system", "strands-agents",
				"gen_ai.agent.name", "Strands Agents",
				"gen_ai.request.model", "us.anthropic.claude-sonnet-4-20250514-v1:0",
				"gen_ai.usage.input_tokens", int64(5000),
				"gen_ai.usage.output_tokens", int64(800),
			},
			// Provider inferred from the model's "claude" segment; agent: aggregated.
			want: gist{SpanType: "agent", Operation: "invoke_agent", Provider: "anthropic",
				Model: "us.anthropic.claude-sonnet-4-20250514-v1:0", RequestModel: "us.anthropic.claude-sonnet-4-20250514-v1:0",
				AgentName: "Strands Agents", In: 5000, Out: 800, UsageMode: "aggregated", CostSource: "unpriced"},
			wantAttrs: map[string]string{"gen_ai.system": "strands-agents"},
		},
		{
			name:     "google adk framework name, gemini model",
			spanName: "call_llm",
			attrs: []any{
				"gen_ai.system", "gcp.vertex.agent",
				"gen_ai.request.model", "gemini-2.5-flash",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "gcp.gemini",
				Model: "gemini-2.5-flash", RequestModel: "gemini-2.5-flash"},
		},
		{
			name:     "llama model keeps the given provider",
			spanName: "chat",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "langchain",
				"gen_ai.request.model", "llama-3.1-8b",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "langchain",
				Model: "llama-3.1-8b", RequestModel: "llama-3.1-8b"},
		},
		{
			name:     "pydantic-ai aggregated_usage keys",
			spanName: "agent run",
			attrs: []any{
				"gen_ai.aggregated_usage.input_tokens", int64(300),
				"gen_ai.aggregated_usage.output_tokens", int64(40),
			},
			want: gist{SpanType: "other", In: 300, Out: 40, UsageMode: "aggregated", CostSource: "unpriced"},
		},
		{
			name:     "client cost for an unknown model",
			spanName: "chat my-finetune",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.request.model", "my-finetune-7b",
				"gen_ai.usage.input_tokens", int64(10),
				"gen_ai.usage.output_tokens", int64(5),
				"gen_ai.usage.cost.amount", 0.0123,
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "",
				Model: "my-finetune-7b", RequestModel: "my-finetune-7b",
				In: 10, Out: 5, UsageMode: "inclusive", CostSource: "client", CostTotal: 0.0123},
			wantAttrs: map[string]string{"gen_ai.usage.cost.amount": "0.0123", AttrUsageReading: ProviderDefault},
		},
		{
			name:     "client cost as a string without usage",
			spanName: "call",
			attrs:    []any{"llm.cost.total", "0.5"},
			want:     gist{SpanType: "other", CostSource: "client", CostTotal: 0.5},
		},
		{
			name:     "reasoning above output is unreconciled, not clamped",
			spanName: "chat",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "gcp.gemini",
				"gen_ai.request.model", "gemini-2.5-pro",
				"gen_ai.usage.input_tokens", int64(1000),
				"gen_ai.usage.output_tokens", int64(100),
				"gen_ai.usage.cache_read.input_tokens", int64(200),
				"gen_ai.usage.reasoning.output_tokens", int64(500),
			},
			// gcp.gemini inclusive, 200 <= 1000: input 1000; 500 > 100: unreconciled.
			want: gist{SpanType: "inference", Operation: "chat", Provider: "gcp.gemini",
				Model: "gemini-2.5-pro", RequestModel: "gemini-2.5-pro",
				In: 1000, Out: 100, CacheRead: 200, Reasoning: 500,
				UsageMode: "inclusive", Unreconciled: 1, CostSource: "unpriced"},
		},
		{
			name:     "negative token count is unreconciled and stays visible",
			spanName: "chat",
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.provider.name", "openai",
				"gen_ai.usage.input_tokens", int64(-5),
				"gen_ai.usage.output_tokens", int64(3),
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "openai",
				Out: 3, UsageMode: "inclusive", Unreconciled: 1, CostSource: "unpriced"},
			wantAttrs: map[string]string{"gen_ai.usage.input_tokens": "-5"},
		},
		{
			name:     "resource attributes fill in; span aliases beat the resource",
			spanName: "chat",
			res: []any{
				"service.name", "trip-planner",
				"user.id", "u-42",
				"gen_ai.conversation.id", "conv-from-resource",
				"gen_ai.provider.name", "openai",
			},
			attrs: []any{
				"gen_ai.operation.name", "chat",
				"gen_ai.request.model", "gpt-4.1",
				"session.id", "sess-from-span",
			},
			want: gist{SpanType: "inference", Operation: "chat", Provider: "openai",
				Model: "gpt-4.1", RequestModel: "gpt-4.1",
				ConversationID: "sess-from-span", UserID: "u-42"},
		},
		{
			name:     "unknown operation name is other",
			spanName: "plan",
			attrs: []any{
				"gen_ai.operation.name", "plan",
				"gen_ai.request.model", "gpt-4o",
			},
			want: gist{SpanType: "other", Operation: "plan", Provider: "openai",
				Model: "gpt-4o", RequestModel: "gpt-4o"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(t, tc.scope, tc.res...)
			req.span(tc.spanName, tc.attrs...)
			batch, rej := Normalize(req.td, Options{Project: "p1", Usage: tc.usage, Now: fixedNow})
			if rej.Spans != 0 || len(batch.Spans) != 1 {
				t.Fatalf("got %d spans, rejected %+v", len(batch.Spans), rej)
			}
			s := batch.Spans[0]
			if got := gistOf(s); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			attrs := attrMap(s.AttrKeys, s.AttrValues)
			for k, v := range tc.wantAttrs {
				if attrs[k] != v {
					t.Errorf("attr %s = %q, want %q (attrs %v)", k, attrs[k], v, attrs)
				}
			}
			for _, k := range tc.wantGone {
				if _, ok := attrs[k]; ok {
					t.Errorf("attr %s should have been consumed", k)
				}
			}
			got := map[string]string{}
			for _, c := range batch.Contents {
				got[c.SourceKey] = c.Kind
				if _, ok := attrs[c.SourceKey]; ok {
					t.Errorf("content key %s also copied into attributes", c.SourceKey)
				}
				if c.Project != "p1" || c.TraceID != s.TraceID || c.SpanID != s.SpanID || !c.Start.Equal(s.Start) {
					t.Errorf("content row not keyed like its span: %+v", c)
				}
			}
			if tc.wantContent == nil {
				tc.wantContent = map[string]string{}
			}
			if !reflect.DeepEqual(got, tc.wantContent) {
				t.Errorf("content kinds = %v, want %v", got, tc.wantContent)
			}
			if s.ArgsHash != tc.wantArgs {
				t.Errorf("ArgsHash = %q, want %q", s.ArgsHash, tc.wantArgs)
			}
		})
	}
}

func TestNormalizeSpanColumns(t *testing.T) {
	req := newRequest(t, "my.instrumentation", "service.name", "svc", "deployment.environment.name", "prod")
	parent := req.span("root")
	child := req.span("chat",
		"gen_ai.operation.name", "chat",
		"gen_ai.response.finish_reasons", []any{"stop", "length"},
		"gen_ai.response.time_to_first_chunk", 0.25,
		"error.type", "timeout",
		"gen_ai.agent.id", "agent-7",
		"task.name", "summarize",
		"gen_ai.step.id", "step-3",
		"flag", true,
		"ratio", 0.5,
		"count", int64(7),
		"tags", []any{"a", "b"},
	)
	child.SetParentSpanID(parent.SpanID())
	child.SetKind(ptrace.SpanKindClient)
	child.Status().SetCode(ptrace.StatusCodeError)
	child.Status().SetMessage("boom")
	ev := child.Events().AppendEmpty()
	ev.SetName("exception")
	ev.SetTimestamp(pcommon.Timestamp(testStartNs + 10))
	putAttrs(t, ev.Attributes(), "exception.type", "TimeoutError", "exception.escaped", false)
	link := child.Links().AppendEmpty()
	link.SetTraceID(pcommon.TraceID{15: 1})
	link.SetSpanID(pcommon.SpanID{7: 2})

	batch, _ := Normalize(req.td, Options{Project: "p1", Now: fixedNow})
	if len(batch.Spans) != 2 {
		t.Fatalf("got %d spans", len(batch.Spans))
	}
	root, s := batch.Spans[0], batch.Spans[1]
	if root.ParentSpanID != "" || root.SpanType != "other" || root.Kind != "internal" || root.Status != "unset" || root.ColumnKeys != nil {
		t.Errorf("root: parent %q type %q kind %q status %q", root.ParentSpanID, root.SpanType, root.Kind, root.Status)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"TraceID", s.TraceID, "0af7651916cd43dd8448eb211c80319c"},
		{"SpanID", s.SpanID, "0000000000000002"},
		{"ParentSpanID", s.ParentSpanID, "0000000000000001"},
		// 1_700_000_000_500_000_000 ns = 2023-11-14T22:13:20.5Z, truncated to the second.
		{"Start", s.Start, time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)},
		{"StartNs", s.StartNs, testStartNs},
		{"EndNs", s.EndNs, testEndNs},
		{"DurationNs", s.DurationNs, uint64(1_500_000_000)},
		{"Kind", s.Kind, "client"},
		{"Status", s.Status, "error"},
		{"StatusMessage", s.StatusMessage, "boom"},
		{"Service", s.Service, "svc"},
		{"ScopeName", s.ScopeName, "my.instrumentation"},
		{"ScopeVersion", s.ScopeVersion, "1.2.3"},
		{"FinishReasons", s.FinishReasons, []string{"stop", "length"}},
		{"TTFCMs", s.TTFCMs, 250.0}, // 0.25 s
		{"ErrorType", s.ErrorType, "timeout"},
		{"AgentID", s.AgentID, "agent-7"},
		{"TaskName", s.TaskName, "summarize"},
		{"StepID", s.StepID, "step-3"},
		{"UsageMode", s.UsageMode, ""},
		{"CostSource", s.CostSource, ""},
		{"AttrKeys", s.AttrKeys, []string{"count", "flag", "ratio", "tags"}},
		{"AttrValues", s.AttrValues, []string{"7", "true", "0.5", `["a","b"]`}},
		// Every attribute stored in a column, by the key the span sent.
		{"ColumnKeys", s.ColumnKeys, []string{"error.type", "gen_ai.agent.id", "gen_ai.operation.name", "gen_ai.response.finish_reasons",
			"gen_ai.response.time_to_first_chunk", "gen_ai.step.id", "task.name"}},
		{"ResourceKeys", s.ResourceKeys, []string{"deployment.environment.name", "service.name"}},
		{"ResourceValues", s.ResourceValues, []string{"prod", "svc"}},
		{"EventNames", s.EventNames, []string{"exception"}},
		{"EventTimeNs", s.EventTimeNs, []uint64{testStartNs + 10}},
		{"EventAttrs", s.EventAttrs, []string{`{"exception.type":"TimeoutError","exception.escaped":false}`}},
		{"LinksJSON", s.LinksJSON, `[{"trace_id":"00000000000000000000000000000001","span_id":"0000000000000002"}]`},
		{"IngestedAt", s.IngestedAt, fixedNow()},
		{"Project", s.Project, "p1"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

func TestNormalizeAttemptAndFinishForms(t *testing.T) {
	cases := []struct {
		name        string
		attrs       []any
		wantAttempt uint32
		wantFinish  []string
	}{
		{"gen_ai.tool.call.attempt", []any{"gen_ai.tool.call.attempt", int64(2)}, 2, nil},
		{"retry.attempt as string", []any{"retry.attempt", "3"}, 3, nil},
		{"attempt", []any{"attempt", int64(1)}, 1, nil},
		// 2 resends: the third attempt.
		{"http.request.resend_count", []any{"http.request.resend_count", int64(2)}, 3, nil},
		{"tool attempt beats resend count", []any{"http.request.resend_count", int64(5), "gen_ai.tool.call.attempt", int64(2)}, 2, nil},
		{"single finish reason", []any{"gen_ai.response.finish_reasons", "length"}, 0, []string{"length"}},
		{"finish reasons as JSON text", []any{"gen_ai.response.finish_reasons", `["tool_calls","stop"]`}, 0, []string{"tool_calls", "stop"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(t, "")
			req.span("s", tc.attrs...)
			batch, _ := Normalize(req.td, Options{})
			s := batch.Spans[0]
			if s.Attempt != tc.wantAttempt {
				t.Errorf("Attempt = %d, want %d", s.Attempt, tc.wantAttempt)
			}
			if !reflect.DeepEqual(s.FinishReasons, tc.wantFinish) {
				t.Errorf("FinishReasons = %#v, want %#v", s.FinishReasons, tc.wantFinish)
			}
		})
	}
}

func TestNormalizePricer(t *testing.T) {
	req := newRequest(t, "")
	req.span("priced", "gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o",
		"gen_ai.usage.input_tokens", int64(2_000_000), "gen_ai.usage.output_tokens", int64(1))
	req.span("no usage", "gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o")
	req.span("client cost", "gen_ai.operation.name", "chat", "gen_ai.usage.input_tokens", int64(5), "gen_ai.usage.cost", 1.25)
	req.span("agent", "gen_ai.operation.name", "invoke_agent", "gen_ai.usage.input_tokens", int64(5), "gen_ai.usage.cost", 9.0)
	req.span("client zero", "gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o",
		"gen_ai.usage.input_tokens", int64(1_000_000), "gen_ai.usage.cost", 0.0)
	pricer := &fakePricer{}
	batch, _ := Normalize(req.td, Options{Pricer: pricer})
	if !reflect.DeepEqual(pricer.called, []string{"priced", "client zero"}) {
		t.Errorf("pricer called for %v, want [priced client zero]", pricer.called)
	}
	// 2,000,000 input tokens at the fake 1 USD per million = 2 USD. The
	// agent's own client cost is kept on it (readers count it only for a run
	// whose inference spans carry no usage). A client cost of exactly 0 with
	// usage means "no price": 1,000,000 tokens at 1 USD per million = 1 USD.
	want := []struct {
		source string
		total  float64
	}{{"catalog", 2}, {"", 0}, {"client", 1.25}, {"client", 9}, {"catalog", 1}}
	for i, w := range want {
		s := batch.Spans[i]
		if s.CostSource != w.source || s.CostTotal != w.total {
			t.Errorf("%s: cost %q %v, want %q %v", s.Name, s.CostSource, s.CostTotal, w.source, w.total)
		}
	}
	if batch.Spans[3].UsageMode != schema.UsageAggregated {
		t.Errorf("agent usage mode %q, want aggregated", batch.Spans[3].UsageMode)
	}
	if got := attrMap(batch.Spans[4].AttrKeys, batch.Spans[4].AttrValues)[AttrCostNote]; got == "" {
		t.Errorf("client zero: no %s attribute", AttrCostNote)
	}
}

func TestNormalizeRejectsInvalidSpans(t *testing.T) {
	req := newRequest(t, "")
	req.span("a")
	req.span("b").SetTraceID(pcommon.TraceID{})
	req.span("c").SetEndTimestamp(pcommon.Timestamp(testStartNs - 1))
	req.span("d")
	req.span("e").SetEndTimestamp(0)
	bad := req.span("f")
	bad.SetSpanID(pcommon.SpanID{})
	bad.SetStartTimestamp(0)
	req.span("g").SetTraceID(pcommon.TraceID{})

	batch, rej := Normalize(req.td, Options{})
	var names []string
	for _, s := range batch.Spans {
		names = append(names, s.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "d"}) {
		t.Errorf("kept %v, want [a d]", names)
	}
	if rej.Spans != 5 {
		t.Errorf("rejected %d, want 5", rej.Spans)
	}
	wantMsg := `span 1 (name "b"): trace id is missing or all zero (must be 16 non-zero bytes); ` +
		`span 2 (name "c"): end time before start time; ` +
		`span 4 (name "e"): end time missing; and 2 more`
	if rej.Message != wantMsg {
		t.Errorf("message\n got %s\nwant %s", rej.Message, wantMsg)
	}
}

// TestNormalizeTimeBounds: a start or end past LatestTime would wrap in
// the store (issue #41: a start ≥ 2^63 ns read back as 1969, the run's
// duration as 1.67e13 ms), and a start outside MaxSpanAge and
// MaxSpanFuture around the arrival is refused too; each at its edge.
func TestNormalizeTimeBounds(t *testing.T) {
	now := time.Unix(0, int64(testStartNs)).UTC() // the arrival
	latest := uint64(LatestTime.Unix()) * uint64(time.Second)
	day := 24 * time.Hour
	ns := func(t time.Time) uint64 { return uint64(t.UnixNano()) }
	for _, c := range []struct {
		name       string
		start, end uint64
		lim        Limits
		want       string // "" kept
	}{
		{"the latest start the store holds", latest, latest, Limits{}, ""},
		{"a nanosecond later", latest + 1, latest + 1, Limits{}, "start time past 2106-02-07T06:28:15Z, the latest the store holds"},
		{"an end past it", testStartNs, latest + 1, Limits{}, "end time past 2106-02-07T06:28:15Z, the latest the store holds"},
		{"a start past 2262 (2^63 ns)", 1 << 63, 1<<63 + 1, Limits{}, "start time past 2106-02-07T06:28:15Z, the latest the store holds"},
		{"exactly the span age limit", ns(now.Add(-30 * day)), testStartNs, Limits{MaxSpanAge: 30 * day}, ""},
		{"a nanosecond older", ns(now.Add(-30*day)) - 1, testStartNs, Limits{MaxSpanAge: 30 * day},
			"start time 2023-10-15T22:13:20Z is more than 720h0m0s before arrival (the span age limit)"},
		{"no age limit: any age", ns(now.Add(-3000 * day)), testStartNs, Limits{}, ""},
		{"exactly the future limit", ns(now.Add(2 * time.Hour)), ns(now.Add(3 * time.Hour)), Limits{MaxSpanFuture: 2 * time.Hour}, ""},
		{"a nanosecond further", ns(now.Add(2*time.Hour)) + 1, ns(now.Add(3 * time.Hour)), Limits{MaxSpanFuture: 2 * time.Hour},
			"start time 2023-11-15T00:13:20Z is more than 2h0m0s after arrival (the span future limit)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := newRequest(t, "")
			sp := req.span("s")
			sp.SetStartTimestamp(pcommon.Timestamp(c.start))
			sp.SetEndTimestamp(pcommon.Timestamp(c.end))
			batch, rej := Normalize(req.td, Options{Limits: c.lim, Now: func() time.Time { return now }})
			if c.want == "" {
				if rej.Spans != 0 || len(batch.Spans) != 1 {
					t.Fatalf("rejected %d (%s), want the span kept", rej.Spans, rej.Message)
				}
				if got := batch.Spans[0].Start; got.Unix() != int64(c.start/uint64(time.Second)) {
					t.Errorf("start %s, want %d s", got, c.start/uint64(time.Second))
				}
				return
			}
			if want := `span 0 (name "s"): ` + c.want; rej.Spans != 1 || rej.Message != want || len(batch.Spans) != 0 {
				t.Errorf("rejected %d: %q, kept %d; want 1: %q", rej.Spans, rej.Message, len(batch.Spans), want)
			}
		})
	}
}

func TestNormalizeTruncation(t *testing.T) {
	lim := Limits{MaxAttrValueBytes: 8, MaxContentBytes: 10}
	cases := []struct {
		name      string
		value     string
		limit     int
		want      string
		truncated bool
	}{
		{"attr exactly at the limit", "abcdefgh", 8, "abcdefgh", false},
		{"attr one byte over", "abcdefghi", 8, "abcdefgh" + TruncationMarker, true},
		// "é" is 2 bytes: 5 of them are 10 bytes; 8 bytes hold 4 whole runes.
		{"attr cut on a rune boundary", "ééééé", 8, "éééé" + TruncationMarker, true},
		// 7 bytes of "aéééé…" = "a" + 3×"é"; the 4th "é" would straddle byte 8.
		{"attr cut before a split rune", "aéééé", 8, "aééé" + TruncationMarker, true},
		{"content exactly at the limit", "0123456789", 10, "0123456789", false},
		{"content one byte over", "0123456789A", 10, "0123456789" + TruncationMarker, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(t, "")
			if strings.HasPrefix(tc.name, "content") {
				req.span("s", "gen_ai.input.messages", tc.value)
			} else {
				req.span("s", "note", tc.value)
			}
			batch, _ := Normalize(req.td, Options{Limits: lim})
			s := batch.Spans[0]
			if strings.HasPrefix(tc.name, "content") {
				c := batch.Contents[0]
				if c.Value != tc.want || (c.Truncated == 1) != tc.truncated {
					t.Errorf("content %q truncated=%d, want %q %v", c.Value, c.Truncated, tc.want, tc.truncated)
				}
				return
			}
			if got := attrMap(s.AttrKeys, s.AttrValues)["note"]; got != tc.want {
				t.Errorf("attr = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNormalizeAttrAndEventLimits(t *testing.T) {
	req := newRequest(t, "")
	sp := req.span("s", "z1", "1", "a2", "2", "m3", "3", "b4", "4", "gen_ai.request.model", "gpt-4o")
	for i := 0; i < 4; i++ {
		sp.Events().AppendEmpty().SetName("e")
	}
	batch, _ := Normalize(req.td, Options{Limits: Limits{MaxAttrsPerSpan: 2, MaxEventsPerSpan: 3}})
	s := batch.Spans[0]
	// The model is a column, not an attribute; of z1 a2 m3 b4 the first two
	// in sending order are kept, 2 are dropped; 4 events - 3 kept = 1 dropped.
	wantKeys := []string{"a2", "tally.dropped_attributes", "tally.dropped_events", "z1"}
	wantValues := []string{"2", "2", "1", "1"}
	if !reflect.DeepEqual(s.AttrKeys, wantKeys) || !reflect.DeepEqual(s.AttrValues, wantValues) {
		t.Errorf("attrs %v=%v, want %v=%v", s.AttrKeys, s.AttrValues, wantKeys, wantValues)
	}
	if len(s.EventNames) != 3 || s.Model != "gpt-4o" {
		t.Errorf("events %d (want 3), model %q", len(s.EventNames), s.Model)
	}
}

func TestNormalizeRepairsUTF8(t *testing.T) {
	req := newRequest(t, "sc\xffope", "service.name", "svc\xfe")
	req.span("bad\xfename",
		"note", "ok\xffno",
		"gen_ai.agent.name", "ag\xffent",
		"gen_ai.input.messages", "hi\xff",
		"k\xff", "v",
	)
	batch, _ := Normalize(req.td, Options{})
	s := batch.Spans[0]
	attrs := attrMap(s.AttrKeys, s.AttrValues)
	got := []string{s.Name, s.ScopeName, s.Service, s.AgentName, attrs["note"], attrs["k\uFFFD"], batch.Contents[0].Value, s.ResourceValues[0]}
	want := []string{"bad\uFFFDname", "sc\uFFFDope", "svc\uFFFD", "ag\uFFFDent", "ok\uFFFDno", "v", "hi\uFFFD", "svc\uFFFD"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestNormalizePrivacy(t *testing.T) {
	args := `{"city":"Paris","units":"c"}`
	build := func() ptrace.Traces {
		req := newRequest(t, "", "host.name", "laptop-7")
		sp := req.span("execute_tool get_weather",
			"gen_ai.operation.name", "execute_tool",
			"gen_ai.tool.name", "get_weather",
			"gen_ai.tool.call.arguments", args,
			"gen_ai.tool.call.result", `{"temp":21}`,
			"gen_ai.input.messages", `[{"role":"user"}]`,
			"user.id", "u-1",
			"secret.token", "s3cr3t",
			"email", "a@b.c",
			"gen_ai.prompt.0.content", "hello",
			"llm.output_messages.0.message.content", "hi",
		)
		ev := sp.Events().AppendEmpty()
		ev.SetName("gen_ai.user.message")
		putAttrs(t, ev.Attributes(), "content", "hello", "email", "a@b.c")
		return req.td
	}
	// sha256sum of "u-1".
	const userHash = "sha256:a24a7f55f278dd49fb1f99c5507800cb198a5bfe10fe2126cd0b25672152b0da"

	t.Run("rules", func(t *testing.T) {
		priv := Privacy{Rules: map[string]Action{
			"user.id":                    ActionHash,
			"email":                      ActionRedact,
			"secret.token":               ActionDrop,
			"host.name":                  ActionRedact,
			"gen_ai.tool.call.arguments": ActionDrop,
			"gen_ai.tool.call.result":    ActionHash,
			"gen_ai.input.messages":      ActionRedact,
		}}
		batch, _ := Normalize(build(), Options{Privacy: priv})
		s := batch.Spans[0]
		attrs := attrMap(s.AttrKeys, s.AttrValues)
		if s.UserID != userHash {
			t.Errorf("UserID = %q, want %q", s.UserID, userHash)
		}
		if _, ok := attrs["secret.token"]; ok {
			t.Error("dropped attribute kept")
		}
		if attrs["gen_ai.prompt.0.content"] != "hello" {
			t.Errorf("flattened content dropped without NoContent")
		}
		if attrs["email"] != RedactedValue {
			t.Errorf("email = %q", attrs["email"])
		}
		if !reflect.DeepEqual(s.ResourceValues, []string{RedactedValue}) {
			t.Errorf("resource values %v", s.ResourceValues)
		}
		if s.ArgsHash != parisArgsHash {
			t.Errorf("ArgsHash = %q, want it computed before the drop rule", s.ArgsHash)
		}
		cs := contentsOf(batch.Contents, s.SpanID)
		if _, ok := cs["gen_ai.tool.call.arguments"]; ok {
			t.Error("dropped content kept")
		}
		// sha256sum of `{"temp":21}`.
		if got := cs["gen_ai.tool.call.result"].Value; got != "sha256:1f9dc84f6e60fad5ecf6943ec7064836acacd6f7dbe7f9348f32519aedab4972" {
			t.Errorf("hashed result = %q", got)
		}
		if got := cs["gen_ai.input.messages"].Value; got != RedactedValue {
			t.Errorf("redacted messages = %q", got)
		}
		if want := `{"content":"hello","email":"[REDACTED]"}`; s.EventAttrs[0] != want {
			t.Errorf("event attrs %s, want %s", s.EventAttrs[0], want)
		}
	})
	t.Run("no content", func(t *testing.T) {
		batch, _ := Normalize(build(), Options{Privacy: Privacy{NoContent: true}})
		s := batch.Spans[0]
		if len(batch.Contents) != 0 {
			t.Errorf("got %d content rows, want none", len(batch.Contents))
		}
		if s.ArgsHash != parisArgsHash {
			t.Errorf("ArgsHash = %q, want it kept", s.ArgsHash)
		}
		if s.EventAttrs[0] != "{}" {
			t.Errorf("content event attrs = %s, want {}", s.EventAttrs[0])
		}
		for _, k := range s.AttrKeys {
			if strings.HasPrefix(k, "gen_ai.tool.call.") || k == "gen_ai.input.messages" ||
				k == "gen_ai.prompt.0.content" || k == "llm.output_messages.0.message.content" {
				t.Errorf("content key %s leaked into attributes", k)
			}
		}
	})
}

func TestNormalizeFixtures(t *testing.T) {
	td := loadFixture(t, "vercel_trip.json")
	pricer := &fakePricer{}
	batch, rej := Normalize(td, Options{Project: "demo", Pricer: pricer, Now: fixedNow})
	if rej.Spans != 0 || len(batch.Spans) != 3 {
		t.Fatalf("spans %d, rejected %+v", len(batch.Spans), rej)
	}
	byName := map[string]schema.Span{}
	for _, s := range batch.Spans {
		byName[s.Name] = s
	}
	outer, inner, tool := byName["ai.generateText"], byName["ai.generateText.doGenerate"], byName["ai.toolCall"]
	// Outer and inner both report 120 input + 880 cached read: 880 <= 120 is
	// false, so both are additive: 120 + 880 = 1000.
	if outer.UsageMode != schema.UsageAggregated || outer.InputTokens != 1000 || outer.CostSource != schema.CostCatalog {
		t.Errorf("outer: mode %q input %d cost %q", outer.UsageMode, outer.InputTokens, outer.CostSource)
	}
	if inner.UsageMode != schema.UsageAdditive || inner.InputTokens != 1000 || inner.CostSource != schema.CostCatalog {
		t.Errorf("inner: mode %q input %d cost %q", inner.UsageMode, inner.InputTokens, inner.CostSource)
	}
	// Both are priced; readers count the outer only for a run without the inner.
	if !reflect.DeepEqual(pricer.called, []string{"ai.generateText", "ai.generateText.doGenerate"}) {
		t.Errorf("pricer called for %v", pricer.called)
	}
	if tool.SpanType != schema.TypeTool || tool.ArgsHash != parisArgsHash || tool.ParentSpanID != outer.SpanID {
		t.Errorf("tool: type %q hash %q parent %q", tool.SpanType, tool.ArgsHash, tool.ParentSpanID)
	}
	if inner.Service != "trip-planner" || inner.AgentName != "trip-agent" || inner.Provider != "anthropic" {
		t.Errorf("inner: service %q agent %q provider %q", inner.Service, inner.AgentName, inner.Provider)
	}
}

// TestNormalizeIntoReusedBatch normalizes requests of different sizes one
// after another into one batch's reused slices (emptied between them, as
// the receiver does) and checks each gives exactly the rows a fresh
// NormalizeTraces gives: nothing of an earlier request's rows survives in
// a reused row.
func TestNormalizeIntoReusedBatch(t *testing.T) {
	opts := Options{Project: "p", Limits: DefaultLimits(), Pricer: &nopPricer{},
		Now: func() time.Time { return time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC) }}
	var batch Batch
	for _, n := range []int{64, 9, 64, 1} {
		tr := wire.FromPdata(realisticRequest(t, n))
		want, wantRej := NormalizeTraces(tr, opts)
		var rej Rejected
		batch, rej = NormalizeTracesInto(batch, tr, opts)
		if !reflect.DeepEqual(batch, want) || rej != wantRej {
			t.Fatalf("%d spans into a reused batch differ from a fresh batch", n)
		}
		batch = batch.Emptied()
	}
	if cap(batch.Spans) < 64 {
		t.Errorf("batch kept room for %d spans, want the 64 of the largest request", cap(batch.Spans))
	}
}

// TestIsPlaceholderID pins the values that stand for "no id" and the edges
// of the check: case and surrounding space do not matter, a real id of any
// case is kept, and a value one byte longer than the longest placeholder is
// an id.
func TestIsPlaceholderID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", true},
		{"   ", true},
		{"<not specified>", true},
		{" <Not Specified> ", true},
		{"NULL", true},
		{"None", true},
		{"N/A", true},
		{"undefined", true},
		{"unknown", true},
		{"nil", true},
		{"<none>", true},
		{"call_AbC123", false},
		{"toolu_01A09q90qw90lq917835lq9", false},
		{"<not specified>x", false},
		{"nulls", false},
		{"0", false},
	}
	for _, tc := range tests {
		if got := isPlaceholderID(tc.in); got != tc.want {
			t.Errorf("isPlaceholderID(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestIdempotencyKeyIsTheStep: a tool call's idempotency key (the clients'
// set_idempotency_key / markIdempotencyKey) names its logical step when the
// span has no step id, so two successes under one key are the same step
// done twice (duplicate_side_effect); an explicit step id wins.
func TestIdempotencyKeyIsTheStep(t *testing.T) {
	for _, tt := range []struct {
		name  string
		attrs []any
		want  string
	}{
		{"key alone", []any{"tally.tool.idempotency_key", "refund-4411"}, "refund-4411"},
		{"step id wins", []any{"tally.tool.idempotency_key", "refund-4411", "gen_ai.step.id", "step-3"}, "step-3"},
		{"neither", nil, ""},
	} {
		req := newRequest(t, "my.instrumentation", "service.name", "svc")
		req.span("execute_tool issue_refund", append([]any{"gen_ai.operation.name", "execute_tool",
			"gen_ai.tool.name", "issue_refund"}, tt.attrs...)...)
		batch, _ := Normalize(req.td, Options{Project: "p1", Now: fixedNow})
		if len(batch.Spans) != 1 || batch.Spans[0].StepID != tt.want {
			t.Errorf("%s: step id %q, want %q", tt.name, batch.Spans[0].StepID, tt.want)
		}
	}
}

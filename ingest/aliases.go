package ingest

import (
	"strings"

	"github.com/tallyhq/tally/schema"
)

// field identifies an attribute key that Normalize understands. Every key
// listed in docs/instrumentations.md's alias chains has its own field, so that a span's
// attributes are classified in a single pass (fieldOf) and the chains are
// then resolved by array lookups instead of repeated scans of the map.
type field uint8

const (
	fNone field = iota

	// span type
	fOpName        // gen_ai.operation.name
	fOIKind        // openinference.span.kind
	fTLKind        // traceloop.span.kind
	fAIOperationID // ai.operationId (Vercel AI SDK; mirrors the span name)

	// model
	fRespModel    // gen_ai.response.model
	fReqModel     // gen_ai.request.model
	fLLMModelName // llm.model_name
	fAIRespModel  // ai.response.model
	fAIModelID    // ai.model.id

	// provider
	fProviderName    // gen_ai.provider.name
	fSystem          // gen_ai.system
	fLLMProvider     // llm.provider
	fLLMSystem       // llm.system
	fAIModelProvider // ai.model.provider

	// agent
	fAgentName     // gen_ai.agent.name
	fAgentNameAlt  // agent.name
	fTLEntityName  // traceloop.entity.name (tool or agent name, by traceloop.span.kind)
	fAIFunctionID  // ai.telemetry.functionId
	fAgentID       // gen_ai.agent.id
	fAgentIDAlt    // agent.id
	fConvID        // gen_ai.conversation.id
	fSessionID     // session.id
	fLFSessionID   // langfuse.session.id
	fTLSessionID   // traceloop.association.properties.session_id
	fAISessionID   // ai.telemetry.metadata.sessionId
	fUserID        // user.id
	fLFUserID      // langfuse.user.id
	fTLUserID      // traceloop.association.properties.user_id
	fAIUserID      // ai.telemetry.metadata.userId
	fTaskName      // task.name
	fServiceName   // service.name (resource)
	fToolName      // gen_ai.tool.name
	fToolNameAlt   // tool.name
	fAIToolName    // ai.toolCall.name
	fToolCallID    // gen_ai.tool.call.id
	fToolCallIDAlt // tool_call.id
	fToolIDAlt     // tool.id
	fAIToolCallID  // ai.toolCall.id
	fToolType      // gen_ai.tool.type

	// retries and steps
	fToolAttempt  // gen_ai.tool.call.attempt
	fRetryAttempt // retry.attempt
	fAttempt      // attempt
	fResendCount  // http.request.resend_count (N resends = attempt N+1)
	fStepID       // gen_ai.step.id
	fStepIDDot    // step.id
	fStepIDUnder  // step_id
	// fIdempotencyKey is the key a tool call sent to make itself safe to
	// repeat (tally.tool.idempotency_key, the clients' span helper): calls
	// with one key are one logical step, so it stands for the step id when
	// the span has none.
	fIdempotencyKey // tally.tool.idempotency_key

	// response
	fFinishReasons  // gen_ai.response.finish_reasons
	fAIFinishReason // ai.response.finishReason
	fErrorType      // error.type
	fTTFC           // gen_ai.response.time_to_first_chunk (seconds)
	fAIMsToFirst    // ai.response.msToFirstChunk (milliseconds)

	// usage: input
	fInTok
	fPromptTok
	fLLMPromptTok
	fAIInputTok
	fAIPromptTok
	fAggInTok
	// usage: output
	fOutTok
	fComplTok
	fLLMComplTok
	fAIOutputTok
	fAIComplTok
	fAggOutTok
	// usage: cache read
	fCacheRead
	fCacheReadUnder
	fLLMCacheRead
	fAICacheRead
	fAICachedInput
	fDetailsCacheRead
	fAggCacheRead
	fAggDetailsCacheRead
	// usage: cache write
	fCacheWrite
	fCacheCreation
	fCacheCreationUnder
	fCacheWriteUnder
	fLLMCacheWrite
	fAICacheWrite
	fDetailsCacheWrite
	fAggCacheWrite
	fAggCacheCreation
	fAggDetailsCacheWrite
	// usage: reasoning
	fReasoning
	fReasoningUnder
	fLLMReasoning
	fAIReasoningDetails
	fAIReasoning
	fAggReasoning
	fAggDetailsReasoning
	fDetailsReasoning // gen_ai.usage.details.reasoning_tokens (pydantic-ai)
	// usage: reported total (evidence for whether output includes reasoning)
	fTotalTok      // gen_ai.usage.total_tokens (LiteLLM, OpenLIT, …)
	fLLMUsageTotal // llm.usage.total_tokens (OpenLLMetry)
	fLLMTotal      // llm.token_count.total (OpenInference)
	fAITotal       // ai.usage.totalTokens (Vercel AI SDK)
	// usage: dialect extras
	fAINoCache      // ai.usage.inputTokenDetails.noCacheTokens (Vercel AI SDK 6+: the uncached input)
	fAIProviderMeta // ai.response.providerMetadata (Vercel AI SDK: JSON, Anthropic cache writes in v5)
	fLFUsage        // langfuse.observation.usage_details (JSON object)
	fLFType         // langfuse.observation.type (generation, agent, tool, span, …)
	fLFModel        // langfuse.observation.model.name
	fUsageRaw       // gen_ai.usage.raw (Logfire: the provider's usage object as JSON)
	fLiteLLMUsage   // metadata.usage_object (LiteLLM: the usage object as a Python repr)
	fLogfireResp    // response_data (Logfire: the response as JSON, usage under "usage")
	fLogfireType    // logfire.span_type ("log": a Logfire log record, not an operation)
	fIsStreaming    // gen_ai.is_streaming (OpenLLMetry 0.54+)
	fLLMStreaming   // llm.is_streaming (OpenLLMetry before 0.54)

	// client-sent cost
	fCostAmount // gen_ai.usage.cost.amount
	fCost       // gen_ai.usage.cost
	fLLMCost    // llm.cost.total
	fOpCost     // operation.cost
	fCostTotal  // gen_ai.cost.total_cost (LiteLLM)
	fLFCost     // langfuse.observation.cost_details (JSON object)

	// content (never copied into the attribute arrays)
	fToolArgs        // gen_ai.tool.call.arguments
	fInputValue      // input.value (tool arguments on OpenInference TOOL spans, else input)
	fAIToolArgs      // ai.toolCall.args
	fTLEntityInput   // traceloop.entity.input (tool arguments when traceloop.span.kind=tool, else input)
	fToolResult      // gen_ai.tool.call.result
	fOutputValue     // output.value
	fAIToolResult    // ai.toolCall.result
	fTLEntityOutput  // traceloop.entity.output
	fInputMessages   // gen_ai.input.messages
	fPrompt          // gen_ai.prompt (deprecated)
	fAIPromptMsgs    // ai.prompt.messages
	fAIPrompt        // ai.prompt
	fOutputMessages  // gen_ai.output.messages
	fCompletion      // gen_ai.completion (deprecated)
	fAIResponseText  // ai.response.text
	fAIResponseObj   // ai.response.object
	fAIResponseCalls // ai.response.toolCalls
	fSystemInstr     // gen_ai.system_instructions
	fToolDefs        // gen_ai.tool.definitions
	fAIPromptTools   // ai.prompt.tools

	fieldCount
)

// aggregatedUsagePrefix marks pydantic-ai style aggregated usage keys; any key
// with this prefix makes the span's usage UsageAggregated.
const aggregatedUsagePrefix = "gen_ai.aggregated_usage."

// fieldOf classifies an attribute key. The switch compiles to a binary search
// over constant strings: no allocation, no package-level state.
func fieldOf(key string) field {
	switch key {
	case "gen_ai.operation.name":
		return fOpName
	case "openinference.span.kind":
		return fOIKind
	case "traceloop.span.kind":
		return fTLKind
	case "ai.operationId":
		return fAIOperationID

	case "gen_ai.response.model":
		return fRespModel
	case "gen_ai.request.model":
		return fReqModel
	case "llm.model_name":
		return fLLMModelName
	case "ai.response.model":
		return fAIRespModel
	case "ai.model.id":
		return fAIModelID

	case "gen_ai.provider.name":
		return fProviderName
	case "gen_ai.system":
		return fSystem
	case "llm.provider":
		return fLLMProvider
	case "llm.system":
		return fLLMSystem
	case "ai.model.provider":
		return fAIModelProvider

	case "gen_ai.agent.name":
		return fAgentName
	case "agent.name":
		return fAgentNameAlt
	case "traceloop.entity.name":
		return fTLEntityName
	case "ai.telemetry.functionId":
		return fAIFunctionID
	case "gen_ai.agent.id":
		return fAgentID
	case "agent.id":
		return fAgentIDAlt
	case "gen_ai.conversation.id":
		return fConvID
	case "session.id":
		return fSessionID
	case "langfuse.session.id":
		return fLFSessionID
	case "traceloop.association.properties.session_id":
		return fTLSessionID
	case "ai.telemetry.metadata.sessionId":
		return fAISessionID
	case "user.id":
		return fUserID
	case "langfuse.user.id":
		return fLFUserID
	case "traceloop.association.properties.user_id":
		return fTLUserID
	case "ai.telemetry.metadata.userId":
		return fAIUserID
	case "task.name":
		return fTaskName
	case "service.name":
		return fServiceName
	case "gen_ai.tool.name":
		return fToolName
	case "tool.name":
		return fToolNameAlt
	case "ai.toolCall.name":
		return fAIToolName
	case "gen_ai.tool.call.id":
		return fToolCallID
	case "tool_call.id":
		return fToolCallIDAlt
	case "tool.id":
		return fToolIDAlt
	case "ai.toolCall.id":
		return fAIToolCallID
	case "gen_ai.tool.type":
		return fToolType

	case "gen_ai.tool.call.attempt":
		return fToolAttempt
	case "retry.attempt":
		return fRetryAttempt
	case "attempt":
		return fAttempt
	case "http.request.resend_count":
		return fResendCount
	case "gen_ai.step.id":
		return fStepID
	case "step.id":
		return fStepIDDot
	case "step_id":
		return fStepIDUnder
	case "tally.tool.idempotency_key":
		return fIdempotencyKey

	case "gen_ai.response.finish_reasons":
		return fFinishReasons
	case "ai.response.finishReason":
		return fAIFinishReason
	case "error.type":
		return fErrorType
	case "gen_ai.response.time_to_first_chunk":
		return fTTFC
	case "ai.response.msToFirstChunk":
		return fAIMsToFirst

	case "gen_ai.usage.input_tokens":
		return fInTok
	case "gen_ai.usage.prompt_tokens":
		return fPromptTok
	case "llm.token_count.prompt":
		return fLLMPromptTok
	case "ai.usage.inputTokens":
		return fAIInputTok
	case "ai.usage.promptTokens":
		return fAIPromptTok
	case "gen_ai.aggregated_usage.input_tokens":
		return fAggInTok
	case "gen_ai.usage.output_tokens":
		return fOutTok
	case "gen_ai.usage.completion_tokens":
		return fComplTok
	case "llm.token_count.completion":
		return fLLMComplTok
	case "ai.usage.outputTokens":
		return fAIOutputTok
	case "ai.usage.completionTokens":
		return fAIComplTok
	case "gen_ai.aggregated_usage.output_tokens":
		return fAggOutTok
	case "gen_ai.usage.cache_read.input_tokens":
		return fCacheRead
	case "gen_ai.usage.cache_read_input_tokens":
		return fCacheReadUnder
	case "llm.token_count.prompt_details.cache_read":
		return fLLMCacheRead
	case "ai.usage.inputTokenDetails.cacheReadTokens":
		return fAICacheRead
	case "ai.usage.cachedInputTokens":
		return fAICachedInput
	case "gen_ai.usage.details.cache_read_tokens":
		return fDetailsCacheRead
	case "gen_ai.aggregated_usage.cache_read.input_tokens":
		return fAggCacheRead
	case "gen_ai.aggregated_usage.details.cache_read_tokens":
		return fAggDetailsCacheRead
	case "gen_ai.usage.cache_write.input_tokens":
		return fCacheWrite
	case "gen_ai.usage.cache_creation.input_tokens":
		return fCacheCreation
	case "gen_ai.usage.cache_creation_input_tokens":
		return fCacheCreationUnder
	case "gen_ai.usage.cache_write_input_tokens":
		return fCacheWriteUnder
	case "llm.token_count.prompt_details.cache_write":
		return fLLMCacheWrite
	case "ai.usage.inputTokenDetails.cacheWriteTokens":
		return fAICacheWrite
	case "gen_ai.usage.details.cache_write_tokens":
		return fDetailsCacheWrite
	case "gen_ai.aggregated_usage.cache_write.input_tokens":
		return fAggCacheWrite
	case "gen_ai.aggregated_usage.cache_creation.input_tokens":
		return fAggCacheCreation
	case "gen_ai.aggregated_usage.details.cache_write_tokens":
		return fAggDetailsCacheWrite
	case "gen_ai.usage.reasoning.output_tokens":
		return fReasoning
	case "gen_ai.usage.reasoning_tokens":
		return fReasoningUnder
	case "llm.token_count.completion_details.reasoning":
		return fLLMReasoning
	case "ai.usage.outputTokenDetails.reasoningTokens":
		return fAIReasoningDetails
	case "ai.usage.reasoningTokens":
		return fAIReasoning
	case "gen_ai.aggregated_usage.reasoning.output_tokens":
		return fAggReasoning
	case "gen_ai.aggregated_usage.details.reasoning_tokens":
		return fAggDetailsReasoning

	case "gen_ai.usage.details.reasoning_tokens":
		return fDetailsReasoning
	case "gen_ai.usage.total_tokens":
		return fTotalTok
	case "llm.usage.total_tokens":
		return fLLMUsageTotal
	case "llm.token_count.total":
		return fLLMTotal
	case "ai.usage.totalTokens":
		return fAITotal
	case "ai.usage.inputTokenDetails.noCacheTokens":
		return fAINoCache
	case "ai.response.providerMetadata":
		return fAIProviderMeta
	case "langfuse.observation.usage_details":
		return fLFUsage
	case "langfuse.observation.type":
		return fLFType
	case "langfuse.observation.model.name":
		return fLFModel
	case "gen_ai.usage.raw":
		return fUsageRaw
	case "metadata.usage_object":
		return fLiteLLMUsage
	case "response_data":
		return fLogfireResp
	case "logfire.span_type":
		return fLogfireType
	case "gen_ai.is_streaming":
		return fIsStreaming
	case "llm.is_streaming":
		return fLLMStreaming
	case "gen_ai.cost.total_cost":
		return fCostTotal
	case "langfuse.observation.cost_details":
		return fLFCost

	case "gen_ai.usage.cost.amount":
		return fCostAmount
	case "gen_ai.usage.cost":
		return fCost
	case "llm.cost.total":
		return fLLMCost
	case "operation.cost":
		return fOpCost

	case "gen_ai.tool.call.arguments":
		return fToolArgs
	case "input.value":
		return fInputValue
	case "ai.toolCall.args":
		return fAIToolArgs
	case "traceloop.entity.input":
		return fTLEntityInput
	case "gen_ai.tool.call.result":
		return fToolResult
	case "output.value":
		return fOutputValue
	case "ai.toolCall.result":
		return fAIToolResult
	case "traceloop.entity.output":
		return fTLEntityOutput
	case "gen_ai.input.messages":
		return fInputMessages
	case "gen_ai.prompt":
		return fPrompt
	case "ai.prompt.messages":
		return fAIPromptMsgs
	case "ai.prompt":
		return fAIPrompt
	case "gen_ai.output.messages":
		return fOutputMessages
	case "gen_ai.completion":
		return fCompletion
	case "ai.response.text":
		return fAIResponseText
	case "ai.response.object":
		return fAIResponseObj
	case "ai.response.toolCalls":
		return fAIResponseCalls
	case "gen_ai.system_instructions":
		return fSystemInstr
	case "gen_ai.tool.definitions":
		return fToolDefs
	case "ai.prompt.tools":
		return fAIPromptTools
	}
	return fNone
}

// isContentField reports whether f holds message or tool content, which goes
// to the content table and never into the attribute arrays.
func isContentField(f field) bool {
	return f >= fToolArgs && f < fieldCount
}

// Usage and cost alias chains, in docs/instrumentations.md priority order; the aggregated
// (pydantic-ai) keys come last. Functions returning arrays keep the tables
// immutable and allocation-free.
func inputChain() [6]field {
	return [...]field{fInTok, fPromptTok, fLLMPromptTok, fAIInputTok, fAIPromptTok, fAggInTok}
}

func outputChain() [6]field {
	return [...]field{fOutTok, fComplTok, fLLMComplTok, fAIOutputTok, fAIComplTok, fAggOutTok}
}

func cacheReadChain() [8]field {
	return [...]field{fCacheRead, fCacheReadUnder, fLLMCacheRead, fAICacheRead, fAICachedInput, fDetailsCacheRead, fAggCacheRead, fAggDetailsCacheRead}
}

func cacheWriteChain() [10]field {
	return [...]field{fCacheWrite, fCacheCreation, fCacheCreationUnder, fCacheWriteUnder, fLLMCacheWrite, fAICacheWrite, fDetailsCacheWrite, fAggCacheWrite, fAggCacheCreation, fAggDetailsCacheWrite}
}

func reasoningChain() [8]field {
	return [...]field{fReasoning, fReasoningUnder, fLLMReasoning, fAIReasoningDetails, fAIReasoning, fDetailsReasoning, fAggReasoning, fAggDetailsReasoning}
}

// totalChain are the keys of a reported total (input + output as the
// instrumentation counts them): not a bucket, but evidence for whether the
// reported output includes reasoning (reasoningFromTotals).
func totalChain() [4]field {
	return [...]field{fTotalTok, fLLMUsageTotal, fLLMTotal, fAITotal}
}

func costChain() [5]field {
	return [...]field{fCostAmount, fCost, fLLMCost, fOpCost, fCostTotal}
}

// canonicalOperation maps operation names that SDKs send in place of the
// conventions' values to them: LiteLLM's callback names the operation after
// the call type (acompletion, aembedding, …), see BerriAI/litellm
// litellm/integrations/opentelemetry.py. Other names are returned as given.
func canonicalOperation(op string) string {
	switch op {
	case "completion", "acompletion", "responses", "aresponses":
		return "chat"
	case "atext_completion":
		return "text_completion"
	case "embedding", "aembedding":
		return "embeddings"
	}
	return op
}

// spanTypeFromLangfuse maps a Langfuse SDK langfuse.observation.type to a span
// type and operation (langfuse/langfuse-python langfuse/_client/constants.py).
func spanTypeFromLangfuse(kind string) (spanType, op string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "generation":
		return schema.TypeInference, "chat", true
	case "embedding":
		return schema.TypeInference, "embeddings", true
	case "tool":
		return schema.TypeTool, "execute_tool", true
	case "agent":
		return schema.TypeAgent, "invoke_agent", true
	case "chain":
		return schema.TypeAgent, "invoke_workflow", true
	case "span", "event", "retriever", "evaluator", "guardrail":
		return schema.TypeOther, "", true
	}
	return "", "", false
}

// spanTypeFromOperation maps a lowercased gen_ai.operation.name to a span type.
// Every operation name decides: unknown ones (retrieval, plan, memory
// operations, fetch_response, …) are TypeOther.
func spanTypeFromOperation(op string) string {
	switch op {
	case "chat", "text_completion", "generate_content", "embeddings":
		return schema.TypeInference
	case "execute_tool":
		return schema.TypeTool
	case "invoke_agent", "create_agent", "invoke_workflow":
		return schema.TypeAgent
	}
	return schema.TypeOther
}

// spanTypeFromOpenInference maps openinference.span.kind to a span type and
// the operation it implies; ok is false for a value it does not know, so the
// next alias decides.
func spanTypeFromOpenInference(kind string) (spanType, op string, ok bool) {
	switch strings.ToUpper(strings.TrimSpace(kind)) {
	case "LLM":
		return schema.TypeInference, "chat", true
	case "EMBEDDING":
		return schema.TypeInference, "embeddings", true
	case "TOOL":
		return schema.TypeTool, "execute_tool", true
	case "AGENT":
		return schema.TypeAgent, "invoke_agent", true
	case "CHAIN":
		return schema.TypeAgent, "invoke_workflow", true
	case "RETRIEVER":
		return schema.TypeOther, "retrieval", true
	case "RERANKER", "GUARDRAIL", "EVALUATOR", "PROMPT":
		return schema.TypeOther, "", true
	}
	return "", "", false
}

// spanTypeFromTraceloop maps traceloop.span.kind to a span type and operation.
func spanTypeFromTraceloop(kind string) (spanType, op string, ok bool) {
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "workflow":
		return schema.TypeAgent, "invoke_workflow", true
	case "agent":
		return schema.TypeAgent, "invoke_agent", true
	case "tool":
		return schema.TypeTool, "execute_tool", true
	case "task":
		return schema.TypeOther, "", true
	}
	return "", "", false
}

// spanTypeFromVercel maps a Vercel AI SDK span name (or ai.operationId) to a
// span type and operation. The outer ai.generateText / ai.streamText /
// ai.generateObject / ai.streamObject / ai.embed spans repeat their do*
// children's usage, so they are agent spans (aggregated usage).
func spanTypeFromVercel(name string) (spanType, op string, ok bool) {
	switch name {
	case "ai.generateText.doGenerate", "ai.streamText.doStream",
		"ai.generateObject.doGenerate", "ai.streamObject.doStream":
		return schema.TypeInference, "chat", true
	case "ai.embed.doEmbed", "ai.embedMany.doEmbed":
		return schema.TypeInference, "embeddings", true
	case "ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject",
		"ai.embed", "ai.embedMany":
		return schema.TypeAgent, "invoke_agent", true
	case "ai.toolCall":
		return schema.TypeTool, "execute_tool", true
	}
	return "", "", false
}

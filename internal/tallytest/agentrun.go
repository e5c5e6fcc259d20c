package tallytest

import (
	"cmp"
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// AgentRun says how SendAgentRun builds and exports its run. Empty names
// take the defaults shown.
type AgentRun struct {
	RootAgent    string    // root agent's name; "planner" when empty
	SubAgent     string    // sub-agent's name; "researcher" when empty
	Conversation string    // gen_ai.conversation.id; "conv-1" when empty
	Base         time.Time // start of the root span; span times are offsets from it
	Gzip         bool      // gzip the request body (otherwise no compression)
	// ExporterOptions are added after the endpoint, before the compression.
	ExporterOptions []otlptracehttp.Option
	// Question and Answer, when Question is set, are captured as messages
	// in the OpenTelemetry parts schema: the claude call gets system
	// instructions, the user's Question and answers with a web_search tool
	// call (call_1); the gpt-4o call gets the Question and the tool's
	// result and answers Answer.
	Question, Answer string
	// Evaluation, when set, is recorded on the root span as the GenAI
	// semantic conventions' gen_ai.evaluation.result event.
	Evaluation *Evaluation
	// Task is task.name on the root span; "triage_ticket" when empty.
	Task string
	// The run's configuration (GET /api/v1/versions), when set:
	// gen_ai.agent.version on the root; Langfuse's prompt name and version,
	// gen_ai.tool.definitions, gen_ai.system_instructions and another
	// request model on the claude call.
	AgentVersion              string
	PromptName, PromptVersion string
	ToolDefinitions           string
	Instructions              string
	ClaudeModel               string
	// Fail ends the root span in error (the run's status is error).
	Fail bool
	// Case is the dataset case the run tried, as Langfuse's experiment
	// runner records it (langfuse.experiment.item.id on the root span).
	Case string
}

// Evaluation is a gen_ai.evaluation.result event's attributes (empty ones
// are left out; a nil Score too).
type Evaluation struct {
	Name, Label, Explanation string
	Score                    *float64
}

// SendAgentRun exports one hand-built agent run through the real OTel Go
// SDK exporter (protobuf, one request at shutdown) to endpoint and returns
// its trace id. Service "support-bot", task "triage_ticket"; offsets in ms
// from run.Base:
//
//	invoke_agent <root>            0–4000 (aggregated usage 3000 in / 300 out: must not be added)
//	├── chat claude-sonnet-4-5     10–1210 anthropic, additive report: input 200 + cache read 800, output 100
//	├── execute_tool web_search    1220–1720 args {"q":"otel","limit":3}
//	└── invoke_agent <sub>         1730–3760
//	    ├── chat gpt-4o            1740–2740 openai, inclusive: input 2000 incl. 1500 cache read, output 200
//	    └── execute_tool fetch_url 2750–3750 error (timeout)
//
// Expected figures, worked out by hand:
//
//	spans 6, LLM calls 2, tool calls 2, errors 1, recovered errors 1 (the root
//	ended ok, so the run's status is ok), duration 4000 ms
//	usage counts inference spans only (the root's 3000/300 is not added):
//	  input: claude 200 + 800 cache read (additive made inclusive) = 1000; gpt-4o 2000 → 3000
//	  cache read: 800 + 1500 = 2300; output: 100 + 200 = 300
//	claude-sonnet-4-5 ($3 in, $0.30 cache read, $15 out per M):
//	  200 × 3e-6 + 800 × 0.3e-6 + 100 × 15e-6 = 0.0006 + 0.00024 + 0.0015 = 0.00234
//	gpt-4o ($2.50 in, $1.25 cache read, $10 out per M):
//	  500 × 2.5e-6 + 1500 × 1.25e-6 + 200 × 10e-6 = 0.00125 + 0.001875 + 0.002 = 0.005125
//	cost total 0.00234 + 0.005125 = 0.007465
func SendAgentRun(t testing.TB, endpoint string, run AgentRun) (traceID string) {
	t.Helper()
	rootAgent := cmp.Or(run.RootAgent, "planner")
	subAgent := cmp.Or(run.SubAgent, "researcher")
	conversation := cmp.Or(run.Conversation, "conv-1")
	opts := append([]otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint + "/v1/traces")}, run.ExporterOptions...)
	if run.Gzip {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	} else {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		t.Fatalf("exporter: %v", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp), // one request for the whole run at Shutdown
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "support-bot"))),
	)
	tr := tp.Tracer("tallytest")
	at := func(ms int) time.Time { return run.Base.Add(time.Duration(ms) * time.Millisecond) }
	span := func(ctx context.Context, name string, start int, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
		return tr.Start(ctx, name, trace.WithTimestamp(at(start)), trace.WithAttributes(attrs...))
	}
	ctx, root := span(context.Background(), "invoke_agent "+rootAgent, 0,
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", rootAgent),
		attribute.String("task.name", cmp.Or(run.Task, "triage_ticket")),
		attribute.String("gen_ai.conversation.id", conversation),
		attribute.Int("gen_ai.usage.input_tokens", 3000),
		attribute.Int("gen_ai.usage.output_tokens", 300))
	_, chat := span(ctx, "chat claude-sonnet-4-5", 10,
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "anthropic"),
		attribute.String("gen_ai.request.model", cmp.Or(run.ClaudeModel, "claude-sonnet-4-5")),
		attribute.String("gen_ai.response.model", "claude-sonnet-4-5-20250929"),
		attribute.Int("gen_ai.usage.input_tokens", 200),
		attribute.Int("gen_ai.usage.cache_read.input_tokens", 800),
		attribute.Int("gen_ai.usage.output_tokens", 100))
	if run.Question != "" {
		chat.SetAttributes(
			attribute.String("gen_ai.system_instructions", `[{"type":"text","content":"You triage support tickets."}]`),
			attribute.String("gen_ai.input.messages", messagesJSON(msg{"role": "user", "parts": []msg{{"type": "text", "content": run.Question}}})),
			attribute.String("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"tool_call","id":"call_1","name":"web_search","arguments":{"q":"otel","limit":3}}],"finish_reason":"tool_call"}]`))
	}
	if run.PromptName != "" {
		chat.SetAttributes(attribute.String("langfuse.observation.prompt.name", run.PromptName),
			attribute.String("langfuse.observation.prompt.version", run.PromptVersion))
	}
	if run.ToolDefinitions != "" {
		chat.SetAttributes(attribute.String("gen_ai.tool.definitions", run.ToolDefinitions))
	}
	if run.Instructions != "" {
		chat.SetAttributes(attribute.String("gen_ai.system_instructions", run.Instructions))
	}
	chat.End(trace.WithTimestamp(at(1210)))
	_, tool := span(ctx, "execute_tool web_search", 1220,
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "web_search"),
		attribute.String("gen_ai.tool.call.id", "call_1"),
		attribute.String("gen_ai.tool.call.arguments", `{"q":"otel","limit":3}`),
		attribute.String("gen_ai.tool.call.result", `{"hits":2}`))
	tool.End(trace.WithTimestamp(at(1720)))
	sctx, sub := span(ctx, "invoke_agent "+subAgent, 1730,
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", subAgent))
	_, chat2 := span(sctx, "chat gpt-4o", 1740,
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "openai"),
		attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Int("gen_ai.usage.input_tokens", 2000),
		attribute.Int("gen_ai.usage.cache_read.input_tokens", 1500),
		attribute.Int("gen_ai.usage.output_tokens", 200))
	if run.Question != "" {
		chat2.SetAttributes(
			attribute.String("gen_ai.input.messages", messagesJSON(
				msg{"role": "user", "parts": []msg{{"type": "text", "content": run.Question}}},
				msg{"role": "tool", "parts": []msg{{"type": "tool_call_response", "id": "call_1", "response": msg{"hits": 2}}}})),
			attribute.String("gen_ai.output.messages", messagesJSON(
				msg{"role": "assistant", "parts": []msg{{"type": "text", "content": run.Answer}}, "finish_reason": "stop"})))
	}
	chat2.End(trace.WithTimestamp(at(2740)))
	_, fetch := span(sctx, "execute_tool fetch_url", 2750,
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "fetch_url"),
		attribute.String("error.type", "timeout"))
	fetch.SetStatus(codes.Error, "timed out")
	fetch.End(trace.WithTimestamp(at(3750)))
	sub.End(trace.WithTimestamp(at(3760)))
	if ev := run.Evaluation; ev != nil {
		attrs := []attribute.KeyValue{attribute.String("gen_ai.evaluation.name", ev.Name)}
		if ev.Label != "" {
			attrs = append(attrs, attribute.String("gen_ai.evaluation.score.label", ev.Label))
		}
		if ev.Explanation != "" {
			attrs = append(attrs, attribute.String("gen_ai.evaluation.explanation", ev.Explanation))
		}
		if ev.Score != nil {
			attrs = append(attrs, attribute.Float64("gen_ai.evaluation.score.value", *ev.Score))
		}
		root.AddEvent("gen_ai.evaluation.result", trace.WithTimestamp(at(3990)), trace.WithAttributes(attrs...))
	}
	if run.AgentVersion != "" {
		root.SetAttributes(attribute.String("gen_ai.agent.version", run.AgentVersion))
	}
	if run.Fail {
		root.SetStatus(codes.Error, "the run failed")
	}
	if run.Case != "" {
		root.SetAttributes(attribute.String("langfuse.experiment.item.id", run.Case))
	}
	root.End(trace.WithTimestamp(at(4000)))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatalf("export: %v", err)
	}
	return root.SpanContext().TraceID().String()
}

// msg is a JSON object of the OpenTelemetry parts schema.
type msg = map[string]any

// messagesJSON writes messages as a gen_ai.*.messages value.
func messagesJSON(messages ...msg) string {
	b, err := json.Marshal(messages)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// SendVersionRegression exports twenty runs of task cmp_task a minute
// apart from base: agent version 1.0 passing 9 of 10 (the first fails),
// then 1.1 passing 3 of 10 (the last seven fail) — a pass rate falling
// from 0.9 to 0.3, every run costing the same. The comparison tests of
// versions, alerts, the CLI and the UI share it.
func SendVersionRegression(t testing.TB, endpoint string, base time.Time) {
	t.Helper()
	for i := range 20 {
		v, fail := "1.0", i == 0
		if i >= 10 {
			v, fail = "1.1", i >= 13
		}
		SendAgentRun(t, endpoint, AgentRun{Task: "cmp_task", AgentVersion: v, Fail: fail, Base: base.Add(time.Duration(i) * time.Minute)})
	}
}

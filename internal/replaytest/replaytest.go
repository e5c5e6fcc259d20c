// Package replaytest sends the agent runs that replay's integration tests
// export: a small trip-planning run recorded through the real OpenTelemetry
// Go SDK exporter, with fixed trace and span ids and timestamps so that the
// exported fixture can be compared with a hand-written file.
package replaytest

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Trace ids of the runs SendTrip sends.
const (
	// CapturedTraceID is the run sent with content capture on: tool
	// arguments and results as gen_ai.tool.call.arguments/result and, on the
	// OpenInference span, as input.value/output.value.
	CapturedTraceID = "0af7651916cd43dd8448eb211c80319c"
	// UncapturedTraceID is the same run sent with content capture off: no
	// arguments or results at all.
	UncapturedTraceID = "0af7651916cd43dd8448eb211c80319d"
)

// Start is when the runs start: 2025-03-01T10:00:00Z.
func Start() time.Time { return time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC) }

// SendTrip exports one trip-planning run to the OTLP/HTTP base URL endpoint
// through otlptracehttp and returns when the server acknowledged it. Span ids
// are 0000000000000001, 0000000000000002, … in the order below; times are
// milliseconds after Start.
//
//	0001 invoke_agent trip-planner  0–5000    agent trip-planner, task plan_trip, conversation conv-42
//	0002 chat gpt-4o                10–1010   openai gpt-4o, 1200 in / 80 out
//	0003 execute_tool search        1020–1270 call_1, args {"q":"hotels in Lisbon","limit":10}
//	                                          result {"hits":[{"id":"h1","name":"Casa Azul"}]}
//	0004 execute_tool get_weather   1300–1800 attempt 1, error timeout "upstream timed out after 5s"
//	                                          args {"city":"Lisbon"}
//	0005 execute_tool get_weather   1900–2020 attempt 2, args { "city": "Lisbon" }
//	                                          result {"temp_c":18.5,"sky":"clear"}
//	0006 book (OpenInference TOOL)  2100–2350.5 input.value {"nights":3,"hotel_id":"h1"}
//	                                          output.value confirmed <ref ABC123> & emailed
//
// With capture false, no span carries arguments, results or input/output
// values, and the trace id is UncapturedTraceID instead of CapturedTraceID.
// Headers are added to the export request (e.g. Authorization).
func SendTrip(t testing.TB, endpoint string, capture bool, headers map[string]string) string {
	t.Helper()
	traceHex := UncapturedTraceID
	if capture {
		traceHex = CapturedTraceID
	}
	traceID, err := trace.TraceIDFromHex(traceHex)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"),
		otlptracehttp.WithHeaders(headers))
	if err != nil {
		t.Fatalf("otlp exporter: %v", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp), // one request for the whole run at Shutdown
		sdktrace.WithIDGenerator(&sequentialIDs{traceID: traceID}),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "travel-bot"))),
	)
	tr := tp.Tracer("replaytest")
	at := func(ms float64) time.Time { return Start().Add(time.Duration(ms * float64(time.Millisecond))) }
	span := func(ctx context.Context, name string, start float64, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
		return tr.Start(ctx, name, trace.WithTimestamp(at(start)), trace.WithAttributes(attrs...))
	}
	content := func(attrs ...attribute.KeyValue) []attribute.KeyValue {
		if capture {
			return attrs
		}
		return nil
	}

	ctx, root := span(context.Background(), "invoke_agent trip-planner", 0,
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "trip-planner"),
		attribute.String("task.name", "plan_trip"),
		attribute.String("gen_ai.conversation.id", "conv-42"))

	_, chat := span(ctx, "chat gpt-4o", 10,
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "openai"),
		attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Int("gen_ai.usage.input_tokens", 1200),
		attribute.Int("gen_ai.usage.output_tokens", 80))
	chat.End(trace.WithTimestamp(at(1010)))

	_, search := span(ctx, "execute_tool search", 1020, append([]attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "search"),
		attribute.String("gen_ai.tool.call.id", "call_1"),
	}, content(
		attribute.String("gen_ai.tool.call.arguments", `{"q":"hotels in Lisbon","limit":10}`),
		attribute.String("gen_ai.tool.call.result", `{"hits":[{"id":"h1","name":"Casa Azul"}]}`),
	)...)...)
	search.End(trace.WithTimestamp(at(1270)))

	_, weather1 := span(ctx, "execute_tool get_weather", 1300, append([]attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "get_weather"),
		attribute.Int("gen_ai.tool.call.attempt", 1),
		attribute.String("error.type", "timeout"),
	}, content(
		attribute.String("gen_ai.tool.call.arguments", `{"city":"Lisbon"}`),
	)...)...)
	weather1.SetStatus(codes.Error, "upstream timed out after 5s")
	weather1.End(trace.WithTimestamp(at(1800)))

	_, weather2 := span(ctx, "execute_tool get_weather", 1900, append([]attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "get_weather"),
		attribute.Int("gen_ai.tool.call.attempt", 2),
	}, content(
		attribute.String("gen_ai.tool.call.arguments", `{ "city": "Lisbon" }`),
		attribute.String("gen_ai.tool.call.result", `{"temp_c":18.5,"sky":"clear"}`),
	)...)...)
	weather2.End(trace.WithTimestamp(at(2020)))

	_, book := span(ctx, "book", 2100, append([]attribute.KeyValue{
		attribute.String("openinference.span.kind", "TOOL"),
		attribute.String("tool.name", "book"),
	}, content(
		attribute.String("input.value", `{"nights":3,"hotel_id":"h1"}`),
		attribute.String("output.value", "confirmed <ref ABC123> & emailed"),
	)...)...)
	book.End(trace.WithTimestamp(at(2350.5)))

	root.End(trace.WithTimestamp(at(5000)))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatalf("export run: %v", err)
	}
	return traceHex
}

// sequentialIDs gives every span of one trace the ids 1, 2, 3, … in the
// order they start.
type sequentialIDs struct {
	traceID trace.TraceID
	mu      sync.Mutex
	next    uint64
}

// NewIDs returns the fixed trace id and the next span id.
func (g *sequentialIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	return g.traceID, g.NewSpanID(ctx, g.traceID)
}

// NewSpanID returns the next span id.
func (g *sequentialIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], g.next)
	return id
}

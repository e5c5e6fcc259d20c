package tallytest

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span is one span of a hand-built run SendSpans exports: its key (to
// find its span id after), its parent's key ("" for the root, which must
// come first), its name, its start and end in milliseconds after the
// run's base time, its attributes, an error to end it with, and events.
type Span struct {
	Key, Parent string
	Name        string
	Start, End  int
	Attrs       []attribute.KeyValue
	Error       string
	Events      []Event
}

// Event is an event on a Span, at a millisecond after the base time.
type Event struct {
	Name  string
	At    int
	Attrs []attribute.KeyValue
}

// Tool is a GenAI execute_tool span under parent.
func Tool(key, parent, name string, start, end int, attrs ...attribute.KeyValue) Span {
	return Span{Key: key, Parent: parent, Name: "execute_tool " + name, Start: start, End: end,
		Attrs: append([]attribute.KeyValue{attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", name)}, attrs...)}
}

// Chat is a GenAI chat span under parent offering the tools in
// definitions (gen_ai.tool.definitions; "" for none), with its usage.
func Chat(key, parent, model string, start, end int, definitions string, in, out int) Span {
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "openai"),
		attribute.String("gen_ai.request.model", model), attribute.Int("gen_ai.usage.input_tokens", in), attribute.Int("gen_ai.usage.output_tokens", out)}
	if definitions != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.definitions", definitions))
	}
	return Span{Key: key, Parent: parent, Name: "chat " + model, Start: start, End: end, Attrs: attrs}
}

// SendSpans exports spans as one run through the real OTel Go SDK (service
// name service, base the run's time zero) and returns the trace id and
// the span ids by key.
func SendSpans(t testing.TB, endpoint, service string, base time.Time, spans []Span) (traceID string, ids map[string]string) {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		t.Fatalf("exporter: %v", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	tr := tp.Tracer("tallytest")
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ctxs := map[string]context.Context{}
	ids = map[string]string{}
	open := map[string]trace.Span{}
	for _, s := range spans {
		parent := context.Background()
		if s.Parent != "" {
			p, ok := ctxs[s.Parent]
			if !ok {
				t.Fatalf("span %s: parent %s comes later or not at all", s.Key, s.Parent)
			}
			parent = p
		}
		ctx, span := tr.Start(parent, s.Name, trace.WithTimestamp(at(s.Start)), trace.WithAttributes(s.Attrs...))
		for _, e := range s.Events {
			span.AddEvent(e.Name, trace.WithTimestamp(at(e.At)), trace.WithAttributes(e.Attrs...))
		}
		if s.Error != "" {
			span.SetAttributes(attribute.String("error.type", s.Error))
			span.SetStatus(codes.Error, s.Error)
		}
		ctxs[s.Key], open[s.Key] = ctx, span
		ids[s.Key] = span.SpanContext().SpanID().String()
		traceID = span.SpanContext().TraceID().String()
	}
	// End children before parents, as instrumentations do.
	for i := len(spans) - 1; i >= 0; i-- {
		open[spans[i].Key].End(trace.WithTimestamp(at(spans[i].End)))
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatalf("export: %v", err)
	}
	return traceID, ids
}

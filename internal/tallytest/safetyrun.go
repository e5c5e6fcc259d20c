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

// SafetyPolicy is the tool effect policy SendSafetyRun's run is reviewed
// under (tally serve --tool-effects).
var SafetyPolicy = []string{"charge_*=irreversible", "upsert_*=idempotent", "search_*=read"}

// SendSafetyRun exports, through the real OTel Go SDK, one run of a
// cashier agent whose tool steps raise exactly two safety signals under
// SafetyPolicy, and returns its trace id and the span ids by step:
//
//	approve1 approval       approved by ana for charge_card
//	charge1  charge_card    step pay-1, ok                   irreversible, gated
//	approve2 approval       approved by ana for charge_card
//	charge2  charge_card    step pay-1, ok again             → duplicate_side_effect
//	refund1  refund         call c9, error timeout           non_idempotent (declared): ambiguous
//	refund2  refund         call c9, attempt 2, ok           → unsafe_retry
//	search1  search_docs    call s1, error timeout           a read: no signal
//	search2  search_docs    call s1, ok
//	upsert1  upsert_profile step k, ok                       idempotent: no signal
//	upsert2  upsert_profile step k, ok
func SendSafetyRun(t testing.TB, endpoint string, base time.Time) (traceID string, spans map[string]string) {
	t.Helper()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		t.Fatalf("exporter: %v", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "shop"))))
	tr := tp.Tracer("tallytest")
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ctx, root := tr.Start(context.Background(), "invoke_agent cashier", trace.WithTimestamp(at(0)), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"), attribute.String("gen_ai.agent.name", "cashier"),
		attribute.String("task.name", "checkout")))
	spans = map[string]string{}
	tool := func(key, name string, start int, fail string, attrs ...attribute.KeyValue) {
		attrs = append(attrs, attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", name))
		if fail != "" {
			attrs = append(attrs, attribute.String("error.type", fail))
		}
		_, s := tr.Start(ctx, "execute_tool "+name, trace.WithTimestamp(at(start)), trace.WithAttributes(attrs...))
		if fail != "" {
			s.SetStatus(codes.Error, fail)
		}
		s.End(trace.WithTimestamp(at(start + 50)))
		spans[key] = s.SpanContext().SpanID().String()
	}
	approve := func(key string, start int) {
		_, s := tr.Start(ctx, "approval charge_card", trace.WithTimestamp(at(start)), trace.WithAttributes(
			attribute.String("tally.approval.decision", "approved"), attribute.String("tally.approval.by", "ana"),
			attribute.String("tally.approval.tool", "charge_card")))
		s.End(trace.WithTimestamp(at(start + 400)))
		spans[key] = s.SpanContext().SpanID().String()
	}
	approve("approve1", 500)
	tool("charge1", "charge_card", 1000, "", attribute.String("gen_ai.step.id", "pay-1"))
	approve("approve2", 1500)
	tool("charge2", "charge_card", 2000, "", attribute.String("gen_ai.step.id", "pay-1"))
	tool("refund1", "refund", 3000, "timeout", attribute.String("gen_ai.tool.call.id", "c9"), attribute.String("tally.tool.effect", "non_idempotent"))
	tool("refund2", "refund", 4000, "", attribute.String("gen_ai.tool.call.id", "c9"), attribute.Int("attempt", 2),
		attribute.String("tally.tool.effect", "non_idempotent"))
	tool("search1", "search_docs", 5000, "timeout", attribute.String("gen_ai.tool.call.id", "s1"))
	tool("search2", "search_docs", 6000, "", attribute.String("gen_ai.tool.call.id", "s1"))
	tool("upsert1", "upsert_profile", 7000, "", attribute.String("gen_ai.step.id", "k"))
	tool("upsert2", "upsert_profile", 8000, "", attribute.String("gen_ai.step.id", "k"))
	root.End(trace.WithTimestamp(at(9000)))
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatalf("export: %v", err)
	}
	return root.SpanContext().TraceID().String(), spans
}

package demo

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// ExportRequest is the OTLP request that carries runs: one ResourceSpans per
// service (in order of first appearance), one ScopeSpans (ScopeName) each,
// spans parents first. It is what Send's exporter would post, built without
// the SDK, for loaders and benchmarks that need request bodies.
func ExportRequest(runs []Run) *coltracepb.ExportTraceServiceRequest {
	req := &coltracepb.ExportTraceServiceRequest{}
	byService := map[string]*tracepb.ScopeSpans{}
	for i := range runs {
		r := &runs[i]
		scope := byService[r.Service]
		if scope == nil {
			scope = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ScopeName}}
			byService[r.Service] = scope
			req.ResourceSpans = append(req.ResourceSpans, &tracepb.ResourceSpans{
				Resource:   &resourcepb.Resource{Attributes: keyValues(r.Resource)},
				ScopeSpans: []*tracepb.ScopeSpans{scope},
			})
		}
		traceID := r.TraceID
		r.Walk(func(parent trace.SpanID, s *SpanSpec) {
			span := &tracepb.Span{
				TraceId:           traceID[:],
				SpanId:            append([]byte(nil), s.SpanID[:]...),
				Name:              s.Name,
				Kind:              tracepb.Span_SpanKind(s.Kind),
				StartTimeUnixNano: uint64(s.Start.UnixNano()),
				EndTimeUnixNano:   uint64(s.End.UnixNano()),
				Attributes:        keyValues(s.Attributes),
				Status:            &tracepb.Status{Code: statusCode(s.Status), Message: s.StatusMessage},
			}
			if parent.IsValid() {
				span.ParentSpanId = append([]byte(nil), parent[:]...)
			}
			for _, e := range s.Events {
				span.Events = append(span.Events, &tracepb.Span_Event{
					TimeUnixNano: uint64(e.Time.UnixNano()),
					Name:         e.Name,
					Attributes:   keyValues(e.Attributes),
				})
			}
			scope.Spans = append(scope.Spans, span)
		})
	}
	return req
}

func statusCode(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

func keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRINGSLICE:
		var values []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			values = append(values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: values}}}
	case attribute.INT64SLICE:
		var values []*commonpb.AnyValue
		for _, n := range v.AsInt64Slice() {
			values = append(values, &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}})
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: values}}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Emit()}}
}

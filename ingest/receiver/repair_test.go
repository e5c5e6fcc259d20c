package receiver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/access"
)

var (
	goodTraceID = []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	goodSpanID  = []byte{0, 0, 0, 0, 0, 0, 0, 1}
)

// badIDRequest has four spans, two of them with ids of the wrong length
// (which pdata refuses to decode at all), built with the OTLP protobuf types.
func badIDRequest(t testing.TB) []byte {
	t.Helper()
	span := func(name string, traceID, spanID []byte, links ...*tracepb.Span_Link) *tracepb.Span {
		return &tracepb.Span{Name: name, TraceId: traceID, SpanId: spanID, Links: links,
			StartTimeUnixNano: 1000, EndTimeUnixNano: 2000}
	}
	req := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{
			{Spans: []*tracepb.Span{
				span("ok-1", goodTraceID, goodSpanID),
				span("short-trace", goodTraceID[:15], []byte{0, 0, 0, 0, 0, 0, 0, 2}),
			}},
			{Spans: []*tracepb.Span{
				span("bad-link", goodTraceID, []byte{0, 0, 0, 0, 0, 0, 0, 3},
					&tracepb.Span_Link{TraceId: goodTraceID, SpanId: []byte{1, 2, 3}}),
				span("ok-2", goodTraceID, []byte{0, 0, 0, 0, 0, 0, 0, 4}),
			}},
		},
	}}}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadIDsRejectedThroughPartialSuccess(t *testing.T) {
	const jsonBadIDs = `{"resourceSpans":[{"scopeSpans":[{"spans":[
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000001","name":"ok-1","kind":1,"startTimeUnixNano":"1000","endTimeUnixNano":2000},
		{"traceId":"0102030405060708090a0b0c0d0e0f","spanId":"0000000000000002","name":"short-trace"},
		{"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"00000000000000zz","name":"not-hex"},
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0000000000000004","parentSpanId":"0000000000000001","name":"ok-2","startTimeUnixNano":"1000","endTimeUnixNano":"2000"}
	]}]}]}`
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		wantMessage       string
	}{
		{"protobuf", contentProtobuf, badIDRequest(t),
			`span (name "short-trace"): trace id has 15 bytes, want 16; span (name "bad-link"): link span id has 3 bytes, want 8`},
		{"json", contentJSON, []byte(jsonBadIDs),
			`span (name "short-trace"): trace id has 15 bytes, want 16; span (name "not-hex"): span id "00000000000000zz" is not hex`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			w := serve(newHandler(t, Config{}, s), request(tc.body, tc.contentType))
			ps := exportResponse(t, w).PartialSuccess()
			if ps.RejectedSpans() != 2 || ps.ErrorMessage() != tc.wantMessage {
				t.Errorf("partial_success = (%d, %q), want (2, %q)", ps.RejectedSpans(), ps.ErrorMessage(), tc.wantMessage)
			}
			want := []schema.Span{
				{Project: access.DefaultProject, TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000001", Name: "ok-1"},
				{Project: access.DefaultProject, TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000004", Name: "ok-2"},
			}
			assertSpans(t, s.spans(), want)
		})
	}
}

func TestBadIDsCountTowardSpanLimit(t *testing.T) {
	// 4 spans in the request (2 with bad ids) against a limit of 3.
	h := newHandler(t, Config{Limits: ingest.Limits{MaxSpansPerRequest: 3}}, &sink{})
	st := status(t, serve(h, request(badIDRequest(t), contentProtobuf)), http.StatusRequestEntityTooLarge)
	if want := "request has 4 spans, more than the limit of 3 spans per request"; st.GetMessage() != want {
		t.Errorf("message = %q, want %q", st.GetMessage(), want)
	}
}

// TestRealNormalize runs the receiver with ingest.Normalize: of the three
// spans in mixed_valid_invalid.json, the second ends (1000) before it starts
// (2000); the other two are stored.
func TestRealNormalize(t *testing.T) {
	normalize := func(dst ingest.Batch, tr wire.Traces, project string) (ingest.Batch, ingest.Rejected) {
		return ingest.NormalizeTracesInto(dst, tr, ingest.Options{Project: project, Limits: ingest.DefaultLimits(),
			Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	}
	s := &sink{}
	h := New(Config{}, normalize, s, nil, nil, nil)
	w := serve(h, request(readTestdata(t, "mixed_valid_invalid.json"), contentJSON))

	ps := exportResponse(t, w).PartialSuccess()
	if ps.RejectedSpans() != 1 {
		t.Errorf("rejected_spans = %d, want 1", ps.RejectedSpans())
	}
	if !strings.Contains(ps.ErrorMessage(), "bad-end-before-start") {
		t.Errorf("error_message = %q, want it to name the span bad-end-before-start", ps.ErrorMessage())
	}
	got := s.spans()
	if len(got) != 2 {
		t.Fatalf("sink got %d spans, want 2", len(got))
	}
	for i, want := range []struct {
		spanID     string
		name       string
		durationNs uint64
	}{
		{"1111111111111111", "ok-1", 1000}, // 2000 - 1000
		{"3333333333333333", "ok-2", 2000}, // 3000 - 1000
	} {
		g := got[i]
		if g.Project != access.DefaultProject || g.TraceID != "0102030405060708090a0b0c0d0e0f10" ||
			g.SpanID != want.spanID || g.Name != want.name || g.DurationNs != want.durationNs {
			t.Errorf("span %d = {%s %s %s %s %d}, want {%s %s %s %s %d}", i,
				g.Project, g.TraceID, g.SpanID, g.Name, g.DurationNs,
				access.DefaultProject, "0102030405060708090a0b0c0d0e0f10", want.spanID, want.name, want.durationNs)
		}
	}
}

package ingest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tallyhq/tally/schema"
)

// Times used by built spans: 2023-11-14T22:13:20.5Z, lasting 1.5 s.
const (
	testStartNs = uint64(1_700_000_000_500_000_000)
	testEndNs   = testStartNs + 1_500_000_000
)

var testTraceID = pcommon.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}

// putAttrs sets alternating key, value pairs on m, in order. Values are
// anything pcommon.Value.FromRaw takes (string, int, float64, bool, []any,
// map[string]any, []byte).
func putAttrs(t testing.TB, m pcommon.Map, kvs ...any) {
	t.Helper()
	if len(kvs)%2 != 0 {
		t.Fatalf("putAttrs: odd number of arguments")
	}
	for i := 0; i < len(kvs); i += 2 {
		if err := m.PutEmpty(kvs[i].(string)).FromRaw(kvs[i+1]); err != nil {
			t.Fatalf("putAttrs %v: %v", kvs[i], err)
		}
	}
}

// request builds an OTLP request with one resource and one scope.
type request struct {
	t     testing.TB
	td    ptrace.Traces
	spans ptrace.SpanSlice
	next  byte
}

func newRequest(t testing.TB, scope string, resAttrs ...any) *request {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	putAttrs(t, rs.Resource().Attributes(), resAttrs...)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scope)
	ss.Scope().SetVersion("1.2.3")
	return &request{t: t, td: td, spans: ss.Spans()}
}

// span appends a valid span (span ids 01, 02, … in order, all in testTraceID).
func (r *request) span(name string, attrs ...any) ptrace.Span {
	r.next++
	sp := r.spans.AppendEmpty()
	sp.SetName(name)
	sp.SetTraceID(testTraceID)
	sp.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, r.next})
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(pcommon.Timestamp(testStartNs))
	sp.SetEndTimestamp(pcommon.Timestamp(testEndNs))
	putAttrs(r.t, sp.Attributes(), attrs...)
	return sp
}

// fakePricer records the spans it priced and prices every one at
// 1 USD per million input tokens.
type fakePricer struct {
	called []string // span names
}

func (p *fakePricer) Apply(s *schema.Span) {
	p.called = append(p.called, s.Name)
	s.CostTotal = float64(s.InputTokens) / 1e6
	s.CostSource = schema.CostCatalog
	s.PriceEntry = "fake"
}

func fixedNow() time.Time { return time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC) }

// attrMap is a span's AttrKeys/AttrValues as a map.
func attrMap(keys, values []string) map[string]string {
	m := make(map[string]string, len(keys))
	for i, k := range keys {
		m[k] = values[i]
	}
	return m
}

// loadFixture reads an OTLP/JSON request from testdata.
func loadFixture(t testing.TB, name string) ptrace.Traces {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
	if err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return td
}

// contentsOf returns the content rows of one span, keyed by source key.
func contentsOf(cs []schema.Content, spanID string) map[string]schema.Content {
	m := map[string]schema.Content{}
	for _, c := range cs {
		if c.SpanID == spanID {
			m[c.SourceKey] = c
		}
	}
	return m
}

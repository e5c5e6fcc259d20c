package receiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/ingest"
	"github.com/tallyhq/tally/ingest/wire"
	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/access"
)

const (
	contentProtobuf = "application/x-protobuf"
	contentJSON     = "application/json"
)

// fakeNormalize keeps every span whose name does not start with "bad" and
// rejects the others, one message per rejected span.
func fakeNormalize(dst ingest.Batch, tr wire.Traces, project string) (ingest.Batch, ingest.Rejected) {
	batch := dst
	var rejected ingest.Rejected
	var reasons []string
	for _, rs := range tr.Resources {
		for _, ss := range rs.Scopes {
			for _, sp := range ss.Spans {
				if strings.HasPrefix(sp.Name, "bad") {
					rejected.Spans++
					reasons = append(reasons, "span "+idHex(sp.SpanID[:])+": "+sp.Name)
					continue
				}
				batch.Spans = append(batch.Spans, schema.Span{
					Project: project,
					TraceID: idHex(sp.TraceID[:]),
					SpanID:  idHex(sp.SpanID[:]),
					Name:    sp.Name,
				})
			}
		}
	}
	rejected.Message = strings.Join(reasons, "; ")
	return batch, rejected
}

// idHex is an id in hex, "" when all zero (as pcommon's String).
func idHex(id []byte) string {
	if !slices.ContainsFunc(id, func(b byte) bool { return b != 0 }) {
		return ""
	}
	return hex.EncodeToString(id)
}

// attr is the first value of key in kvs.
func attr(kvs []wire.KeyValue, key string) wire.Value {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return wire.Value{}
}

// sink records accepted batches; err, when set, is returned instead, and
// panicking makes Accept panic.
type sink struct {
	mu        sync.Mutex
	batches   []ingest.Batch
	err       error
	panicking bool
}

func (s *sink) Accept(_ context.Context, b ingest.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panicking {
		panic("sink exploded")
	}
	if s.err != nil {
		return s.err
	}
	s.batches = append(s.batches, b)
	return nil
}

// spans are all accepted span rows, in order.
func (s *sink) spans() []schema.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schema.Span
	for _, b := range s.batches {
		out = append(out, b.Spans...)
	}
	return out
}

// traces builds one resource with one span per name; span i (from 1) has
// trace id 0x0102…10 and span id i as 8 big-endian bytes.
func traces(names ...string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "planner")
	ss := rs.ScopeSpans().AppendEmpty()
	for i, name := range names {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
		var id pcommon.SpanID
		binary.BigEndian.PutUint64(id[:], uint64(i+1))
		sp.SetSpanID(id)
		sp.SetName(name)
		sp.SetStartTimestamp(1000)
		sp.SetEndTimestamp(2000)
	}
	return td
}

// spanNames returns n names "span-1" … "span-n".
func spanNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("span-%d", i+1)
	}
	return names
}

func protoBody(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatalf("marshal proto: %v", err)
	}
	return b
}

func jsonBody(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalJSON()
	if err != nil {
		t.Fatalf("marshal json: %v", err)
	}
	return b
}

func gzipped(t testing.TB, b []byte, level int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// request builds a POST with a known Content-Length.
func request(body []byte, contentType string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/traces", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

// chunked hides the body's length, as a chunked upload does.
func chunked(r *http.Request) *http.Request {
	r.Body = io.NopCloser(r.Body)
	r.ContentLength = -1
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func newHandler(t testing.TB, cfg Config, s Sink) *Handler {
	t.Helper()
	return New(cfg, fakeNormalize, s, nil, nil, nil)
}

// exportResponse decodes a 200 answer in the format of its Content-Type.
func exportResponse(t testing.TB, w *httptest.ResponseRecorder) ptraceotlp.ExportResponse {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200; body %q", w.Code, w.Body.String())
	}
	resp := ptraceotlp.NewExportResponse()
	var err error
	if strings.HasPrefix(w.Header().Get("Content-Type"), contentJSON) {
		err = resp.UnmarshalJSON(w.Body.Bytes())
	} else {
		err = resp.UnmarshalProto(w.Body.Bytes())
	}
	if err != nil {
		t.Fatalf("decode response %q: %v", w.Body.String(), err)
	}
	return resp
}

// status decodes an error answer's google.rpc.Status in the format of its
// Content-Type, checking the HTTP status on the way.
func status(t testing.TB, w *httptest.ResponseRecorder, wantCode int) *spb.Status {
	t.Helper()
	if w.Code != wantCode {
		t.Fatalf("status = %d, want %d; body %q", w.Code, wantCode, w.Body.String())
	}
	st := &spb.Status{}
	var err error
	switch ct := w.Header().Get("Content-Type"); ct {
	case contentJSON:
		err = protojson.Unmarshal(w.Body.Bytes(), st)
	case contentProtobuf, "application/protobuf":
		err = proto.Unmarshal(w.Body.Bytes(), st)
	default:
		t.Fatalf("error answer has Content-Type %q, want a google.rpc.Status encoding", ct)
	}
	if err != nil {
		t.Fatalf("decode google.rpc.Status %q: %v", w.Body.String(), err)
	}
	return st
}

func TestExportProtobuf(t *testing.T) {
	s := &sink{}
	h := newHandler(t, Config{}, s)
	w := serve(h, request(protoBody(t, traces("plan", "search", "answer")), contentProtobuf))

	resp := exportResponse(t, w)
	if got := w.Header().Get("Content-Type"); got != contentProtobuf {
		t.Errorf("Content-Type = %q, want %q", got, contentProtobuf)
	}
	if ps := resp.PartialSuccess(); ps.RejectedSpans() != 0 || ps.ErrorMessage() != "" {
		t.Errorf("partial_success = (%d, %q), want empty", ps.RejectedSpans(), ps.ErrorMessage())
	}
	want := []schema.Span{
		{Project: access.DefaultProject, TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000001", Name: "plan"},
		{Project: access.DefaultProject, TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000002", Name: "search"},
		{Project: access.DefaultProject, TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000003", Name: "answer"},
	}
	assertSpans(t, s.spans(), want)
}

func assertSpans(t *testing.T, got, want []schema.Span) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("sink got %d spans, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Project != w.Project || g.TraceID != w.TraceID || g.SpanID != w.SpanID || g.Name != w.Name {
			t.Errorf("span %d = {%s %s %s %s}, want {%s %s %s %s}", i,
				g.Project, g.TraceID, g.SpanID, g.Name, w.Project, w.TraceID, w.SpanID, w.Name)
		}
	}
}

// decodedSpan is what a test normalizer saw of one span.
type decodedSpan struct {
	service, scope, traceID, spanID, parentID, name string
	kind                                            ptrace.SpanKind
	startNs, endNs                                  uint64
	operation                                       string
	inputTokens                                     int64
	status                                          ptrace.StatusCode
	statusMessage                                   string
}

// capture returns a normalizer that records what it saw, and keeps every span.
func capture(seen *[]decodedSpan) Normalizer {
	return func(dst ingest.Batch, tr wire.Traces, project string) (ingest.Batch, ingest.Rejected) {
		for _, rs := range tr.Resources {
			service := attr(rs.Attributes, "service.name")
			for _, ss := range rs.Scopes {
				for _, sp := range ss.Spans {
					op := attr(sp.Attributes, "gen_ai.operation.name")
					in := attr(sp.Attributes, "gen_ai.usage.input_tokens")
					*seen = append(*seen, decodedSpan{
						service: service.Str(), scope: ss.Name + "@" + ss.Version,
						traceID: idHex(sp.TraceID[:]), spanID: idHex(sp.SpanID[:]), parentID: idHex(sp.ParentSpanID[:]),
						name: sp.Name, kind: ptrace.SpanKind(sp.Kind),
						startNs: sp.Start, endNs: sp.End,
						operation: op.Str(), inputTokens: in.Int(),
						status: ptrace.StatusCode(sp.StatusCode), statusMessage: sp.StatusMessage,
					})
				}
			}
		}
		return fakeNormalize(dst, tr, project)
	}
}

func TestExportJSON(t *testing.T) {
	// Both files describe the same span; they differ only in how int64s are
	// written. Enums are integers: kind 3 = CLIENT, status code 2 = ERROR.
	// 1735689600 s is 2025-01-01T00:00:00Z; the end is 1.5 s later.
	want := decodedSpan{
		service: "planner", scope: "tally-test@1.0.0",
		traceID: "5b8efff798038103d269b633813fc60c", spanID: "eee19b7ec3c1b174", parentID: "eee19b7ec3c1b173",
		name: "chat gpt-4o", kind: ptrace.SpanKindClient,
		startNs: 1735689600_000000000, endNs: 1735689601_500000000,
		operation: "chat", inputTokens: 1200,
		status: ptrace.StatusCodeError, statusMessage: "boom",
	}
	for _, tc := range []struct {
		file, contentType string
	}{
		{"span_int64_strings.json", contentJSON},
		{"span_int64_numbers.json", contentJSON},
		{"span_int64_strings.json", "application/json; charset=utf-8"},
	} {
		t.Run(tc.file+" "+tc.contentType, func(t *testing.T) {
			var seen []decodedSpan
			s := &sink{}
			h := New(Config{}, capture(&seen), s, nil, nil, nil)
			w := serve(h, request(readTestdata(t, tc.file), tc.contentType))

			exportResponse(t, w)
			if got := w.Header().Get("Content-Type"); got != contentJSON {
				t.Errorf("Content-Type = %q, want %q", got, contentJSON)
			}
			if len(seen) != 1 {
				t.Fatalf("normalizer saw %d spans, want 1", len(seen))
			}
			if seen[0] != want {
				t.Errorf("decoded span\n got %+v\nwant %+v", seen[0], want)
			}
			if len(s.spans()) != 1 {
				t.Errorf("sink got %d spans, want 1", len(s.spans()))
			}
		})
	}
}

// TestJSONTrailingDataRefused: pdata's JSON decoder stops after the first
// value, so a body with data after it must be refused whole, not half read.
func TestJSONTrailingDataRefused(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"resourceSpans":[]}`, http.StatusOK},
		{"{\"resourceSpans\":[]}\n", http.StatusOK},
		{`{"resourceSpans":[]} garbage`, http.StatusBadRequest},
		{`{"resourceSpans":[]}{}`, http.StatusBadRequest},
		{`{"resourceSpans":[]}]`, http.StatusBadRequest},
	} {
		h := New(Config{}, fakeNormalize, &sink{}, nil, nil, nil)
		w := serve(h, request([]byte(tc.body), contentJSON))
		if w.Code != tc.want {
			t.Errorf("body %q: status %d, want %d (%s)", tc.body, w.Code, tc.want, w.Body.String())
		}
	}
}

func TestResponseContentTypeMatchesRequest(t *testing.T) {
	td := traces("a", "bad-b")
	for _, tc := range []struct {
		contentType string
		body        []byte
		want        string
	}{
		{contentProtobuf, protoBody(t, td), contentProtobuf},
		{"application/protobuf", protoBody(t, td), "application/protobuf"},
		{"Application/X-Protobuf", protoBody(t, td), contentProtobuf},
		{contentJSON, jsonBody(t, td), contentJSON},
		{"application/json;charset=UTF-8", jsonBody(t, td), contentJSON},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			w := serve(newHandler(t, Config{}, &sink{}), request(tc.body, tc.contentType))
			resp := exportResponse(t, w)
			if got := w.Header().Get("Content-Type"); got != tc.want {
				t.Errorf("Content-Type = %q, want %q", got, tc.want)
			}
			// One of the two spans ("bad-b") is rejected by the fake normalizer.
			if got := resp.PartialSuccess().RejectedSpans(); got != 1 {
				t.Errorf("rejected_spans = %d, want 1", got)
			}
		})
	}
}

func TestGzip(t *testing.T) {
	td := traces("a", "b")
	for _, tc := range []struct {
		name, contentType, encoding string
		body                        []byte
	}{
		{"protobuf", contentProtobuf, "gzip", gzipped(t, protoBody(t, td), gzip.DefaultCompression)},
		{"json", contentJSON, "gzip", gzipped(t, jsonBody(t, td), gzip.BestSpeed)},
		{"x-gzip", contentProtobuf, "x-gzip", gzipped(t, protoBody(t, td), gzip.DefaultCompression)},
		{"identity", contentProtobuf, "identity", protoBody(t, td)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			r := request(tc.body, tc.contentType)
			r.Header.Set("Content-Encoding", tc.encoding)
			exportResponse(t, serve(newHandler(t, Config{}, s), r))
			if got := len(s.spans()); got != 2 {
				t.Errorf("sink got %d spans, want 2", got)
			}
		})
	}
}

// value reads the current value of a counter or gauge.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatalf("read metric: %v", err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestGzipBomb(t *testing.T) {
	const limit = 1 << 20 // 1 MiB
	// 100 MiB of zeros compress to about 100 KiB.
	var compressed bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&compressed, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 100 {
		if _, err := zw.Write(zeros); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}

	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	h := New(Config{Limits: ingest.Limits{MaxBodyBytes: limit}}, fakeNormalize, &sink{}, nil, nil, metrics)
	body := &countingReader{r: bytes.NewReader(compressed.Bytes())}
	r := request(nil, contentProtobuf)
	r.Body = io.NopCloser(body)
	r.ContentLength = int64(compressed.Len())
	r.Header.Set("Content-Encoding", "gzip")

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w := serve(h, r)
	runtime.ReadMemStats(&after)

	st := status(t, w, http.StatusRequestEntityTooLarge)
	if want := "request body exceeds the limit of 1048576 bytes after decompression"; st.GetMessage() != want {
		t.Errorf("message = %q, want %q", st.GetMessage(), want)
	}
	// The handler inflated at most limit+1 = 1048577 bytes.
	if got := value(t, metrics.decodedBytes); got > limit+1 {
		t.Errorf("decompressed %v bytes, want at most %d", got, limit+1)
	}
	if body.n >= int64(compressed.Len()) {
		t.Errorf("read all %d compressed bytes, want it to stop early", body.n)
	}
	// Loose: inflating it all would allocate over 100 MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d bytes while refusing a bomb, want under 16 MiB", alloc)
	}
}

// paddedBody is a valid protobuf request of exactly size bytes: one span
// whose attribute "pad" is as long as needed.
func paddedBody(t *testing.T, size int) []byte {
	t.Helper()
	build := func(pad int) []byte {
		td := traces("padded")
		sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		sp.Attributes().PutStr("pad", strings.Repeat("x", pad))
		return protoBody(t, td)
	}
	pad := 0
	for range 8 {
		b := build(pad)
		if len(b) == size {
			return b
		}
		pad += size - len(b)
		if pad < 0 {
			break
		}
	}
	t.Fatalf("cannot build a protobuf body of exactly %d bytes", size)
	return nil
}

func TestBodyLimitEdges(t *testing.T) {
	const limit = 64 << 10
	atLimit := paddedBody(t, limit)
	overLimit := paddedBody(t, limit+1)
	// Incompressible bytes stored without compression: the gzip stream (header,
	// block headers, trailer) is longer than limit though its content is not.
	random := make([]byte, limit-8)
	_, _ = rand.Read(random)
	storedRandom := gzipped(t, random, gzip.NoCompression)

	for _, tc := range []struct {
		name     string
		body     []byte
		gzip     bool
		chunked  bool
		want     int
		wantText string
	}{
		{name: "exactly at limit", body: atLimit, want: http.StatusOK},
		{name: "one over, by Content-Length", body: overLimit, want: http.StatusRequestEntityTooLarge,
			wantText: "request body of 65537 bytes exceeds the limit of 65536 bytes"},
		{name: "exactly at limit, chunked", body: atLimit, chunked: true, want: http.StatusOK},
		{name: "one over, chunked", body: overLimit, chunked: true, want: http.StatusRequestEntityTooLarge,
			wantText: "request body exceeds the limit of 65536 bytes"},
		{name: "gzip, decompressed exactly at limit", body: atLimit, gzip: true, want: http.StatusOK},
		{name: "gzip, decompressed one over", body: overLimit, gzip: true, want: http.StatusRequestEntityTooLarge,
			wantText: "request body exceeds the limit of 65536 bytes after decompression"},
		{name: "gzip, compressed over the limit", body: storedRandom, chunked: true, want: http.StatusRequestEntityTooLarge,
			wantText: "request body exceeds the limit of 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			h := newHandler(t, Config{Limits: ingest.Limits{MaxBodyBytes: limit}}, s)
			body := tc.body
			if tc.gzip {
				body = gzipped(t, body, gzip.BestCompression)
			}
			r := request(body, contentProtobuf)
			if tc.gzip || bytes.Equal(tc.body, storedRandom) {
				r.Header.Set("Content-Encoding", "gzip")
			}
			if tc.chunked {
				r = chunked(r)
			}
			w := serve(h, r)
			if tc.want == http.StatusOK {
				exportResponse(t, w)
				if got := len(s.spans()); got != 1 {
					t.Errorf("sink got %d spans, want 1", got)
				}
				return
			}
			if st := status(t, w, tc.want); st.GetMessage() != tc.wantText {
				t.Errorf("message = %q, want %q", st.GetMessage(), tc.wantText)
			}
			if len(s.spans()) != 0 {
				t.Errorf("sink got spans from a refused request")
			}
		})
	}
}

// failingReader fails the test if anything reads it.
type failingReader struct{ t *testing.T }

func (f failingReader) Read([]byte) (int, error) {
	f.t.Error("the body was read although Content-Length is over the limit")
	return 0, io.EOF
}

func TestContentLengthOverLimitNotRead(t *testing.T) {
	h := newHandler(t, Config{Limits: ingest.Limits{MaxBodyBytes: 1000}}, &sink{})
	r := request(nil, contentProtobuf)
	r.Body = io.NopCloser(failingReader{t})
	r.ContentLength = 1001
	status(t, serve(h, r), http.StatusRequestEntityTooLarge)
}

func TestSpansPerRequestEdges(t *testing.T) {
	const maxSpans = 5
	for _, tc := range []struct {
		spans    int
		want     int
		wantText string
	}{
		{spans: 5, want: http.StatusOK},
		{spans: 6, want: http.StatusRequestEntityTooLarge,
			wantText: "request has 6 spans, more than the limit of 5 spans per request"},
	} {
		t.Run(fmt.Sprint(tc.spans), func(t *testing.T) {
			s := &sink{}
			h := newHandler(t, Config{Limits: ingest.Limits{MaxSpansPerRequest: maxSpans}}, s)
			w := serve(h, request(protoBody(t, traces(spanNames(tc.spans)...)), contentProtobuf))
			if tc.want == http.StatusOK {
				exportResponse(t, w)
				if got := len(s.spans()); got != tc.spans {
					t.Errorf("sink got %d spans, want %d", got, tc.spans)
				}
				return
			}
			if st := status(t, w, tc.want); st.GetMessage() != tc.wantText {
				t.Errorf("message = %q, want %q", st.GetMessage(), tc.wantText)
			}
			if len(s.spans()) != 0 {
				t.Errorf("sink got spans from a refused request")
			}
		})
	}
}

func TestUnsupportedMediaType(t *testing.T) {
	body := protoBody(t, traces("a"))
	for _, tc := range []struct {
		name, contentType, encoding string
		wantPlain                   bool // no known format to answer in
		wantText                    string
	}{
		{name: "text/plain", contentType: "text/plain", wantPlain: true,
			wantText: `unsupported content type "text/plain": use application/x-protobuf or application/json` + "\n"},
		{name: "no content type", contentType: "", wantPlain: true,
			wantText: `unsupported content type "": use application/x-protobuf or application/json` + "\n"},
		{name: "xml", contentType: "application/xml", wantPlain: true,
			wantText: `unsupported content type "application/xml": use application/x-protobuf or application/json` + "\n"},
		{name: "brotli", contentType: contentProtobuf, encoding: "br",
			wantText: `unsupported content encoding "br": use gzip or none`},
		{name: "deflate", contentType: contentJSON, encoding: "deflate",
			wantText: `unsupported content encoding "deflate": use gzip or none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			r := request(body, tc.contentType)
			if tc.encoding != "" {
				r.Header.Set("Content-Encoding", tc.encoding)
			}
			w := serve(newHandler(t, Config{}, s), r)
			if tc.wantPlain {
				if w.Code != http.StatusUnsupportedMediaType {
					t.Fatalf("status = %d, want 415", w.Code)
				}
				if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
					t.Errorf("Content-Type = %q, want text/plain", ct)
				}
				if w.Body.String() != tc.wantText {
					t.Errorf("body = %q, want %q", w.Body.String(), tc.wantText)
				}
			} else {
				st := status(t, w, http.StatusUnsupportedMediaType)
				if st.GetMessage() != tc.wantText || st.GetCode() != codeInvalidArgument {
					t.Errorf("status = (%d, %q), want (%d, %q)", st.GetCode(), st.GetMessage(), codeInvalidArgument, tc.wantText)
				}
			}
			if len(s.spans()) != 0 {
				t.Errorf("sink got spans from a refused request")
			}
		})
	}
}

func TestMethodNotAllowed(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodHead, http.MethodOptions} {
		t.Run(method, func(t *testing.T) {
			r := httptest.NewRequest(method, "/v1/traces", nil)
			r.Header.Set("Content-Type", contentProtobuf)
			w := serve(newHandler(t, Config{}, &sink{}), r)
			if w.Code != http.StatusMethodNotAllowed {
				t.Fatalf("status = %d, want 405", w.Code)
			}
			if got := w.Header().Get("Allow"); got != "POST" {
				t.Errorf("Allow = %q, want POST", got)
			}
		})
	}
}

func TestUndecodableBody(t *testing.T) {
	// The envelope down to an attribute's value opens 9 levels, each nested
	// arrayValue 3 more, and the innermost {} one: 9 + 44*3 + 1 = 142 > 128.
	deep := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"k","value":` +
		strings.Repeat(`{"arrayValue":{"values":[`, 44) + `{}` + strings.Repeat(`]}}`, 44) + `}]}]}]}]}`
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		wantPrefix        string
	}{
		{"protobuf garbage", contentProtobuf, []byte{0xff, 0xff, 0xff, 0xff},
			"decode protobuf ExportTraceServiceRequest: "},
		{"protobuf truncated", contentProtobuf, protoBody(t, traces("a", "b"))[:20],
			"decode protobuf ExportTraceServiceRequest: "},
		{"json truncated", contentJSON, []byte(`{"resourceSpans": [`),
			"decode JSON ExportTraceServiceRequest: "},
		{"json not an object", contentJSON, []byte(`"hello"`),
			"decode JSON ExportTraceServiceRequest: "},
		{"json bad trace id, and not OTLP elsewhere", contentJSON, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"eee19b7ec3c1b174"},{"startTimeUnixNano":"soon"}]}]}]}`),
			"decode JSON ExportTraceServiceRequest: "},
		{"json too deep", contentJSON, []byte(deep),
			"decode JSON ExportTraceServiceRequest: objects and arrays nest deeper than 128 levels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			st := status(t, serve(newHandler(t, Config{}, s), request(tc.body, tc.contentType)), http.StatusBadRequest)
			if !strings.HasPrefix(st.GetMessage(), tc.wantPrefix) {
				t.Errorf("message = %q, want prefix %q", st.GetMessage(), tc.wantPrefix)
			}
			if st.GetCode() != codeInvalidArgument {
				t.Errorf("code = %d, want %d (InvalidArgument)", st.GetCode(), codeInvalidArgument)
			}
			if len(s.spans()) != 0 {
				t.Errorf("sink got spans from a refused request")
			}
		})
	}
}

func TestEmptyRequest(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, encoding string
		body                        []byte
		chunked                     bool
	}{
		{name: "empty protobuf", contentType: contentProtobuf},
		{name: "empty protobuf, chunked", contentType: contentProtobuf, chunked: true},
		{name: "empty json", contentType: contentJSON},
		{name: "json object", contentType: contentJSON, body: []byte(`{}`)},
		{name: "json without spans", contentType: contentJSON, body: readTestdata(t, "empty_resource_spans.json")},
		{name: "protobuf without spans", contentType: contentProtobuf, body: protoBody(t, traces())},
		{name: "gzip of nothing", contentType: contentProtobuf, encoding: "gzip", body: gzipped(t, nil, gzip.BestSpeed)},
		{name: "gzip header, empty body", contentType: contentProtobuf, encoding: "gzip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			r := request(tc.body, tc.contentType)
			if tc.encoding != "" {
				r.Header.Set("Content-Encoding", tc.encoding)
			}
			if tc.chunked {
				r = chunked(r)
			}
			resp := exportResponse(t, serve(newHandler(t, Config{}, s), r))
			if ps := resp.PartialSuccess(); ps.RejectedSpans() != 0 || ps.ErrorMessage() != "" {
				t.Errorf("partial_success = (%d, %q), want empty", ps.RejectedSpans(), ps.ErrorMessage())
			}
			if len(s.batches) != 0 {
				t.Errorf("sink called for an empty request")
			}
		})
	}
}

func TestPartialSuccess(t *testing.T) {
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{}
	h := New(Config{}, fakeNormalize, s, nil, nil, metrics)

	// 5 spans, 2 named bad: 3 kept, 2 rejected.
	w := serve(h, request(protoBody(t, traces("a", "bad-1", "b", "bad-2", "c")), contentProtobuf))
	ps := exportResponse(t, w).PartialSuccess()
	if ps.RejectedSpans() != 2 {
		t.Errorf("rejected_spans = %d, want 2", ps.RejectedSpans())
	}
	if want := "span 0000000000000002: bad-1; span 0000000000000004: bad-2"; ps.ErrorMessage() != want {
		t.Errorf("error_message = %q, want %q", ps.ErrorMessage(), want)
	}
	if got := len(s.spans()); got != 3 {
		t.Errorf("sink got %d spans, want 3", got)
	}

	// Every span invalid: still 200 with partial_success, and nothing stored.
	w = serve(h, request(jsonBody(t, traces("bad-x", "bad-y")), contentJSON))
	if got := exportResponse(t, w).PartialSuccess().RejectedSpans(); got != 2 {
		t.Errorf("all invalid: rejected_spans = %d, want 2", got)
	}
	if len(s.batches) != 1 {
		t.Errorf("sink called %d times, want once (not for the all-invalid request)", len(s.batches))
	}

	// Two 200s; 3 accepted; 2 + 2 = 4 rejected.
	for _, tc := range []struct {
		name string
		c    prometheus.Metric
		want float64
	}{
		{"requests 200", metrics.requests.WithLabelValues("200"), 2},
		{"accepted", metrics.spansAccepted, 3},
		{"rejected", metrics.spansRejected, 4},
		{"refused", metrics.spansRefused, 0},
		{"in flight after", metrics.inFlightBytes, 0},
	} {
		if got := value(t, tc.c); got != tc.want {
			t.Errorf("metric %s = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSinkRefuses(t *testing.T) {
	for _, tc := range []struct {
		name           string
		err            error
		wantStatus     int
		wantRetryAfter string
		wantCode       int32
		wantMessage    string
	}{
		{"busy", Busy(2*time.Second, errors.New("durable log full")), http.StatusTooManyRequests, "2",
			codeResourceExhausted, "durable log full; retry later"},
		{"unavailable, rounded up", Unavailable(1500*time.Millisecond, errors.New("clickhouse down")),
			http.StatusServiceUnavailable, "2", codeUnavailable, "clickhouse down; retry later"},
		{"wrapped retry error, default wait", fmt.Errorf("append: %w", Unavailable(0, errors.New("disk"))),
			http.StatusServiceUnavailable, "5", codeUnavailable, "append: disk; retry later"},
		{"plain error", errors.New("/var/tally/log: input/output error"), http.StatusServiceUnavailable, "5",
			codeUnavailable, "spans were not stored; retry later"},
		{"accept timed out", context.DeadlineExceeded, http.StatusServiceUnavailable, "5",
			codeUnavailable, "spans were not stored; retry later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metrics, err := NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			h := New(Config{}, fakeNormalize, &sink{err: tc.err}, nil, nil, metrics)
			w := serve(h, request(protoBody(t, traces("a", "b", "bad-c")), contentProtobuf))
			st := status(t, w, tc.wantStatus)
			if got := w.Header().Get("Retry-After"); got != tc.wantRetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tc.wantRetryAfter)
			}
			if st.GetCode() != tc.wantCode || st.GetMessage() != tc.wantMessage {
				t.Errorf("status = (%d, %q), want (%d, %q)", st.GetCode(), st.GetMessage(), tc.wantCode, tc.wantMessage)
			}
			// All 3 spans of the request are refused, none counted as accepted.
			if got := value(t, metrics.spansRefused); got != 3 {
				t.Errorf("refused = %v, want 3", got)
			}
			if got := value(t, metrics.spansAccepted); got != 0 {
				t.Errorf("accepted = %v, want 0", got)
			}
		})
	}
}

// authFunc adapts a function to Authenticator.
type authFunc func(r *http.Request) (string, error)

func (f authFunc) Authenticate(r *http.Request) (string, error) { return f(r) }

func TestAuthentication(t *testing.T) {
	auth := authFunc(func(r *http.Request) (string, error) {
		switch r.Header.Get("Authorization") {
		case "":
			return "", fmt.Errorf("missing bearer token: %w", access.ErrUnauthenticated)
		case "Bearer read-key":
			return "", fmt.Errorf("key cannot ingest: %w", access.ErrForbidden)
		case "Bearer broken":
			return "", errors.New("key store unreachable")
		default:
			return "team-a", nil
		}
	})
	for _, tc := range []struct {
		name, header string
		wantStatus   int
		wantMessage  string
	}{
		{"no key", "", http.StatusUnauthorized, "missing bearer token: unauthenticated"},
		{"read key", "Bearer read-key", http.StatusForbidden, "key cannot ingest: forbidden"},
		{"key store down", "Bearer broken", http.StatusServiceUnavailable, "authentication is unavailable; retry later"},
		{"ingest key", "Bearer ingest-key", http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			h := New(Config{}, fakeNormalize, s, auth, nil, nil)
			r := request(jsonBody(t, traces("a")), contentJSON)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			w := serve(h, r)
			if tc.wantStatus == http.StatusOK {
				exportResponse(t, w)
				want := []schema.Span{{Project: "team-a", TraceID: "0102030405060708090a0b0c0d0e0f10", SpanID: "0000000000000001", Name: "a"}}
				assertSpans(t, s.spans(), want)
				return
			}
			if st := status(t, w, tc.wantStatus); st.GetMessage() != tc.wantMessage {
				t.Errorf("message = %q, want %q", st.GetMessage(), tc.wantMessage)
			}
			if tc.wantStatus == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			if len(s.spans()) != 0 {
				t.Errorf("sink got spans from a refused request")
			}
		})
	}
}

func TestPanicInSinkKeepsServing(t *testing.T) {
	s := &sink{panicking: true}
	srv := httptest.NewServer(newHandler(t, Config{}, s))
	defer srv.Close()

	post := func() (int, []byte) {
		resp, err := http.Post(srv.URL+"/v1/traces", contentProtobuf, bytes.NewReader(protoBody(t, traces("a"))))
		if err != nil {
			t.Fatalf("post: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, body := post()
	if code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", code)
	}
	st := &spb.Status{}
	if err := proto.Unmarshal(body, st); err != nil || st.GetCode() != codeInternal {
		t.Errorf("500 body = %v (%v), want a google.rpc.Status with code %d", st, err, codeInternal)
	}

	s.mu.Lock()
	s.panicking = false
	s.mu.Unlock()
	if code, _ := post(); code != http.StatusOK {
		t.Fatalf("after a panic: status = %d, want 200", code)
	}
	if got := len(s.spans()); got != 1 {
		t.Errorf("sink got %d spans, want 1", got)
	}
}

// blockingSink holds Accept until released, telling when it is entered.
type blockingSink struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSink) Accept(ctx context.Context, _ ingest.Batch) error {
	b.entered <- struct{}{}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestInFlightBytesExhausted(t *testing.T) {
	const limit = 64 << 10
	bs := &blockingSink{entered: make(chan struct{}), release: make(chan struct{})}
	// MaxInFlightBytes below limit+1 is raised to limit+1 = 65537 bytes.
	h := New(Config{Limits: ingest.Limits{MaxBodyBytes: limit}, MaxInFlightBytes: 1},
		fakeNormalize, bs, nil, nil, nil)

	// The first request holds its 40000 bytes and waits in the sink.
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- serve(h, request(paddedBody(t, 40000), contentProtobuf)) }()
	<-bs.entered

	// 65537 - 40000 = 25537 bytes are left: a 30000-byte request does not fit,
	// neither with a known length nor chunked.
	w := serve(h, request(paddedBody(t, 30000), contentProtobuf))
	status(t, w, http.StatusTooManyRequests)
	if got := w.Header().Get("Retry-After"); got != "5" {
		t.Errorf("Retry-After = %q, want 5", got)
	}
	status(t, serve(h, chunked(request(paddedBody(t, 30000), contentProtobuf))), http.StatusTooManyRequests)

	// A small request still fits beside the big one.
	small := make(chan *httptest.ResponseRecorder)
	go func() { small <- serve(h, request(protoBody(t, traces("tiny")), contentProtobuf)) }()
	<-bs.entered
	bs.release <- struct{}{} // releases one of the two waiting requests,
	bs.release <- struct{}{} // then the other
	exportResponse(t, <-small)
	exportResponse(t, <-first)

	// Everything is released: the 30000-byte request now fits.
	go func() { <-bs.entered; bs.release <- struct{}{} }()
	exportResponse(t, serve(h, chunked(request(paddedBody(t, 30000), contentProtobuf))))
}

func TestNilMetricsAndLoggerAreSafe(t *testing.T) {
	var m *Metrics
	m.request(200)
	m.spans(1, 1)
	m.refused(1)
	m.read(1, 1)
	m.inFlight(1)
	exportResponse(t, serve(New(Config{}, fakeNormalize, &sink{}, nil, nil, nil),
		request(protoBody(t, traces("a")), contentProtobuf)))
}

func TestNewMetricsRegistersOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatalf("second registration on the same registry succeeded, want an error")
	}
}

// TestRowsKeepTheirBody sends requests one after another, gzipped and not,
// through one handler: the rows of each must still read as sent after the
// next request's body went through the same pooled buffers and decoder
// (the wire decoder's strings point into the body, so the rows need a body
// of their own).
func TestRowsKeepTheirBody(t *testing.T) {
	s := &sink{}
	h := newHandler(t, Config{}, s)
	var want []string
	for i, word := range []string{"alpha", "bravo", "charlie", "delta"} {
		names := []string{word + "-1", word + "-2", word + "-3"}
		body := protoBody(t, traces(names...))
		r := request(body, contentProtobuf)
		if i%2 == 1 {
			var zipped bytes.Buffer
			zw := gzip.NewWriter(&zipped)
			zw.Write(body)
			zw.Close()
			r = request(zipped.Bytes(), contentProtobuf)
			r.Header.Set("Content-Encoding", "gzip")
		}
		if w := serve(h, r); w.Code != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, w.Code, w.Body.String())
		}
		want = append(want, names...)
	}
	var got []string
	for _, sp := range s.spans() {
		got = append(got, sp.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("stored names %q, want %q", got, want)
	}
}

// copyingSink records a copy of every accepted span's name, made during
// Accept, as a sink that copies what it stores (Config.SinkCopies).
type copyingSink struct {
	mu    sync.Mutex
	names []string
}

func (s *copyingSink) Accept(_ context.Context, b ingest.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range b.Spans {
		s.names = append(s.names, strings.Clone(sp.Name))
	}
	return nil
}

// TestRowsBorrowTheBodyWhenTheSinkCopies is TestRowsKeepTheirBody for a
// sink that copies during Accept (Config.SinkCopies): the rows point into
// the pooled body buffer, and sit in slices the next request reuses, only
// while Accept runs, so each request's own names must have been copied
// although every body lands where the previous one was.
func TestRowsBorrowTheBodyWhenTheSinkCopies(t *testing.T) {
	s := &copyingSink{}
	// The rows' slices are reused from request to request: each request
	// must still start from none.
	normalize := func(dst ingest.Batch, tr wire.Traces, project string) (ingest.Batch, ingest.Rejected) {
		if len(dst.Spans) != 0 || len(dst.Contents) != 0 {
			t.Errorf("normalizer handed %d spans and %d contents already", len(dst.Spans), len(dst.Contents))
		}
		return fakeNormalize(dst, tr, project)
	}
	h := New(Config{SinkCopies: true}, normalize, s, nil, nil, nil)
	var want []string
	for _, names := range [][]string{{"alpha", "bravo"}, {"gamma", "delta"}, {"omega", "sigma"}} {
		if w := serve(h, request(protoBody(t, traces(names...)), contentProtobuf)); w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		want = append(want, names...)
	}
	if !slices.Equal(s.names, want) {
		t.Errorf("copied names = %q, want %q", s.names, want)
	}
}

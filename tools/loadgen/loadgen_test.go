package loadgen

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// counter is an OTLP/HTTP endpoint that decodes every request with pdata and
// records each span's (trace id, span id) and parent.
type counter struct {
	mu       sync.Mutex
	ids      map[string]int    // trace/span → times received
	parents  map[string]string // trace/span → trace/parent ("" for roots)
	requests int
	spans    int
	gzipped  int
	auth     map[string]int
	oldest   int64 // earliest start time seen, Unix ns
	srv      *httptest.Server
}

// newCounter starts the endpoint; answer, when set, replaces the normal
// answer (it gets the decoded span count and writes the response).
func newCounter(t *testing.T, answer func(w http.ResponseWriter, spans int)) *counter {
	t.Helper()
	c := &counter{ids: map[string]int{}, parents: map[string]string{}, auth: map[string]int{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		gz := r.Header.Get("Content-Encoding") == "gzip"
		if gz {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(data); err != nil {
			t.Errorf("decode request: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := 0
		c.mu.Lock()
		for _, rs := range req.Traces().ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					n++
					key := sp.TraceID().String() + "/" + sp.SpanID().String()
					c.ids[key]++
					parent := ""
					if !sp.ParentSpanID().IsEmpty() {
						parent = sp.TraceID().String() + "/" + sp.ParentSpanID().String()
					}
					c.parents[key] = parent
					if start := int64(sp.StartTimestamp()); c.oldest == 0 || start < c.oldest {
						c.oldest = start
					}
				}
			}
		}
		c.requests++
		c.spans += n
		c.auth[r.Header.Get("Authorization")]++
		if gz {
			c.gzipped++
		}
		c.mu.Unlock()
		if answer != nil {
			answer(w, n)
			return
		}
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func run(t *testing.T, cfg Config) Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func TestRequestsBoundSendsExactSpansWithUniqueIDs(t *testing.T) {
	for _, gz := range []bool{false, true} {
		c := newCounter(t, nil)
		before := time.Now()
		res := run(t, Config{
			Endpoint: c.srv.URL, Headers: map[string]string{"Authorization": "Bearer load"},
			Requests: 10, RequestSpans: 512, Concurrency: 3, Gzip: gz, Seed: 1,
		})
		// 10 requests × 512 spans = 5120 spans.
		if c.requests != 10 || c.spans != 5120 {
			t.Fatalf("gzip=%v: server got %d requests, %d spans; want 10, 5120", gz, c.requests, c.spans)
		}
		if res.Sent != 10 || res.Acknowledged != 10 || res.Rejected != 0 || res.Failed != 0 ||
			res.SpansSent != 5120 || res.SpansAcknowledged != 5120 || res.Statuses[200] != 10 {
			t.Errorf("gzip=%v: result %+v", gz, res)
		}
		if gz && c.gzipped != 10 {
			t.Errorf("%d of 10 requests were gzipped", c.gzipped)
		}
		if c.auth["Bearer load"] != 10 {
			t.Errorf("Authorization headers: %v", c.auth)
		}
		if len(c.ids) != 5120 {
			t.Errorf("gzip=%v: %d distinct (trace, span) ids among 5120 spans", gz, len(c.ids))
		}
		for key, parent := range c.parents {
			if parent != "" && c.ids[parent] == 0 {
				t.Errorf("span %s has parent %s, never sent", key, parent)
				break
			}
		}
		// Timestamps are moved to the time of sending: the templates' 2026-01-01
		// base would be before the test started only if they were not moved.
		if time.Unix(0, c.oldest).Before(before.Add(-24 * time.Hour)) {
			t.Errorf("oldest span starts at %s, want within a day before %s", time.Unix(0, c.oldest), before)
		}
		if res.LatencyP50 <= 0 || res.LatencyP50 > res.LatencyP99 || res.LatencyP99 > res.LatencyMax {
			t.Errorf("latency percentiles not ordered: %s %s %s", res.LatencyP50, res.LatencyP99, res.LatencyMax)
		}
	}
}

func TestTwoRunsNeverShareIDs(t *testing.T) {
	c := newCounter(t, nil)
	cfg := Config{Endpoint: c.srv.URL, Requests: 2, RequestSpans: 100, Concurrency: 1, Seed: 5}
	run(t, cfg)
	run(t, cfg)
	// 2 runs × 2 requests × 100 spans = 400 distinct spans.
	if c.spans != 400 || len(c.ids) != 400 {
		t.Errorf("received %d spans, %d distinct; want 400 and 400", c.spans, len(c.ids))
	}
}

func TestOutcomesByStatus(t *testing.T) {
	cases := []struct {
		name                      string
		answer                    func(w http.ResponseWriter, spans int)
		acked, rejected, failed   int
		spansAcked, spansRejected int
		status                    int
	}{
		{
			name:   "503 is failed",
			answer: func(w http.ResponseWriter, _ int) { http.Error(w, "overloaded", http.StatusServiceUnavailable) },
			failed: 4, status: 503,
		},
		{
			name:     "400 is rejected",
			answer:   func(w http.ResponseWriter, _ int) { http.Error(w, "bad body", http.StatusBadRequest) },
			rejected: 4, status: 400,
		},
		{
			name: "partial success counts rejected spans",
			answer: func(w http.ResponseWriter, _ int) {
				out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{
					PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "end before start"},
				})
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.Write(out)
			},
			// 4 requests × (50 − 3) = 188 acknowledged, 4 × 3 = 12 rejected.
			acked: 4, spansAcked: 188, spansRejected: 12, status: 200,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCounter(t, tc.answer)
			res := run(t, Config{Endpoint: c.srv.URL, Requests: 4, RequestSpans: 50, Concurrency: 2, Seed: 2})
			if res.Sent != 4 || res.Acknowledged != tc.acked || res.Rejected != tc.rejected || res.Failed != tc.failed ||
				res.SpansAcknowledged != tc.spansAcked || res.SpansRejected != tc.spansRejected || res.Statuses[tc.status] != 4 {
				t.Errorf("result %+v", res)
			}
			if tc.acked == 0 && (res.FirstError == "" || !strings.Contains(res.String(), "first error")) {
				t.Errorf("no first error reported: %q", res.String())
			}
		})
	}
}

func TestNetworkErrorIsFailed(t *testing.T) {
	c := newCounter(t, nil)
	url := c.srv.URL
	c.srv.Close() // nothing listens there any more
	res := run(t, Config{Endpoint: url, Requests: 3, RequestSpans: 20, Concurrency: 1})
	if res.Sent != 3 || res.Failed != 3 || res.Statuses[0] != 3 || res.FirstError == "" {
		t.Errorf("result %+v", res)
	}
}

func TestDurationBoundStopsByItself(t *testing.T) {
	c := newCounter(t, nil)
	// 20 requests/s for 300 ms: requests are due at 0, 50, …, 250 ms, so at
	// most 6 start; the run ends without any request bound.
	res := run(t, Config{Endpoint: c.srv.URL, Duration: 300 * time.Millisecond, Rate: 20, RequestSpans: 30, Concurrency: 2})
	if res.Sent == 0 || res.Sent > 6 || res.Acknowledged != res.Sent || c.spans != 30*res.Sent {
		t.Errorf("result %+v, server got %d spans", res, c.spans)
	}
}

func TestRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Endpoint: "http://127.0.0.1:1"},               // unbounded
		{Requests: 1},                                  // no endpoint
		{Endpoint: "http://127.0.0.1:1", Requests: -1}, // negative
		{Endpoint: "http://127.0.0.1:1", Duration: -time.Second, Requests: 1},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) returned no error", cfg)
		}
	}
}

func TestPercentile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var sorted []time.Duration
	for i := 1; i <= 10; i++ {
		sorted = append(sorted, ms(i)) // 1..10 ms
	}
	cases := []struct {
		p    int
		want time.Duration
	}{
		{50, ms(5)},  // ceil(0.5·10) = 5th value
		{90, ms(9)},  // ceil(0.9·10) = 9th
		{99, ms(10)}, // ceil(0.99·10) = 10th
	}
	for _, tc := range cases {
		if got := percentile(sorted, tc.p); got != tc.want {
			t.Errorf("p%d = %s, want %s", tc.p, got, tc.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func BenchmarkRender(b *testing.B) {
	pool, err := buildPool(1, DefaultRequestSpans, 4)
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.SetBytes(int64(len(pool[0].body)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = pool[i%len(pool)].render(buf, uint64(i), [16]byte{1}, time.Now())
	}
	b.ReportMetric(float64(b.N*DefaultRequestSpans)/b.Elapsed().Seconds(), "spans/s")
}

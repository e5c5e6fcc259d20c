package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func getJSON(t *testing.T, url string, into any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if into != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, into); err != nil {
			t.Fatalf("decode %s: %v\n%s", url, err, body)
		}
	}
	return resp.StatusCode
}

// shape renders a tree as indented "name [type]" lines for comparison.
func shape(nodes []*query.SpanNode, depth int, b *strings.Builder) {
	for _, n := range nodes {
		fmt.Fprintf(b, "%s%s [%s]%s\n", strings.Repeat("  ", depth), n.Name, n.Type, map[bool]string{true: " orphan"}[n.Orphan])
		shape(n.Children, depth+1, b)
	}
}

const wantShape = `invoke_agent planner [agent]
  chat claude-sonnet-4-5 [inference]
  execute_tool web_search [tool]
  invoke_agent researcher [agent]
    chat gpt-4o [inference]
    execute_tool fetch_url [tool]
`

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func checkRun(t *testing.T, run query.RunDetail) {
	t.Helper()
	var b strings.Builder
	shape(run.Roots, 0, &b)
	if b.String() != wantShape {
		t.Errorf("tree:\n%s\nwant:\n%s", b.String(), wantShape)
	}
	s := run.Summary
	// Usage counts inference spans only; the planner's aggregated 3000/300 is not added.
	// input: claude 200 + 800 cache read (additive report made inclusive) = 1000; gpt-4o 2000 → 3000
	// cache read: 800 + 1500 = 2300; output: 100 + 200 = 300.
	wantUsage := attribution.Usage{Input: 3000, CacheRead: 2300, Output: 300}
	if s.Usage != wantUsage || s.UsageFromAggregate {
		t.Errorf("usage %+v (from aggregate %v), want %+v", s.Usage, s.UsageFromAggregate, wantUsage)
	}
	// claude-sonnet-4-5 ($3 in, $0.30 cache read, $15 out per M):
	//   200 × 3e-6 + 800 × 0.3e-6 + 100 × 15e-6 = 0.0006 + 0.00024 + 0.0015 = 0.00234
	// gpt-4o ($2.50 in, $1.25 cache read, $10 out per M):
	//   500 × 2.5e-6 + 1500 × 1.25e-6 + 200 × 10e-6 = 0.00125 + 0.001875 + 0.002 = 0.005125
	// total 0.007465
	if !near(s.Cost.Total, 0.007465) {
		t.Errorf("cost %.9f, want 0.007465", s.Cost.Total)
	}
	// The root ended ok: fetch_url's error did not fail the run.
	if s.Spans != 6 || s.LLMCalls != 2 || s.ToolCalls != 2 || s.Errors != 1 || s.Status != "ok" || s.RecoveredErrors != 1 {
		t.Errorf("counts %+v", s)
	}
	if s.Task != "triage_ticket" || s.Service != "support-bot" || s.ConversationID != "conv-1" ||
		strings.Join(s.Agents, ",") != "planner,researcher" || strings.Join(s.Models, ",") != "claude-sonnet-4-5-20250929,gpt-4o" {
		t.Errorf("labels %+v", s)
	}
	if !near(s.DurationMs, 4000) {
		t.Errorf("duration %v ms, want 4000", s.DurationMs)
	}
}

func TestOTLPProtobufAndGzipToRunTree(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprintf("gzip=%v", gz), func(t *testing.T) {
			tally := tallytest.Start(t)
			base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
			id := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Base: base, Gzip: gz})
			var run query.RunDetail
			if code := getJSON(t, tally.URL+"/api/v1/runs/"+id, &run); code != http.StatusOK {
				t.Fatalf("GET run: %d", code)
			}
			checkRun(t, run)
			var page query.RunPage
			if code := getJSON(t, tally.URL+"/api/v1/runs", &page); code != http.StatusOK {
				t.Fatalf("GET runs: %d", code)
			}
			if len(page.Runs) != 1 || page.Runs[0].TraceID != id {
				t.Fatalf("runs %+v", page.Runs)
			}
			// The list computes its summary in SQL; it must agree with the tree's.
			if l, d := page.Runs[0], run.Summary; l.Usage != d.Usage || !near(l.Cost.Total, d.Cost.Total) ||
				l.Spans != d.Spans || l.Task != d.Task || l.Errors != d.Errors || !near(l.DurationMs, d.DurationMs) {
				t.Errorf("list summary %+v\ndetail summary %+v", l, d)
			}
		})
	}
}

// TestOTLPJSONGivesIdenticalTree captures the SDK's protobuf request, turns
// it into OTLP/JSON and sends that to a second tally: same tree, same figures.
func TestOTLPJSONGivesIdenticalTree(t *testing.T) {
	var captured []byte
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		captured, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer capture.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	id := tallytest.SendAgentRun(t, capture.URL, tallytest.AgentRun{Base: base})
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(captured); err != nil {
		t.Fatal(err)
	}
	js, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	tally := tallytest.Start(t)
	resp, err := http.Post(tally.URL+"/v1/traces", "application/json", bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("POST json: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var run query.RunDetail
	if code := getJSON(t, tally.URL+"/api/v1/runs/"+id, &run); code != http.StatusOK {
		t.Fatalf("GET run: %d", code)
	}
	checkRun(t, run)
}

func TestDuplicateSpanAppearsOnce(t *testing.T) {
	var captured []byte
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		captured, _ = io.ReadAll(r.Body)
	}))
	defer capture.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	id := tallytest.SendAgentRun(t, capture.URL, tallytest.AgentRun{Base: base})
	tally := tallytest.Start(t)
	for range 2 { // an exporter retry delivers the same request twice
		resp, err := http.Post(tally.URL+"/v1/traces", "application/x-protobuf", bytes.NewReader(captured))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST: %d", resp.StatusCode)
		}
	}
	var run query.RunDetail
	if code := getJSON(t, tally.URL+"/api/v1/runs/"+id, &run); code != http.StatusOK {
		t.Fatalf("GET run: %d", code)
	}
	checkRun(t, run) // same 6 spans, same tokens and cost as a single delivery
	var page query.RunPage
	getJSON(t, tally.URL+"/api/v1/runs", &page)
	if len(page.Runs) != 1 || page.Runs[0].Spans != 6 || page.Runs[0].Usage.Input != 3000 {
		t.Fatalf("list after duplicate delivery: %+v", page.Runs)
	}
}

func TestMixedValidAndInvalidSpans(t *testing.T) {
	tally := tallytest.Start(t)
	now := time.Now().Add(-time.Minute).UnixNano()
	// Three spans: one valid, one with a 15-byte-looking trace id (bad length
	// in hex), one ending before it starts.
	body := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
	"scopeSpans":[{"spans":[
	 {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"ok","kind":1,"startTimeUnixNano":"%d","endTimeUnixNano":"%d"},
	 {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000000","name":"zero span id","startTimeUnixNano":"%d","endTimeUnixNano":"%d"},
	 {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"c7ad6b7169203331","name":"backwards","startTimeUnixNano":"%d","endTimeUnixNano":"%d"}
	]}]}]}`, now, now+1000, now, now+1000, now+1000, now)
	resp, err := http.Post(tally.URL+"/v1/traces", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	out := ptraceotlp.NewExportResponse()
	if err := out.UnmarshalJSON(raw); err != nil {
		t.Fatalf("response %s: %v", raw, err)
	}
	if got := out.PartialSuccess().RejectedSpans(); got != 2 {
		t.Errorf("rejected %d, want 2 (%s)", got, out.PartialSuccess().ErrorMessage())
	}
	if out.PartialSuccess().ErrorMessage() == "" {
		t.Error("partial success without a message")
	}
	var run query.RunDetail
	if code := getJSON(t, tally.URL+"/api/v1/runs/0af7651916cd43dd8448eb211c80319c", &run); code != http.StatusOK {
		t.Fatalf("GET run: %d", code)
	}
	if run.Summary.Spans != 1 || run.Roots[0].Name != "ok" {
		t.Fatalf("kept spans: %+v", run.Summary)
	}
}

func TestAPIErrors(t *testing.T) {
	tally := tallytest.Start(t)
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/v1/runs/0af7651916cd43dd8448eb211c80319c", http.StatusNotFound},
		{"/api/v1/runs/not-hex", http.StatusBadRequest},
		{"/api/v1/runs?since=yesterday", http.StatusBadRequest},
		{"/api/v1/runs?limit=0", http.StatusBadRequest},
		{"/api/v1/runs?status=maybe", http.StatusBadRequest},
		{"/api/v1/runs?cursor=!!", http.StatusBadRequest},
		{"/api/v1/runs?since=24h", http.StatusOK},
		{"/healthz", http.StatusOK},
		{"/readyz", http.StatusOK},
	} {
		var e struct{ Error string }
		code := getJSON(t, tally.URL+c.path, nil)
		if code != c.want {
			t.Errorf("%s: %d, want %d", c.path, code, c.want)
		}
		_ = e
	}
}

// TestExporterRetryAfter503CountsOnce: a proxy hands the SDK's first request
// to tally (which stores it) but answers the exporter 503, as happens when an
// acknowledgement is lost; the real OTel exporter resends, and the figures
// still count every span once.
func TestExporterRetryAfter503CountsOnce(t *testing.T) {
	tally := tallytest.Start(t)
	var mu sync.Mutex
	forwarded := 0
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest(http.MethodPost, tally.URL+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp.Body.Close()
		mu.Lock()
		forwarded++
		first := forwarded == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer proxy.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	id := tallytest.SendAgentRun(t, proxy.URL, tallytest.AgentRun{Base: base, ExporterOptions: []otlptracehttp.Option{
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond, MaxElapsedTime: 20 * time.Second,
		}),
	}})
	mu.Lock()
	n := forwarded
	mu.Unlock()
	if n != 2 {
		t.Fatalf("tally received the request %d times, want 2 (original + the exporter's retry)", n)
	}
	var run query.RunDetail
	if code := getJSON(t, tally.URL+"/api/v1/runs/"+id, &run); code != http.StatusOK {
		t.Fatalf("GET run: %d", code)
	}
	checkRun(t, run)
	var page query.RunPage
	getJSON(t, tally.URL+"/api/v1/runs", &page)
	if len(page.Runs) != 1 || page.Runs[0].Spans != 6 || page.Runs[0].Usage.Input != 3000 || !near(page.Runs[0].Cost.Total, 0.007465) {
		t.Fatalf("list after the exporter's retry: %+v", page.Runs)
	}
}

// TestHeaderLimit: headers within the configured limit are served; headers
// beyond it (and Go's fixed 4 KiB of slack) get 431.
func TestHeaderLimit(t *testing.T) {
	tally := tallytest.Start(t, func(o *tallytest.Config) { o.Server.HTTP.MaxHeaderBytes = 8 << 10 })
	for _, c := range []struct {
		size int
		want int
	}{
		{4 << 10, http.StatusOK}, // well within 8 KiB
		{8<<10 + 4<<10 + 1024, http.StatusRequestHeaderFieldsTooLarge}, // past 8 KiB + 4 KiB slack
	} {
		req, _ := http.NewRequest(http.MethodGet, tally.URL+"/healthz", nil)
		req.Header.Set("X-Padding", strings.Repeat("a", c.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%d-byte header: %d, want %d", c.size, resp.StatusCode, c.want)
		}
	}
}

func TestConversations(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-2 * time.Hour).Truncate(time.Millisecond).UTC()
	// conv-a: two runs (the second an hour later); conv-b: one run, 30 min after conv-a's second.
	a1 := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-a", Base: base})
	a2 := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-a", Base: base.Add(time.Hour)})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-b", Base: base.Add(90 * time.Minute)})

	var page query.ConversationPage
	if code := getJSON(t, tally.URL+"/api/v1/conversations?since=24h", &page); code != http.StatusOK {
		t.Fatalf("GET conversations: %d", code)
	}
	if len(page.Conversations) != 2 || page.Conversations[0].ConversationID != "conv-b" || page.Conversations[1].ConversationID != "conv-a" {
		t.Fatalf("conversations, most recently active first: %+v", page.Conversations)
	}
	a := page.Conversations[1]
	// Each run: 3000 input tokens (2300 cache read), 300 output, $0.007465, 1 error span.
	if a.Runs != 2 || a.Usage.Input != 6000 || a.Usage.CacheRead != 4600 || a.Usage.Output != 600 ||
		!near(a.Cost.Total, 2*0.007465) || a.Errors != 2 || !a.First.Equal(base) || !a.Last.Equal(base.Add(time.Hour+4*time.Second)) {
		t.Errorf("conv-a: %+v", a)
	}
	// Paging: one per page, the cursor leads to the second.
	var p1, p2 query.ConversationPage
	getJSON(t, tally.URL+"/api/v1/conversations?limit=1", &p1)
	getJSON(t, tally.URL+"/api/v1/conversations?limit=1&cursor="+p1.NextCursor, &p2)
	if len(p1.Conversations) != 1 || p1.Conversations[0].ConversationID != "conv-b" || p1.NextCursor == "" ||
		len(p2.Conversations) != 1 || p2.Conversations[0].ConversationID != "conv-a" || p2.NextCursor != "" {
		t.Errorf("paging: %+v / %+v", p1, p2)
	}

	var d query.ConversationDetail
	if code := getJSON(t, tally.URL+"/api/v1/conversations/conv-a", &d); code != http.StatusOK {
		t.Fatalf("GET conversation: %d", code)
	}
	if len(d.RunList) != 2 || d.RunList[0].TraceID != a1 || d.RunList[1].TraceID != a2 || d.Runs != 2 || !near(d.Cost.Total, 2*0.007465) {
		t.Errorf("conv-a detail: %+v", d)
	}
	for path, want := range map[string]int{
		"/api/v1/conversations/nope":           http.StatusNotFound,
		"/api/v1/conversations?limit=0":        http.StatusBadRequest,
		"/api/v1/conversations?cursor=%21":     http.StatusBadRequest,
		"/api/v1/conversations?since=tomorrow": http.StatusBadRequest,
	} {
		if code := getJSON(t, tally.URL+path, nil); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
}

// TestRunRetryClasses: the run detail classifies its tool calls with
// docs/design.md's retry rules.
func TestRunRetryClasses(t *testing.T) {
	tally := tallytest.Start(t)
	now := time.Now().Add(-time.Minute).UnixNano()
	span := func(id, name, attrs string, startMs int, errStatus bool) string {
		status := ""
		if errStatus {
			status = `,"status":{"code":2}`
		}
		return fmt.Sprintf(`{"traceId":"1af7651916cd43dd8448eb211c80319c","spanId":"%s","parentSpanId":"a000000000000001","name":"%s",
		"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s]%s}`,
			id, name, now+int64(startMs)*1e6, now+int64(startMs+5)*1e6, attrs, status)
	}
	attr := func(k, v string) string { return fmt.Sprintf(`{"key":%q,"value":{"stringValue":%q}}`, k, v) }
	tool := func(name, callID, args string) string {
		s := attr("gen_ai.operation.name", "execute_tool") + "," + attr("gen_ai.tool.name", name)
		if callID != "" {
			s += "," + attr("gen_ai.tool.call.id", callID)
		}
		if args != "" {
			s += "," + attr("gen_ai.tool.call.arguments", args)
		}
		return s
	}
	root := fmt.Sprintf(`{"traceId":"1af7651916cd43dd8448eb211c80319c","spanId":"a000000000000001","name":"invoke_agent a",
		"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s]}`, now, now+int64(100*time.Millisecond),
		attr("gen_ai.operation.name", "invoke_agent"))
	body := `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join([]string{root,
		span("b000000000000001", "execute_tool fetch_url", tool("fetch_url", "call_a", ""), 0, true),   // original, failed
		span("b000000000000002", "execute_tool fetch_url", tool("fetch_url", "call_a", ""), 10, false), // same call id: retry
		span("b000000000000003", "execute_tool search", tool("search", "", `{"q":1}`), 20, false),      // original
		span("b000000000000004", "execute_tool search", tool("search", "", `{"q":1}`), 30, false),      // same args after success: repeat
	}, ",") + `]}]}]}`
	resp, err := http.Post(tally.URL+"/v1/traces", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST: %d %s", resp.StatusCode, raw)
	}
	var run query.RunDetail
	if code := getJSON(t, tally.URL+"/api/v1/runs/1af7651916cd43dd8448eb211c80319c", &run); code != http.StatusOK {
		t.Fatalf("GET run: %d", code)
	}
	s := run.Summary
	if s.ToolRetries == nil || *s.ToolRetries != 1 || s.ToolRepeats == nil || *s.ToolRepeats != 1 {
		t.Fatalf("retries %v repeats %v, want 1 and 1", s.ToolRetries, s.ToolRepeats)
	}
	want := map[string]attribution.Class{
		"b000000000000001": attribution.ClassOriginal, "b000000000000002": attribution.ClassRetryCallID,
		"b000000000000003": attribution.ClassOriginal, "b000000000000004": attribution.ClassRepeat,
	}
	if len(run.Roots) != 1 || len(run.Roots[0].Children) != 4 {
		t.Fatalf("tree: %+v", run.Roots)
	}
	for _, n := range run.Roots[0].Children {
		if n.RetryClass != want[n.SpanID] {
			t.Errorf("span %s: class %q, want %q", n.SpanID, n.RetryClass, want[n.SpanID])
		}
	}
}

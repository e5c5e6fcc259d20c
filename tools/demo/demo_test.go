package demo

import (
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/protobuf/proto"

	"github.com/tallyhq/tally/transcript"
)

var testStart = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// gotSpan is a span as an OTLP receiver decoded it.
type gotSpan struct {
	Trace, Span, Parent string
	Name, Kind          string
	Start, End          int64
	Status, StatusMsg   string
	Service             string
	Resource            map[string]any
	Attrs               map[string]any
	Events              []string
}

func (s gotSpan) str(k string) string {
	v, _ := s.Attrs[k].(string)
	return v
}

func (s gotSpan) num(k string) int64 {
	v, _ := s.Attrs[k].(int64)
	return v
}

func (s gotSpan) has(k string) bool {
	_, ok := s.Attrs[k]
	return ok
}

// spanSet maps trace id + span id to the span.
type spanSet map[string]gotSpan

func (set spanSet) add(t *testing.T, td ptrace.Traces) {
	t.Helper()
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes().AsRaw()
		for _, ss := range rs.ScopeSpans().All() {
			if ss.Scope().Name() != ScopeName {
				t.Errorf("scope %q, want %q", ss.Scope().Name(), ScopeName)
			}
			for _, sp := range ss.Spans().All() {
				g := gotSpan{
					Trace:     sp.TraceID().String(),
					Span:      sp.SpanID().String(),
					Parent:    sp.ParentSpanID().String(),
					Name:      sp.Name(),
					Kind:      sp.Kind().String(),
					Start:     int64(sp.StartTimestamp()),
					End:       int64(sp.EndTimestamp()),
					Status:    sp.Status().Code().String(),
					StatusMsg: sp.Status().Message(),
					Service:   res["service.name"].(string),
					Resource:  res,
					Attrs:     sp.Attributes().AsRaw(),
				}
				for _, e := range sp.Events().All() {
					g.Events = append(g.Events, e.Name()+"@"+e.Timestamp().String())
				}
				key := g.Trace + "/" + g.Span
				if _, dup := set[key]; dup {
					t.Errorf("span %s received twice", key)
				}
				set[key] = g
			}
		}
	}
}

func (set spanSet) byTrace() map[string][]gotSpan {
	out := map[string][]gotSpan{}
	for _, s := range set {
		out[s.Trace] = append(out[s.Trace], s)
	}
	return out
}

// receiver is an OTLP/HTTP endpoint that decodes with pdata, as tally does.
type receiver struct {
	mu      sync.Mutex
	spans   spanSet
	auth    map[string]bool
	status  int   // answer with this status instead of 200 when set
	partial int64 // report this many rejected spans in partial_success
	srv     *httptest.Server
	decoded int
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	rc := &receiver{spans: spanSet{}, auth: map[string]bool{}, status: status}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if rc.status != 0 {
			http.Error(w, "refused by test", rc.status)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
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
		switch r.Header.Get("Content-Type") {
		case "application/x-protobuf":
			err = req.UnmarshalProto(data)
		case "application/json":
			err = req.UnmarshalJSON(data)
		default:
			http.Error(w, "content type", http.StatusUnsupportedMediaType)
			return
		}
		if err != nil {
			t.Errorf("decode OTLP request: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.spans.add(t, req.Traces())
		rc.auth[r.Header.Get("Authorization")] = true
		rc.decoded++
		rc.mu.Unlock()
		resp := ptraceotlp.NewExportResponse()
		if rc.partial > 0 {
			resp.PartialSuccess().SetRejectedSpans(rc.partial)
			resp.PartialSuccess().SetErrorMessage("end before start")
		}
		out, _ := resp.MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func sendTo(t *testing.T, rc *receiver, cfg Config) Summary {
	t.Helper()
	cfg.Endpoint = rc.srv.URL
	sum, err := Send(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	return sum
}

// generated is what Generate's runs look like once encoded by ExportRequest
// and decoded by pdata.
func generated(t *testing.T, cfg Config) spanSet {
	t.Helper()
	body, err := proto.Marshal(ExportRequest(Generate(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(body); err != nil {
		t.Fatal(err)
	}
	set := spanSet{}
	set.add(t, req.Traces())
	return set
}

func TestSendIsDeterministicAndMatchesGenerate(t *testing.T) {
	cfg := Config{Runs: 12, Seed: 7, Start: testStart, Headers: map[string]string{"Authorization": "Bearer k1"}}
	first := newReceiver(t, 0)
	sum := sendTo(t, first, cfg)

	want := 0
	for _, r := range Generate(cfg) {
		want += r.SpanCount()
	}
	if sum.Runs != 12 || len(sum.TraceIDs) != 12 || sum.Spans != want || len(first.spans) != want {
		t.Fatalf("summary %+v, received %d spans; want 12 runs and %d spans", sum, len(first.spans), want)
	}
	if !first.auth["Bearer k1"] || len(first.auth) != 1 {
		t.Errorf("Authorization headers seen: %v", first.auth)
	}

	// The same seed again, gzip and JSON on: the very same spans.
	for _, variant := range []Config{{Gzip: true}, {JSON: true}} {
		again := newReceiver(t, 0)
		c := cfg
		c.Gzip, c.JSON = variant.Gzip, variant.JSON
		sendTo(t, again, c)
		if !reflect.DeepEqual(first.spans, again.spans) {
			t.Errorf("second send (gzip=%v json=%v) differs from the first", c.Gzip, c.JSON)
		}
	}
	if got := generated(t, cfg); !reflect.DeepEqual(first.spans, got) {
		t.Errorf("spans sent through the SDK differ from Generate + ExportRequest")
	}

	other := Generate(Config{Runs: 12, Seed: 8, Start: testStart})
	for _, r := range other {
		for _, id := range sum.TraceIDs {
			if r.TraceID.String() == id {
				t.Errorf("seed 8 reuses trace id %s of seed 7", id)
			}
		}
	}
}

func TestSendReportsRefusal(t *testing.T) {
	rc := newReceiver(t, http.StatusBadRequest) // 400 is not retried by the exporter
	sum, err := Send(context.Background(), Config{Endpoint: rc.srv.URL, Runs: 2, Seed: 1, Start: testStart})
	if err == nil {
		t.Fatal("Send returned no error for an endpoint answering 400")
	}
	if sum.Spans != 0 {
		t.Errorf("Summary.Spans = %d, want 0 acknowledged", sum.Spans)
	}

	partial := newReceiver(t, 0)
	partial.partial = 2
	if _, err := Send(context.Background(), Config{Endpoint: partial.srv.URL, Runs: 1, Seed: 1, Start: testStart}); err == nil ||
		!strings.Contains(err.Error(), "end before start") {
		t.Errorf("Send with 2 spans rejected in partial_success: err = %v, want the rejection reported", err)
	}
	if _, err := Send(context.Background(), Config{Runs: 1}); err == nil {
		t.Error("Send without an endpoint returned no error")
	}
}

// TestTraffic checks, on what an OTLP receiver decoded from 40 runs, that the
// traffic has the properties the other features are shown with.
func TestTraffic(t *testing.T) {
	rc := newReceiver(t, 0)
	sum := sendTo(t, rc, Config{Runs: 40, Seed: 1, Start: testStart})
	traces := rc.spans.byTrace()
	if len(traces) != 40 || sum.FailedRuns == 0 {
		t.Fatalf("%d traces, %d failed runs; want 40 traces, some failed", len(traces), sum.FailedRuns)
	}

	t.Run("trees", func(t *testing.T) {
		for id, spans := range traces {
			if len(spans) < 10 || len(spans) > 60 {
				t.Errorf("trace %s has %d spans, want 10–60", id, len(spans))
			}
			checkTree(t, id, spans)
		}
	})

	t.Run("fetch_url retries", func(t *testing.T) {
		// fetch_url fails 1 attempt in 4 and is retried up to 3 attempts: per
		// call 1 + 1/4 + 1/16 = 1.3125 spans of which 0.3125 are retries,
		// a share of 0.3125/1.3125 ≈ 24%. Anything above 10% shows the alert.
		calls, retries := 0, 0
		for _, spans := range traces {
			failedBefore := map[string]bool{}
			for _, s := range sortedByStart(spans) {
				if s.str("gen_ai.tool.name") != "fetch_url" {
					continue
				}
				calls++
				if s.num("gen_ai.tool.call.attempt") >= 2 {
					retries++
					if !failedBefore[s.str("gen_ai.tool.call.id")] {
						t.Errorf("retry %s has no failed earlier attempt with call id %s", s.Span, s.str("gen_ai.tool.call.id"))
					}
				}
				if s.Status == "Error" {
					if s.str("error.type") != "timeout" {
						t.Errorf("fetch_url failed with error.type %q, want timeout", s.str("error.type"))
					}
					failedBefore[s.str("gen_ai.tool.call.id")] = true
				}
			}
		}
		if calls < 50 || float64(retries)/float64(calls) <= 0.10 {
			t.Errorf("fetch_url: %d retries of %d calls, want > 10%% of at least 50", retries, calls)
		}
	})

	t.Run("triager caches under the deprecated name", func(t *testing.T) {
		// The triager's instrumentation is old: gen_ai.system, prompt_tokens
		// and gen_ai.usage.cache_read_input_tokens, never the current names.
		// OpenAI caches a prompt automatically once a prefix of ≥ 1024
		// tokens repeats: the second call of an invocation onwards reads
		// the previous call's prompt, rounded down to 128 tokens, when that
		// was ≥ 1024 tokens long.
		calls, withReads := 0, 0
		var prompt, read int64
		for _, s := range rc.spans {
			if s.str("gen_ai.operation.name") != "chat" || s.str("gen_ai.agent.name") != "triager" || s.Status == "Error" {
				continue
			}
			calls++
			if s.has("gen_ai.usage.cache_read.input_tokens") || s.has("gen_ai.usage.input_tokens") || !s.has("gen_ai.system") {
				t.Errorf("triager call %s uses current names: %v", s.Span, s.Attrs)
			}
			if !s.has("gen_ai.usage.cache_read_input_tokens") {
				t.Errorf("triager call %s lacks gen_ai.usage.cache_read_input_tokens", s.Span)
			}
			r, p := s.num("gen_ai.usage.cache_read_input_tokens"), s.num("gen_ai.usage.prompt_tokens")
			if r > p || r%128 != 0 || (r > 0 && r < 1024) {
				t.Errorf("triager call %s reads %d of %d prompt tokens, want a multiple of 128, ≥ 1024, within the prompt", s.Span, r, p)
			}
			if r > 0 {
				withReads++
			}
			prompt, read = prompt+p, read+r
		}
		if calls < 10 || withReads == 0 || read*10 < prompt || read >= prompt {
			t.Errorf("triager: %d calls, %d reading the cache, %d of %d prompt tokens read; want ≥ 10 calls, some reading, over 10%% of the tokens read",
				calls, withReads, read, prompt)
		}
	})

	t.Run("summarizer never caches", func(t *testing.T) {
		summarizer, eligible := 0, 0
		var otherReads int64
		for _, s := range rc.spans {
			if s.str("gen_ai.operation.name") != "chat" || s.Status == "Error" {
				continue
			}
			if s.str("gen_ai.agent.name") != "summarizer" {
				otherReads += s.num("gen_ai.usage.cache_read.input_tokens")
				continue
			}
			summarizer++
			if !s.has("gen_ai.usage.cache_read.input_tokens") || s.num("gen_ai.usage.cache_read.input_tokens") != 0 {
				t.Errorf("summarizer call %s reports cache reads %v, want an explicit 0", s.Span, s.Attrs["gen_ai.usage.cache_read.input_tokens"])
			}
			if s.num("gen_ai.usage.input_tokens") >= 2048 {
				eligible++
			}
		}
		if summarizer < 10 || eligible != summarizer {
			t.Errorf("summarizer: %d calls, %d with ≥ 2048 input tokens; want ≥ 10, all", summarizer, eligible)
		}
		if otherReads == 0 {
			t.Error("the other agents read nothing from the cache")
		}
	})

	t.Run("messages", func(t *testing.T) {
		// Every chat call captures what it was asked (the conversation's
		// topic), and every call that did not fail what it answered, in the
		// OpenTelemetry parts schema the chat view reads.
		calls := 0
		for _, spans := range traces {
			for _, s := range spans {
				if s.str("gen_ai.operation.name") != "chat" {
					continue
				}
				calls++
				chat := transcript.Read(transcript.Source{Content: map[string]string{
					"gen_ai.input.messages": s.str("gen_ai.input.messages"), "gen_ai.output.messages": s.str("gen_ai.output.messages")}})
				if len(chat.Input) != 1 || chat.Input[0].Role != "user" || len(chat.Input[0].Parts) != 1 || chat.Input[0].Parts[0].Text == "" {
					t.Fatalf("%s %s: input messages %q", s.Trace, s.Name, s.str("gen_ai.input.messages"))
				}
				failed := s.Status == "Error"
				if answered := s.has("gen_ai.output.messages"); answered == failed {
					t.Errorf("%s %s: output messages present %v, call failed %v", s.Trace, s.Name, answered, failed)
				}
			}
		}
		if calls == 0 {
			t.Fatal("no chat calls")
		}
	})

	t.Run("conversations", func(t *testing.T) {
		type conv struct {
			runs        int
			users, svcs map[string]bool
			firstStart  int64
		}
		convs := map[string]*conv{}
		for _, spans := range traces {
			root := rootOf(spans)
			id := root.str("gen_ai.conversation.id")
			if id == "" || root.str("user.id") == "" || root.str("task.name") == "" {
				t.Fatalf("root %s lacks conversation, user or task: %v", root.Span, root.Attrs)
			}
			c := convs[id]
			if c == nil {
				c = &conv{users: map[string]bool{}, svcs: map[string]bool{}, firstStart: root.Start}
				convs[id] = c
			}
			c.runs++
			c.users[root.str("user.id")] = true
			c.svcs[root.Service] = true
			c.firstStart = min(c.firstStart, root.Start)
		}
		var latest string
		var latestStart int64
		for id, c := range convs {
			if c.firstStart > latestStart {
				latest, latestStart = id, c.firstStart
			}
		}
		for id, c := range convs {
			// The last conversation may be cut short by Runs.
			if (c.runs < 2 && id != latest) || c.runs > 4 || len(c.users) != 1 || len(c.svcs) != 1 {
				t.Errorf("conversation %s: %d runs, users %v, services %v; want 2–4 runs of one user and service", id, c.runs, c.users, c.svcs)
			}
		}
		// 40 runs in groups of 2–4: between 40/4 = 10 and 40/2 = 20 conversations.
		if len(convs) < 10 || len(convs) > 20 {
			t.Errorf("%d conversations, want 10–20", len(convs))
		}
	})

	t.Run("anthropic usage is additive", func(t *testing.T) {
		// Anthropic calls report input the way the API does: the uncached
		// tail only (5–40 tokens), far less than the cache reads and writes
		// of a prompt of at least 2300 tokens (researcher prefix 2200 + the
		// planner's instructions ≥ 100), so the numbers alone say "additive".
		calls := 0
		for _, s := range rc.spans {
			if s.str("gen_ai.provider.name") != "anthropic" || s.Status == "Error" {
				continue
			}
			calls++
			in, cached := s.num("gen_ai.usage.input_tokens"), s.num("gen_ai.usage.cache_read.input_tokens")+s.num("gen_ai.usage.cache_creation.input_tokens")
			if in < 5 || in > 40 || cached < 2300-in {
				t.Errorf("anthropic call %s: input %d, cache read+write %d; want 5–40 uncached and the rest of ≥ 2300 cached", s.Span, in, cached)
			}
		}
		if calls < 20 {
			t.Errorf("%d anthropic calls in 40 runs, want ≥ 20", calls)
		}
	})

	t.Run("aggregated usage", func(t *testing.T) {
		// Every invoke_agent span repeats the inclusive usage of the chat
		// calls below it: an Anthropic call reporting input 20, cache read
		// 2300 and cache write 150 counts 20 + 2300 + 150 = 2470 input
		// tokens; a deprecated one counts its prompt_tokens; the others
		// report input inclusive of cache already.
		for id, spans := range traces {
			bySpan := map[string]gotSpan{}
			for _, s := range spans {
				bySpan[s.Span] = s
			}
			type sums struct{ input, output, read, write int64 }
			agg := map[string]*sums{}
			for _, s := range spans {
				if s.str("gen_ai.operation.name") == "invoke_agent" {
					agg[s.Span] = &sums{}
				}
			}
			for _, s := range spans {
				if s.str("gen_ai.operation.name") != "chat" {
					continue
				}
				read := s.num("gen_ai.usage.cache_read.input_tokens") + s.num("gen_ai.usage.cache_read_input_tokens") // current or deprecated name
				write := s.num("gen_ai.usage.cache_creation.input_tokens")
				in := s.num("gen_ai.usage.input_tokens") + s.num("gen_ai.usage.prompt_tokens")
				if s.str("gen_ai.provider.name") == "anthropic" {
					in += read + write
				}
				out := s.num("gen_ai.usage.output_tokens") + s.num("gen_ai.usage.completion_tokens")
				for p := bySpan[s.Parent]; p.Span != ""; p = bySpan[p.Parent] {
					if a := agg[p.Span]; a != nil {
						a.input, a.output, a.read, a.write = a.input+in, a.output+out, a.read+read, a.write+write
					}
				}
			}
			for span, want := range agg {
				a := bySpan[span]
				got := sums{a.num("gen_ai.usage.input_tokens"), a.num("gen_ai.usage.output_tokens"),
					a.num("gen_ai.usage.cache_read.input_tokens"), a.num("gen_ai.usage.cache_creation.input_tokens")}
				if got != *want {
					t.Errorf("trace %s: %s usage (input, output, cache read, cache write) %v, chat calls below it sum to %v", id, a.Name, got, *want)
				}
			}
		}
	})

	t.Run("features", func(t *testing.T) {
		count := map[string]int{}
		for _, s := range rc.spans {
			switch {
			case s.has("gen_ai.system") && s.has("gen_ai.usage.prompt_tokens") && s.has("gen_ai.usage.completion_tokens"):
				count["deprecated"]++
			case s.str("gen_ai.provider.name") == "anthropic" && s.num("gen_ai.usage.cache_read.input_tokens") > s.num("gen_ai.usage.input_tokens"):
				count["additive"]++
			case s.str("gen_ai.response.model") == "claude-sonnet-4-5-20250929" && s.num("gen_ai.usage.cache_creation.input_tokens") > 0:
				count["anthropic cache write"]++
			case s.str("gen_ai.request.model") == "acme-llm-7b" && s.Attrs["gen_ai.usage.cost.amount"].(float64) > 0:
				count["client cost"]++
			case s.str("gen_ai.provider.name") == "gcp.gemini" && s.num("gen_ai.usage.reasoning.output_tokens") > 0:
				count["reasoning"]++
			}
			if s.has("gen_ai.response.time_to_first_chunk") && s.Attrs["gen_ai.request.stream"] == true {
				count["stream"]++
			}
			if s.str("gen_ai.tool.name") == "web_search" && s.num("gen_ai.tool.call.attempt") >= 2 {
				count["web_search retry"]++
			}
			if s.str("gen_ai.operation.name") == "execute_tool" && s.Status != "Error" && (!s.has("gen_ai.tool.call.result") || !s.has("gen_ai.tool.call.arguments")) {
				t.Errorf("tool span %s lacks arguments or result", s.Span)
			}
		}
		for _, spans := range traces {
			if hasRepeatLoop(spans) {
				count["repeat loop"]++
			}
		}
		for _, f := range []string{"deprecated", "additive", "anthropic cache write", "client cost", "reasoning", "stream", "web_search retry", "repeat loop"} {
			if count[f] == 0 {
				t.Errorf("no %s in 40 runs (%v)", f, count)
			}
		}
	})
}

// checkTree checks that a trace is one tree under an "invoke_agent planner"
// root, each child inside its parent's time.
func checkTree(t *testing.T, id string, spans []gotSpan) {
	t.Helper()
	bySpan := map[string]gotSpan{}
	for _, s := range spans {
		bySpan[s.Span] = s
	}
	roots := 0
	for _, s := range spans {
		if s.End < s.Start {
			t.Errorf("trace %s: span %s ends before it starts", id, s.Span)
		}
		if s.Parent == "" {
			roots++
			if s.Name != "invoke_agent planner" {
				t.Errorf("trace %s: root is %q", id, s.Name)
			}
			continue
		}
		p, ok := bySpan[s.Parent]
		if !ok {
			t.Errorf("trace %s: span %s has parent %s outside the trace", id, s.Span, s.Parent)
			continue
		}
		if s.Start < p.Start || s.End > p.End {
			t.Errorf("trace %s: span %s (%s) is outside its parent %s", id, s.Span, s.Name, p.Name)
		}
	}
	if roots != 1 {
		t.Errorf("trace %s has %d roots, want 1", id, roots)
	}
}

func rootOf(spans []gotSpan) gotSpan {
	for _, s := range spans {
		if s.Parent == "" {
			return s
		}
	}
	return gotSpan{}
}

func sortedByStart(spans []gotSpan) []gotSpan {
	out := append([]gotSpan(nil), spans...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Start < out[j-1].Start; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// hasRepeatLoop says whether a tool was called successfully with the same
// arguments three times or more in the trace.
func hasRepeatLoop(spans []gotSpan) bool {
	same := map[string]int{}
	for _, s := range spans {
		if s.str("gen_ai.operation.name") == "execute_tool" && s.Status != "Error" {
			k := s.str("gen_ai.tool.name") + " " + s.str("gen_ai.tool.call.arguments")
			same[k]++
			if same[k] >= 3 {
				return true
			}
		}
	}
	return false
}

func TestSizeKnobGivesExactSpanCounts(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 9, 10, 100, 500, 2000} {
		cfg := Config{Runs: 3, Seed: int64(n), Start: testStart, Spans: n}
		runs := Generate(cfg)
		for _, r := range runs {
			if r.SpanCount() != n {
				t.Errorf("Spans=%d: run %s has %d spans", n, r.TraceID, r.SpanCount())
			}
		}
		for id, spans := range generated(t, cfg).byTrace() {
			if len(spans) != n {
				t.Errorf("Spans=%d: encoded trace %s has %d spans", n, id, len(spans))
			}
			checkTree(t, id, spans)
		}
	}
}

func TestGenerateIsAPrefixAndStartsWhereAsked(t *testing.T) {
	short := Generate(Config{Runs: 5, Seed: 3, Start: testStart})
	long := Generate(Config{Runs: 9, Seed: 3, Start: testStart})
	if !reflect.DeepEqual(short, long[:5]) {
		t.Error("the first 5 of 9 runs differ from 5 runs of the same seed")
	}
	if !short[0].Root.Start.Equal(testStart) {
		t.Errorf("first run starts at %s, want %s", short[0].Root.Start, testStart)
	}
	if Generate(Config{Runs: 0}) != nil {
		t.Error("Runs=0 generated runs")
	}

	// Zero Start: the traffic ends about now, never in the future.
	before := time.Now()
	runs := Generate(Config{Runs: 6, Seed: 3})
	var last time.Time
	for _, r := range runs {
		if r.Root.End.After(last) {
			last = r.Root.End
		}
	}
	if last.After(time.Now()) || last.Before(before.Add(-time.Minute)) {
		t.Errorf("last span ends at %s, want within the minute before %s", last, before)
	}
	// The same runs as with an explicit start, only shifted.
	fixed := Generate(Config{Runs: 6, Seed: 3, Start: testStart})
	for i := range runs {
		if runs[i].TraceID != fixed[i].TraceID || runs[i].SpanCount() != fixed[i].SpanCount() ||
			runs[i].Root.Start.Sub(runs[0].Root.Start) != fixed[i].Root.Start.Sub(testStart) ||
			runs[i].Root.End.Sub(runs[i].Root.Start) != fixed[i].Root.End.Sub(fixed[i].Root.Start) {
			t.Errorf("run %d with zero Start is not run %d of an explicit Start shifted", i, i)
		}
	}
}

func TestSessionCaching(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// OpenAI caches the previous prompt in 128-token steps once it reaches 1024.
	auto := &session{cache: cacheAutomatic, context: 1000}
	steps := []struct{ add, input, read int }{
		{0, 1000, 0},       // first call: nothing cached
		{500, 1500, 0},     // previous prompt 1000 < 1024: not cacheable
		{2102, 3602, 1408}, // 1500/128 = 11 → 11·128 = 1408
		{1246, 4848, 3584}, // 3602/128 = 28 → 28·128 = 3584
	}
	for i, st := range steps {
		auto.add(st.add)
		input, read, write := auto.call(rng)
		if input != st.input || read != st.read || write != 0 {
			t.Errorf("automatic call %d: input %d read %d write %d, want %d %d 0", i, input, read, write, st.input, st.read)
		}
	}
	// Anthropic: what was written is read by the next call; all but a short
	// tail of the prompt is read or written.
	explicit := &session{cache: cacheExplicit, context: 2400}
	written := 0
	for i := 0; i < 4; i++ {
		input, read, write := explicit.call(rng)
		if read != written || input-read-write < 5 || input-read-write > 40 {
			t.Errorf("explicit call %d: input %d read %d write %d; want read %d and a tail of 5–40", i, input, read, write, written)
		}
		written = read + write
		explicit.add(700)
	}
}

func TestSummaryString(t *testing.T) {
	s := Summary{Runs: 4, Spans: 100, FailedRuns: 1, Elapsed: 2 * time.Second}
	// 100 spans / 2 s = 50 spans/s
	want := "sent 4 runs (100 spans, 1 runs ending in error) in 2s (50 spans/s)"
	if got := s.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if !strings.Contains(Summary{}.String(), "0 spans/s") {
		t.Errorf("zero summary: %q", Summary{}.String())
	}
}

func BenchmarkGenerate(b *testing.B) {
	spans := 0
	for b.Loop() {
		for _, r := range Generate(Config{Runs: 100, Seed: 1, Start: testStart}) {
			spans += r.SpanCount()
		}
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}

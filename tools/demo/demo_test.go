package demo

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/trace"
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

// receiver is an OTLP/HTTP endpoint that decodes with pdata, as tally does,
// and takes outcomes as tally's POST /api/v1/runs/{trace_id}/outcomes.
type receiver struct {
	mu      sync.Mutex
	spans   spanSet
	auth    map[string]bool
	status  int   // answer with this status instead of 200 when set
	partial int64 // report this many rejected spans in partial_success
	srv     *httptest.Server
	decoded int
	// outcomes are the posted outcomes by trace id; notYet answers that
	// many posts 404 as tally does for a run it has not stored yet;
	// refused counts those answers.
	outcomes map[string][]postedOutcome
	notYet   int
	refused  int
}

// postedOutcome is an outcome as posted, with the key it came with.
type postedOutcome struct {
	Name, Label, Explanation, Source string
	Passed                           *bool
	Score                            *float64
	Auth                             string
}

// serveOutcome handles POST /api/v1/runs/{trace_id}/outcomes.
func (rc *receiver) serveOutcome(t *testing.T, w http.ResponseWriter, r *http.Request, id string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.notYet > 0 {
		rc.notYet--
		rc.refused++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"run ` + id + ` not found: outcomes attach to a run tally has"}`))
		return
	}
	var o postedOutcome
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("outcome of %s: %v, content type %q", id, err, r.Header.Get("Content-Type"))
		http.Error(w, "bad outcome", http.StatusBadRequest)
		return
	}
	o.Auth = r.Header.Get("Authorization")
	rc.outcomes[id] = append(rc.outcomes[id], o)
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"trace_id":"` + id + `","outcomes":[],"total":1}`))
}

func newReceiver(t *testing.T, status int) *receiver {
	t.Helper()
	rc := &receiver{spans: spanSet{}, auth: map[string]bool{}, status: status, outcomes: map[string][]postedOutcome{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := strings.CutPrefix(r.URL.Path, "/api/v1/runs/"); ok && r.Method == http.MethodPost && rc.status == 0 {
			if id, ok := strings.CutSuffix(id, "/outcomes"); ok {
				rc.serveOutcome(t, w, r, id)
				return
			}
		}
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
	cfg := Config{Runs: EvalMinRuns, Seed: 7, Start: testStart, Headers: map[string]string{"Authorization": "Bearer k1"}}
	first := newReceiver(t, 0)
	sum := sendTo(t, first, cfg)

	want := 0
	for _, r := range Generate(cfg) {
		want += r.SpanCount()
	}
	runs := EvalMinRuns + EvalRuns
	if sum.Runs != runs || len(sum.TraceIDs) != runs || sum.Spans != want || len(first.spans) != want || sum.Outcomes != EvalRuns {
		t.Fatalf("summary %+v, received %d spans; want %d runs, %d spans and %d outcomes", sum, len(first.spans), runs, want, EvalRuns)
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

	other := Generate(Config{Runs: EvalMinRuns, Seed: 8, Start: testStart})
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

// TestTraffic checks, on what an OTLP receiver decoded from 40 runs and the
// evaluation experiment after them, that the traffic has the properties the
// other features are shown with.
func TestTraffic(t *testing.T) {
	rc := newReceiver(t, 0)
	sum := sendTo(t, rc, Config{Runs: 40, Seed: 1, Start: testStart, Headers: map[string]string{"Authorization": "Bearer k1"}})
	traces := rc.spans.byTrace()
	if len(traces) != 40+EvalRuns || sum.Runs != 40+EvalRuns || sum.FailedRuns == 0 {
		t.Fatalf("%d traces, %d runs, %d failed runs; want 40 + %d evaluation runs, some failed", len(traces), sum.Runs, sum.FailedRuns, EvalRuns)
	}

	t.Run("outcomes", func(t *testing.T) {
		// Every evaluation run (the root names its case), and no other,
		// got one outcome, posted with the key the spans were sent with.
		// Passed by hand from evalPlan: 5 of 6 trials of each task's
		// version 1, 1 of 6 of code_fix's version 2: 21 of 30.
		if sum.Outcomes != EvalRuns {
			t.Errorf("Summary.Outcomes = %d, want %d", sum.Outcomes, EvalRuns)
		}
		passed := 0
		for id, spans := range traces {
			root := rootOf(spans)
			posted := rc.outcomes[id]
			if root.str(CaseAttribute) == "" {
				if len(posted) != 0 {
					t.Errorf("run %s of the traffic got outcomes %+v", id, posted)
				}
				continue
			}
			if len(posted) != 1 {
				t.Errorf("evaluation run %s (%s) got %d outcomes, want 1", id, root.str(CaseAttribute), len(posted))
				continue
			}
			o := posted[0]
			if o.Name != OutcomeName || o.Source != "eval" || o.Passed == nil || o.Score == nil || o.Auth != "Bearer k1" ||
				(*o.Passed != (o.Label == "pass")) || (*o.Passed != (*o.Score == 1)) || !strings.Contains(o.Explanation, root.str(CaseAttribute)) {
				t.Errorf("evaluation run %s: outcome %+v", id, o)
				continue
			}
			if *o.Passed {
				passed++
			}
		}
		if passed != 21 {
			t.Errorf("%d evaluation runs passed, want 21 of %d", passed, EvalRuns)
		}
	})

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
			if root.str(CaseAttribute) != "" {
				// An evaluation run is a session of its own.
				if root.has("gen_ai.conversation.id") || root.has("user.id") || root.str("task.name") == "" {
					t.Errorf("evaluation run %s: %v", root.Trace, root.Attrs)
				}
				continue
			}
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
	// From EvalMinRuns on, the evaluation experiment follows the runs.
	base := Generate(Config{Runs: EvalMinRuns, Seed: 3, Start: testStart})
	more := Generate(Config{Runs: EvalMinRuns + 5, Seed: 3, Start: testStart})
	if len(base) != EvalMinRuns+EvalRuns || len(more) != EvalMinRuns+5+EvalRuns || len(short) != 5 ||
		!reflect.DeepEqual(base[:EvalMinRuns], more[:EvalMinRuns]) {
		t.Errorf("%d and %d runs for %d and %d: want the runs asked for, a prefix of the longer, and %d evaluation runs after",
			len(base), len(more), EvalMinRuns, EvalMinRuns+5, EvalRuns)
	}
	if sized := Generate(Config{Runs: EvalMinRuns, Seed: 3, Start: testStart, Spans: 20}); len(sized) != EvalMinRuns {
		t.Errorf("%d runs of 20 spans, want %d: no experiment for sized runs", len(sized), EvalMinRuns)
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
	s.Outcomes = 30
	want = "sent 4 runs (100 spans, 1 runs ending in error) and 30 outcomes in 2s (50 spans/s)"
	if got := s.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
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

// attr is a span's attribute as text, "" when absent.
func attr(s *SpanSpec, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// runEffects are the tool effect classes make run starts tally with: the
// --tool-effects of scripts/run.sh, as pattern → class.
func runEffects(t *testing.T) map[string]string {
	t.Helper()
	script, err := os.ReadFile("../../scripts/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--tool-effects '([^']*)'`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/run.sh passes no --tool-effects '…' to tally serve")
	}
	out := map[string]string{}
	for _, spec := range strings.Split(string(m[1]), ",") {
		tool, class, _ := strings.Cut(spec, "=")
		out[tool] = class
	}
	return out
}

// step is a tool call as the safety review reads it.
type step struct {
	span       *SpanSpec
	parent     *SpanSpec
	tool, args string
	ok         bool
}

// reviewed is what a run does that tally's safety review rules (package
// safety, see the README) read: its tool steps, its chat calls by parent
// and its approvals.
type reviewed struct {
	steps     []step
	chats     map[trace.SpanID][]*SpanSpec // by parent, in start order
	approvals []*SpanSpec
}

func review(r *Run) reviewed {
	rv := reviewed{chats: map[trace.SpanID][]*SpanSpec{}}
	spans := map[trace.SpanID]*SpanSpec{}
	r.Walk(func(parent trace.SpanID, s *SpanSpec) {
		spans[s.SpanID] = s
		switch {
		case attr(s, "gen_ai.operation.name") == "execute_tool":
			rv.steps = append(rv.steps, step{span: s, parent: spans[parent], tool: attr(s, "gen_ai.tool.name"),
				args: attr(s, "gen_ai.tool.call.arguments"), ok: s.Status != codeError})
		case attr(s, "gen_ai.operation.name") == "chat":
			rv.chats[parent] = append(rv.chats[parent], s)
		case attr(s, "tally.approval.decision") != "":
			rv.approvals = append(rv.approvals, s)
		}
	})
	return rv
}

// offeredTool is a tool definition as gen_ai.tool.definitions records it.
type offeredTool struct {
	Name       string
	Parameters struct {
		Properties map[string]any
		Required   []string
	}
}

// signals applies the rules of the three signals the incidents are for,
// by hand, under effects (tool → class):
//
//   - duplicate_side_effect: a non_idempotent or irreversible tool ended ok
//     again with the same arguments (the demo records no step ids);
//   - ungated_action: an irreversible tool ran with no approved approval
//     of it decided before it started (each approval gates one action);
//   - unknown_tool: the chat call that asked for a tool (the latest before
//     it under the same parent) recorded the tools it was offered, and the
//     tool was not among them; invalid_arguments: it was, and the
//     arguments have a field its schema does not list or lack a required
//     one.
func (rv reviewed) signals(t *testing.T, effects map[string]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	seen := map[string]bool{}
	used := map[*SpanSpec]bool{}
	for _, st := range rv.steps {
		class := effects[st.tool]
		if st.ok && (class == "non_idempotent" || class == "irreversible") {
			if k := st.tool + " " + st.args; seen[k] {
				out["duplicate_side_effect"] = append(out["duplicate_side_effect"], st.tool)
			} else {
				seen[k] = true
			}
		}
		if class == "irreversible" {
			gated := false
			for _, a := range rv.approvals {
				if !used[a] && attr(a, "tally.approval.decision") == "approved" && attr(a, "tally.approval.tool") == st.tool && !a.End.After(st.span.Start) {
					used[a], gated = true, true
					break
				}
			}
			if !gated {
				out["ungated_action"] = append(out["ungated_action"], st.tool)
			}
		}
		var asked *SpanSpec
		for _, c := range rv.chats[st.parent.SpanID] {
			if !c.Start.After(st.span.Start) {
				asked = c
			}
		}
		defs := ""
		if asked != nil {
			defs = attr(asked, "gen_ai.tool.definitions")
		}
		if defs == "" {
			continue
		}
		var offered []offeredTool
		if err := json.Unmarshal([]byte(defs), &offered); err != nil {
			t.Fatalf("tool definitions %s: %v", defs, err)
		}
		i := slices.IndexFunc(offered, func(d offeredTool) bool { return d.Name == st.tool })
		if i < 0 {
			out["unknown_tool"] = append(out["unknown_tool"], st.tool)
			continue
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(st.args), &args); err != nil {
			t.Fatalf("%s arguments %s: %v", st.tool, st.args, err)
		}
		p := offered[i].Parameters
		for k := range args {
			if _, ok := p.Properties[k]; !ok {
				out["invalid_arguments"] = append(out["invalid_arguments"], st.tool)
			}
		}
		for _, k := range p.Required {
			if _, ok := args[k]; !ok {
				out["invalid_arguments"] = append(out["invalid_arguments"], st.tool)
			}
		}
	}
	return out
}

// TestIncidents checks, rule by rule, that the demo of make run (40 runs,
// seed 1) raises exactly one duplicate_side_effect, one unknown_tool and
// one ungated_action under the effect classes scripts/run.sh gives tally,
// in the runs the schedule says, and nothing else those rules flag.
func TestIncidents(t *testing.T) {
	effects := runEffects(t)
	for name := range tools {
		if effects[name] == "" {
			t.Errorf("scripts/run.sh gives tool %s no effect class", name)
		}
	}
	if effects["issue_refund"] != "non_idempotent" || effects["merge_pull_request"] != "irreversible" {
		t.Errorf("scripts/run.sh classes issue_refund %q and merge_pull_request %q, want non_idempotent and irreversible",
			effects["issue_refund"], effects["merge_pull_request"])
	}
	runs := Generate(Config{Runs: 40, Seed: 1, Start: testStart})
	// By hand, from the services of the 40 runs of seed 1 (code-assistant
	// runs 0–5, 10–13, 17–18; support-bot 6–9, 19–26, 32–39;
	// research-agent 14–16, 27–31), none of which below ends in error:
	// code-assistant's 2nd run merges after an approval, its 4th without;
	// support-bot's 2nd refunds twice; research-agent's 2nd hallucinates.
	want := map[int]string{1: IncidentGatedAction, 3: IncidentUngatedAction, 7: IncidentDuplicateSideEffect, 15: IncidentUnknownTool}
	wantSignals := map[int]map[string][]string{
		3:  {"ungated_action": {"merge_pull_request"}},
		7:  {"duplicate_side_effect": {"issue_refund"}},
		15: {"unknown_tool": {hallucinatedTool}},
	}
	for i := range runs {
		r := &runs[i]
		if r.Incident != want[i] {
			t.Errorf("run %d (%s, %s) carries incident %q, want %q", i, r.Service, r.Task, r.Incident, want[i])
		}
		rv := review(r)
		got := rv.signals(t, effects)
		if len(got) == 0 {
			got = nil
		}
		if !reflect.DeepEqual(got, wantSignals[i]) {
			t.Errorf("run %d (%s, incident %q): signals %v, want %v", i, r.Task, r.Incident, got, wantSignals[i])
		}
	}
	// What each incident looks like.
	count := func(r *Run, tool string) (ok, failed int) {
		for _, st := range review(r).steps {
			if st.tool == tool && st.ok {
				ok++
			} else if st.tool == tool {
				failed++
			}
		}
		return ok, failed
	}
	if ok, _ := count(&runs[7], "issue_refund"); ok != 2 {
		t.Errorf("run 7 issues %d refunds, want 2", ok)
	}
	if _, failed := count(&runs[15], hallucinatedTool); failed != 1 {
		t.Errorf("run 15 calls %s %d times failing, want once", hallucinatedTool, failed)
	}
	for _, i := range []int{1, 3} {
		if ok, _ := count(&runs[i], "merge_pull_request"); ok != 1 {
			t.Errorf("run %d merges %d times, want once", i, ok)
		}
	}
	if rv := review(&runs[1]); len(rv.approvals) != 1 || attr(rv.approvals[0], "tally.approval.by") == "" ||
		rv.approvals[0].End.Sub(rv.approvals[0].Start) < 20*time.Second {
		t.Errorf("run 1: approvals %v, want one decided by someone after at least 20 s", rv.approvals)
	}
	// The incidents draw from a source of their own: without them, the
	// other runs are the same (those of a conversation after a run with
	// an incident start later: its runs follow each other), and a run that
	// carried one has the same spans but those of the incident (2 for the
	// hallucinated call and its chat, 2 for a merge, 3 with its approval,
	// 4 for two refunds).
	saved := incidentSchedule
	incidentSchedule = nil
	plain := Generate(Config{Runs: 40, Seed: 1, Start: testStart})
	incidentSchedule = saved
	extra := map[string]int{IncidentUnknownTool: 2, IncidentUngatedAction: 2, IncidentGatedAction: 3, IncidentDuplicateSideEffect: 4}
	shape := func(r Run) []string {
		var out []string
		r.Walk(func(_ trace.SpanID, s *SpanSpec) {
			out = append(out, fmt.Sprintf("%s %s %s %s", s.SpanID, s.Name, s.End.Sub(s.Start), s.Start.Sub(r.Root.Start)))
		})
		return out
	}
	for i := range 40 {
		r, p := runs[i], plain[i]
		if r.Incident == "" {
			if r.TraceID != p.TraceID || !reflect.DeepEqual(shape(r), shape(p)) {
				t.Errorf("run %d differs when no run carries an incident", i)
			}
			continue
		}
		ids := map[trace.SpanID]bool{}
		r.Walk(func(_ trace.SpanID, s *SpanSpec) { ids[s.SpanID] = true })
		p.Walk(func(_ trace.SpanID, s *SpanSpec) {
			if !ids[s.SpanID] {
				t.Errorf("run %d without its incident has span %s (%s) it lacks with it", i, s.SpanID, s.Name)
			}
		})
		if r.TraceID != p.TraceID || r.SpanCount() != p.SpanCount()+extra[r.Incident] {
			t.Errorf("run %d (%s): %d spans, %d without; want %d more", i, r.Incident, r.SpanCount(), p.SpanCount(), extra[r.Incident])
		}
	}
}

// TestEvaluationExperiment checks the runs after the 40 of make run: each
// task's 2 cases tried 3 times, code_fix's also by coder 1.5.0; every run
// of a version sharing one configuration (as tally's fingerprint reads
// it), none of the traffic's; version 2 newest, with more steps and tokens
// and fewer passes.
func TestEvaluationExperiment(t *testing.T) {
	runs := Generate(Config{Runs: 40, Seed: 1, Start: testStart})
	traffic, exp := runs[:40], runs[40:]
	if len(exp) != EvalRuns || EvalRuns != 30 {
		t.Fatalf("%d evaluation runs, want 30", len(exp))
	}
	var trafficEnd time.Time
	codeFixConfigs := map[string]bool{}
	for _, r := range traffic {
		if r.Trial != nil || attr(&r.Root, CaseAttribute) != "" {
			t.Errorf("run %s of the traffic is a trial", r.TraceID)
		}
		if r.Root.End.After(trafficEnd) {
			trafficEnd = r.Root.End
		}
		if r.Task == "code_fix" {
			codeFixConfigs[configOf(&r)] = true
		}
	}
	type key struct {
		task    string
		version int
	}
	type tally struct {
		runs, passed int
		cases        map[string]int
		configs      map[string]bool
		first        time.Time
		steps        int
		tokens       int64
	}
	byVersion := map[key]*tally{}
	for _, r := range exp {
		tr := r.Trial
		if tr == nil || attr(&r.Root, CaseAttribute) != tr.Case || r.ConversationID != "" || r.Failed || len(r.Root.Events) != 0 {
			t.Fatalf("evaluation run %s: trial %+v, case attribute %q, conversation %q, failed %v, events %v",
				r.TraceID, tr, attr(&r.Root, CaseAttribute), r.ConversationID, r.Failed, r.Root.Events)
		}
		if !r.Root.Start.After(trafficEnd) {
			t.Errorf("evaluation run %s starts at %s, before the traffic ended at %s", r.TraceID, r.Root.Start, trafficEnd)
		}
		k := key{r.Task, tr.Version}
		v := byVersion[k]
		if v == nil {
			v = &tally{cases: map[string]int{}, configs: map[string]bool{}, first: r.Root.Start}
			byVersion[k] = v
		}
		v.runs++
		v.cases[tr.Case]++
		v.configs[configOf(&r)] = true
		if tr.Passed {
			v.passed++
		}
		r.Walk(func(_ trace.SpanID, s *SpanSpec) {
			switch attr(s, "gen_ai.operation.name") {
			case "chat":
				v.steps++
				in, _ := strconv.ParseInt(attr(s, "gen_ai.usage.input_tokens")+attr(s, "gen_ai.usage.prompt_tokens"), 10, 64)
				out, _ := strconv.ParseInt(attr(s, "gen_ai.usage.output_tokens")+attr(s, "gen_ai.usage.completion_tokens"), 10, 64)
				v.tokens += in + out
			case "execute_tool":
				v.steps++
			}
		})
	}
	// By hand from evalPlan: 5 of 6 trials pass for each task's version
	// 1, 1 of 6 for code_fix's version 2; 2 cases of 3 trials each.
	want := map[key]int{{"triage_ticket", 1}: 5, {"answer_question", 1}: 5, {"research_report", 1}: 5, {"code_fix", 1}: 5, {"code_fix", 2}: 1}
	if len(byVersion) != len(want) {
		t.Errorf("versions tried %v, want %v", slices.Collect(maps.Keys(byVersion)), want)
	}
	for k, passed := range want {
		v := byVersion[k]
		if v == nil {
			t.Errorf("%s version %d not tried", k.task, k.version)
			continue
		}
		cases := map[string]int{fmt.Sprintf("%s-01", k.task): 3, fmt.Sprintf("%s-02", k.task): 3}
		if v.runs != 6 || v.passed != passed || !reflect.DeepEqual(v.cases, cases) {
			t.Errorf("%s version %d: %d runs, %d passed, cases %v; want 6, %d, %v", k.task, k.version, v.runs, v.passed, v.cases, passed, cases)
		}
		if len(v.configs) != 1 {
			t.Errorf("%s version %d has %d configurations, want 1", k.task, k.version, len(v.configs))
		}
	}
	v1, v2 := byVersion[key{"code_fix", 1}], byVersion[key{"code_fix", 2}]
	if v1 == nil || v2 == nil {
		t.FailNow()
	}
	for c := range v1.configs {
		if v2.configs[c] || codeFixConfigs[c] {
			t.Errorf("code_fix version 1's configuration is version 2's or a traffic run's:\n%s", c)
		}
	}
	for c := range v2.configs {
		if !strings.Contains(c, "agent coder@1.5.0") || codeFixConfigs[c] {
			t.Errorf("code_fix version 2's configuration lacks coder@1.5.0 or is a traffic run's:\n%s", c)
		}
	}
	// Tally's Compare page compares the version first seen last with the
	// one before it: version 2, then version 1, both after the traffic.
	if !v2.first.After(v1.first) {
		t.Errorf("code_fix version 2 first runs at %s, version 1 at %s: want version 2 newest", v2.first, v1.first)
	}
	// Version 2 is worse: more steps and, on the same models, more tokens
	// (so more cost) for fewer passes.
	if v2.steps <= v1.steps*5/4 || v2.tokens <= v1.tokens*3/2 {
		t.Errorf("code_fix version 2: %d steps, %d tokens; version 1: %d, %d; want version 2 over 1.25× the steps and 1.5× the tokens",
			v2.steps, v2.tokens, v1.steps, v1.tokens)
	}
}

// configOf is what tally's configuration fingerprint of a run is made of
// (query/versions.go): the models asked and answering, the agents'
// versions, the service's version, the tool definitions offered and the
// system instructions; one line each, sorted.
func configOf(r *Run) string {
	set := map[string]bool{}
	for _, kv := range r.Resource {
		if kv.Key == "service.version" {
			set["service "+kv.Value.Emit()] = true
		}
	}
	r.Walk(func(_ trace.SpanID, s *SpanSpec) {
		if attr(s, "gen_ai.operation.name") == "chat" {
			req, resp := attr(s, "gen_ai.request.model"), attr(s, "gen_ai.response.model")
			set["model "+cmp.Or(req, resp)+"→"+cmp.Or(resp, req)] = true
		}
		if v := attr(s, "gen_ai.agent.version"); v != "" {
			set["agent "+attr(s, "gen_ai.agent.name")+"@"+v] = true
		}
		if d := attr(s, "gen_ai.tool.definitions"); d != "" {
			set["tools "+d] = true
		}
		if i := attr(s, "gen_ai.system_instructions"); i != "" {
			set["instructions "+i] = true
		}
	})
	return strings.Join(slices.Sorted(maps.Keys(set)), "\n")
}

// TestReplayFixtureRun: query's TestRegenerateDemoFixture exports, from the
// runs of make run at 2025-06-02T09:00Z, the one with the fewest tool calls
// among those where a failed call is retried with success (the same tool
// and arguments), the first of them on a tie; replay's Example_demoRun
// replays it from ../../replay/testdata/demo_fixture.json. The incidents
// and the experiment must leave that run the one chosen, and unchanged.
func TestReplayFixtureRun(t *testing.T) {
	var fixture struct {
		Run struct {
			TraceID string `json:"trace_id"`
		}
		Calls []struct {
			SpanID       string          `json:"span_id"`
			ParentSpanID string          `json:"parent_span_id"`
			StartedAt    string          `json:"started_at"`
			Tool         string          `json:"tool"`
			ToolCallID   string          `json:"tool_call_id"`
			Arguments    json.RawMessage `json:"arguments"`
			Result       json.RawMessage `json:"result"`
			Status       string          `json:"status"`
			Attempt      int             `json:"attempt"`
			DurationMs   float64         `json:"duration_ms"`
		}
	}
	raw, err := os.ReadFile("../../replay/testdata/demo_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &fixture); err != nil {
		t.Fatal(err)
	}
	runs := Generate(Config{Runs: 40, Seed: 1, Start: time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)})
	var best *Run
	var bestSteps []step
	for i := range runs {
		steps := review(&runs[i]).steps
		slices.SortStableFunc(steps, func(a, b step) int {
			return cmp.Or(a.span.Start.Compare(b.span.Start), cmp.Compare(a.span.SpanID.String(), b.span.SpanID.String()))
		})
		retried := false
		for j, st := range steps {
			for _, later := range steps[j+1:] {
				retried = retried || (!st.ok && later.ok && later.tool == st.tool && canonicalJSON(later.args) == canonicalJSON(st.args))
			}
		}
		if retried && (best == nil || len(steps) < len(bestSteps)) {
			best, bestSteps = &runs[i], steps
		}
	}
	if best == nil || best.TraceID.String() != fixture.Run.TraceID || len(bestSteps) != len(fixture.Calls) {
		t.Fatalf("the smallest run with a retried failure is %v (%d calls), want %s (%d calls)", best, len(bestSteps), fixture.Run.TraceID, len(fixture.Calls))
	}
	for i, c := range fixture.Calls {
		st := bestSteps[i]
		attempt, _ := strconv.Atoi(attr(st.span, "gen_ai.tool.call.attempt"))
		status := "unset"
		if !st.ok {
			status = "error"
		}
		dur := float64(st.span.End.Sub(st.span.Start).Microseconds()) / 1000
		if st.span.SpanID.String() != c.SpanID || st.parent.SpanID.String() != c.ParentSpanID || st.tool != c.Tool ||
			attr(st.span, "gen_ai.tool.call.id") != c.ToolCallID || st.span.Start.UTC().Format(time.RFC3339Nano) != c.StartedAt ||
			status != c.Status || attempt != c.Attempt || dur != c.DurationMs || canonicalJSON(st.args) != canonicalJSON(string(c.Arguments)) ||
			(c.Result != nil && canonicalJSON(attr(st.span, "gen_ai.tool.call.result")) != canonicalJSON(string(c.Result))) {
			t.Errorf("call %d differs from the fixture's: span %s parent %s %s %s at %s, %s attempt %d, %v ms, %s",
				i+1, st.span.SpanID, st.parent.SpanID, st.tool, attr(st.span, "gen_ai.tool.call.id"), st.span.Start.UTC().Format(time.RFC3339Nano),
				status, attempt, dur, st.args)
		}
	}
}

// canonicalJSON re-encodes a JSON text with sorted keys.
func canonicalJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// TestSendPostsOutcomesOnceStored: tally answers 404 for a run it has not
// stored yet, a moment after acknowledging its spans; Send retries. An
// endpoint without tally's outcomes API is an error at once.
func TestSendPostsOutcomesOnceStored(t *testing.T) {
	rc := newReceiver(t, 0)
	rc.notYet = 3
	sum := sendTo(t, rc, Config{Runs: EvalMinRuns, Seed: 2, Start: testStart})
	if sum.Outcomes != EvalRuns || len(rc.outcomes) != EvalRuns || rc.refused != 3 {
		t.Errorf("%d outcomes posted for %d runs after %d refusals; want %d, %d, 3", sum.Outcomes, len(rc.outcomes), rc.refused, EvalRuns, EvalRuns)
	}

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			w.Header().Set("Content-Type", "application/x-protobuf")
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(plain.Close)
	began := time.Now()
	sum, err := Send(context.Background(), Config{Endpoint: plain.URL, Runs: EvalMinRuns, Seed: 2, Start: testStart})
	if err == nil || !strings.Contains(err.Error(), "404") || sum.Outcomes != 0 || time.Since(began) > outcomeWait/2 {
		t.Errorf("Send to an endpoint without the outcomes API: %v after %s, %d outcomes; want a 404 error at once", err, time.Since(began), sum.Outcomes)
	}
}

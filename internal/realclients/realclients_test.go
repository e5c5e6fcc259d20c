package realclients_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tallyhq/tally/attribution"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/internal/testenv"
	"github.com/tallyhq/tally/query"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// nodeDir holds the scripts, package.json, package-lock.json and (installed
// by scripts/test-deps.sh) node_modules.
const nodeDir = "testdata/node"

// nodeTimeout bounds one script run; a script still running then fails
// the test.
const nodeTimeout = 60 * time.Second

// depsHint ends every "not installed" failure.
const depsHint = "run scripts/test-deps.sh (make test does)"

// bill is what a run should come to: tokens per bucket and the cost in USD.
type bill struct {
	usage attribution.Usage
	cost  float64
}

// The hand-computed bills, with prices per million tokens from
// pricing/catalog.yaml. tally's Input is the whole prompt, cache included;
// Output includes reasoning.
func anthropicBill() bill {
	// claude-sonnet-4-5 (catalog anthropic/claude-sonnet-4-5): input $3,
	// cache read $0.30, cache write $3.75, output $15 per M.
	//   uncached input  40 × 3.00  =  120
	//   cache read    8000 × 0.30  = 2400
	//   cache write   1000 × 3.75  = 3750
	//   output         200 × 15.00 = 3000
	//   total                        9270 µUSD = $0.009270
	// Input as tally stores it: 40 + 8000 + 1000 = 9040.
	return bill{
		usage: attribution.Usage{Input: 9040, CacheRead: 8000, CacheWrite: 1000, Output: 200},
		cost:  9270e-6,
	}
}

func openaiBill() bill {
	// gpt-4o (catalog openai/gpt-4o): input $2.50, cache read $1.25,
	// output $10 per M; reasoning is billed as output.
	//   uncached input (2500 − 2048) = 452 × 2.50 = 1130
	//   cache read               2048 × 1.25       = 2560
	//   output                    300 × 10.00      = 3000 (120 of it reasoning)
	//   total                                        6690 µUSD = $0.006690
	return bill{
		usage: attribution.Usage{Input: 2500, CacheRead: 2048, Output: 300, Reasoning: 120},
		cost:  6690e-6,
	}
}

// ai5OpenAIGenerateBill is what the spans of ai 5's generateText with
// @ai-sdk/openai 2 allow (see the test case): no cache split, no reasoning.
func ai5OpenAIGenerateBill() bill {
	//   input 2500 × 2.50 = 6250
	//   output 300 × 10.00 = 3000
	//   total               9250 µUSD
	return bill{usage: attribution.Usage{Input: 2500, Output: 300}, cost: 9250e-6}
}

// TestRealClients runs each real Node client against the mock LLM, exports
// its spans to an in-process tally and checks the run's tokens and cost
// against the bill.
func TestRealClients(t *testing.T) {
	checkNodeDeps(t)
	sdkTracingOff := map[string]string{"ANTHROPIC_OPEN_TELEMETRY": "false"}
	tests := []struct {
		name   string
		script string
		args   []string
		env    map[string]string // beyond the mock's and tally's URLs
		call   string            // the request the mock must have seen
		want   bill
	}{
		// Vercel AI SDK 6 (ai 6, @ai-sdk/anthropic 3, @ai-sdk/openai 3): the
		// newest major that runs on Node 20 (ai 7 needs Node 22).
		{name: "vercel-ai6/anthropic/generateText", script: "vercel-ai.mjs", args: []string{"6", "anthropic", "generate"},
			call: "POST /v1/messages stream=false", want: anthropicBill()},
		{name: "vercel-ai6/anthropic/streamText", script: "vercel-ai.mjs", args: []string{"6", "anthropic", "stream"},
			call: "POST /v1/messages stream=true", want: anthropicBill()},
		{name: "vercel-ai6/openai-responses/generateText", script: "vercel-ai.mjs", args: []string{"6", "openai", "generate"},
			call: "POST /v1/responses stream=false", want: openaiBill()},
		{name: "vercel-ai6/openai-chat/generateText", script: "vercel-ai.mjs", args: []string{"6", "openai-chat", "generate"},
			call: "POST /v1/chat/completions stream=false", want: openaiBill()},
		{name: "vercel-ai6/openai-chat/streamText", script: "vercel-ai.mjs", args: []string{"6", "openai-chat", "stream"},
			call: "POST /v1/chat/completions stream=true", want: openaiBill()},
		// Vercel AI SDK 5 (ai 5, @ai-sdk/anthropic 2, @ai-sdk/openai 2, by npm
		// aliases).
		{name: "vercel-ai5/anthropic/generateText", script: "vercel-ai.mjs", args: []string{"5", "anthropic", "generate"},
			call: "POST /v1/messages stream=false", want: anthropicBill()},
		{name: "vercel-ai5/anthropic/streamText", script: "vercel-ai.mjs", args: []string{"5", "anthropic", "stream"},
			call: "POST /v1/messages stream=true", want: anthropicBill()},
		// ai 5's generateText spans carry only ai.usage.promptTokens (2500) and
		// completionTokens (300): the SDK's result.usage has cachedInputTokens
		// 2048 and reasoningTokens 120, but generateText does not record them
		// and @ai-sdk/openai 2's providerMetadata holds no usage. Nothing in the
		// spans says 2048 of the prompt were cache reads, so tally can only
		// price all 2500 as uncached input:
		//   2500 × 2.50 + 300 × 10 = 6250 + 3000 = 9250 µUSD,
		// 2048 × (2.50 − 1.25) = 2560 µUSD above OpenAI's bill of 6690.
		{name: "vercel-ai5/openai-responses/generateText", script: "vercel-ai.mjs", args: []string{"5", "openai", "generate"},
			call: "POST /v1/responses stream=false", want: ai5OpenAIGenerateBill()},
		{name: "vercel-ai5/openai-chat/generateText", script: "vercel-ai.mjs", args: []string{"5", "openai-chat", "generate"},
			call: "POST /v1/chat/completions stream=false", want: ai5OpenAIGenerateBill()},
		// ai 5's streamText does record ai.usage.cachedInputTokens and
		// reasoningTokens.
		{name: "vercel-ai5/openai-chat/streamText", script: "vercel-ai.mjs", args: []string{"5", "openai-chat", "stream"},
			call: "POST /v1/chat/completions stream=true", want: openaiBill()},
		// The Anthropic SDK traces its own calls since 0.134.0 (scope
		// com.anthropic.sdk.typescript) when a global tracer provider is
		// registered, as every setup below does. Its span sets
		// gen_ai.usage.input_tokens to input + cache read + cache creation
		// (9040), with gen_ai.usage.cache_read.input_tokens (8000) and
		// gen_ai.usage.cache_write.input_tokens (1000).
		{name: "anthropic-sdk/create", script: "anthropic-sdk.mjs", args: []string{"none", "generate"},
			call: "POST /v1/messages stream=false", want: anthropicBill()},
		{name: "anthropic-sdk/stream", script: "anthropic-sdk.mjs", args: []string{"none", "stream"},
			call: "POST /v1/messages stream=true", want: anthropicBill()},
		// OpenLLMetry-JS @traceloop/instrumentation-anthropic 0.27.0 (the newest
		// published) with the Anthropic SDK 0.137.0, the newest it can patch:
		// SDK 1.x has no Anthropic.Completions and manuallyInstrument throws.
		// 0.27.0 sets gen_ai.usage.input_tokens to Anthropic's uncached
		// input_tokens (40), with gen_ai.usage.cache_read.input_tokens and
		// cache_creation.input_tokens beside it. With the SDK's own tracing on,
		// the SDK's span is a child of the instrumentation's, for the same
		// call; with it off, the instrumentation's span is alone.
		{name: "openllmetry/anthropic/create", script: "anthropic-sdk.mjs", args: []string{"openllmetry", "generate"},
			call: "POST /v1/messages stream=false", want: anthropicBill()},
		{name: "openllmetry/anthropic/stream", script: "anthropic-sdk.mjs", args: []string{"openllmetry", "stream"},
			call: "POST /v1/messages stream=true", want: anthropicBill()},
		{name: "openllmetry/anthropic/create/sdk-tracing-off", script: "anthropic-sdk.mjs", args: []string{"openllmetry", "generate"},
			env: sdkTracingOff, call: "POST /v1/messages stream=false", want: anthropicBill()},
		// OpenInference @arizeai/openinference-instrumentation-anthropic 0.2.8
		// with the Anthropic SDK 1.14.0. Up to 0.1.22 it set
		// llm.token_count.prompt = input_tokens and read no cache field (the
		// cache split was lost); 0.2.8 reads them: llm.token_count.prompt is
		// input + cache read + cache write (9040), with
		// llm.token_count.prompt_details.cache_read (8000) and cache_write
		// (1000) beside it, so its spans carry the whole split and the bill
		// holds.
		{name: "openinference/anthropic/create", script: "anthropic-sdk.mjs", args: []string{"openinference", "generate"},
			call: "POST /v1/messages stream=false", want: anthropicBill()},
		{name: "openinference/anthropic/stream", script: "anthropic-sdk.mjs", args: []string{"openinference", "stream"},
			call: "POST /v1/messages stream=true", want: anthropicBill()},
		{name: "openinference/anthropic/create/sdk-tracing-off", script: "anthropic-sdk.mjs", args: []string{"openinference", "generate"},
			env: sdkTracingOff, call: "POST /v1/messages stream=false", want: anthropicBill()},
	}
	tally := tallytest.Start(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mock := startMockLLM(t)
			env := map[string]string{"MOCK_LLM_URL": mock.URL, "TALLY_OTLP_URL": tally.URL}
			for k, v := range tt.env {
				env[k] = v
			}
			out := runNode(t, tt.script, tt.args, env)
			if calls := mock.Calls(); len(calls) != 1 || calls[0] != tt.call {
				t.Errorf("mock saw %q, want [%q]", calls, tt.call)
			}
			run := waitRun(t, tally.URL, out.TraceID, out.Spans)
			s := run.Summary
			if s.Usage != tt.want.usage {
				t.Errorf("usage %+v, want %+v", s.Usage, tt.want.usage)
			}
			if !near(s.Cost.Total, tt.want.cost) {
				t.Errorf("cost $%.9f, want $%.9f", s.Cost.Total, tt.want.cost)
			}
			if s.LLMCalls != 1 || s.UnpricedSpans != 0 {
				t.Errorf("llm calls %d, unpriced spans %d; want 1 and 0", s.LLMCalls, s.UnpricedSpans)
			}
			if t.Failed() || os.Getenv("REALCLIENTS_DEBUG") != "" {
				t.Logf("spans as exported:\n%s", out.Dump)
				t.Logf("spans as tally read them:\n%s", describe(run.Roots))
			}
		})
	}
}

// checkNodeDeps fails the test unless node is on PATH and node_modules was
// installed from the current package-lock.json.
func checkNodeDeps(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: %v; %s", err, depsHint)
	}
	lock, err := os.ReadFile(filepath.Join(nodeDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	// scripts/test-deps.sh writes the lockfile's hash here after a
	// successful install.
	stamp, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", ".tally-lock-sha256"))
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s/node_modules is missing; %s", nodeDir, depsHint)
	} else if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("%s/node_modules is stale (installed from another package-lock.json); %s", nodeDir, depsHint)
	}
}

// nodeOutput is what a script printed.
type nodeOutput struct {
	TraceID string `json:"trace_id"`
	Spans   int    `json:"spans"` // spans it exported
	Dump    string `json:"-"`     // its stderr: the exported spans and any log
}

// runNode runs script in nodeDir with the environment plus env, bounded by
// nodeTimeout, and decodes the JSON line it ends its stdout with.
func runNode(t *testing.T, script string, args []string, env map[string]string) nodeOutput {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = nodeDir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("node %s %s timed out after %v\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), nodeTimeout, &stdout, &stderr)
	}
	if err != nil {
		t.Fatalf("node %s %s: %v\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), err, &stdout, &stderr)
	}
	var out nodeOutput
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil || len(out.TraceID) != 32 || out.Spans < 2 {
		t.Fatalf("node %s: last stdout line is not {trace_id, spans} with a root and a call (%v)\nstdout:\n%s\nstderr:\n%s",
			script, err, &stdout, &stderr)
	}
	out.Dump = stderr.String()
	return out
}

// waitRun reads the run from tally's API until all spans of it are stored:
// tally acknowledges an export once it is on its local log, and writes it to
// ClickHouse a moment later.
func waitRun(t *testing.T, base, traceID string, spans int) query.RunDetail {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		run, code, body := getRun(t, base+"/api/v1/runs/"+traceID)
		if code == http.StatusOK && run.Summary.Spans >= spans {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: after 15s GET answers %d with %d of %d spans\n%s", traceID, code, run.Summary.Spans, spans, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getRun(t *testing.T, url string) (query.RunDetail, int, []byte) {
	t.Helper()
	var run query.RunDetail
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &run); err != nil {
			t.Fatalf("decode %s: %v\n%s", url, err, body)
		}
	}
	return run, resp.StatusCode, body
}

// describe renders a run tree with each span's stored usage, cost, reading
// and usage attributes, for failure messages.
func describe(nodes []*query.SpanNode) string {
	var b strings.Builder
	var walk func(nodes []*query.SpanNode, depth int)
	walk = func(nodes []*query.SpanNode, depth int) {
		for _, n := range nodes {
			ind := strings.Repeat("  ", depth)
			fmt.Fprintf(&b, "%s%s [%s] model=%q provider=%q counted=%v usage_mode=%q\n", ind, n.Name, n.Type, n.Model, n.Provider, n.Counted, n.UsageMode)
			if n.Usage != nil {
				fmt.Fprintf(&b, "%s  usage %+v\n", ind, *n.Usage)
			}
			if n.Cost != nil {
				fmt.Fprintf(&b, "%s  cost %+v (source %q, price %s)\n", ind, *n.Cost, n.CostSource, n.PriceEntry)
			}
			for _, a := range n.Attributes {
				if usageKey(a.Key) {
					fmt.Fprintf(&b, "%s  %s = %s\n", ind, a.Key, a.Value)
				}
			}
			walk(n.Children, depth+1)
		}
	}
	walk(nodes, 0)
	return b.String()
}

// usageKey reports whether an attribute is about tokens, usage, cost,
// models or tally's reading of them.
func usageKey(k string) bool {
	for _, s := range []string{"token", "usage", "cost", "model", "tally.", "provider", "system", "metadata"} {
		if strings.Contains(strings.ToLower(k), s) {
			return true
		}
	}
	return false
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// The usage every mock answer carries, as the providers' APIs spell it.
const (
	anthropicModel = "claude-sonnet-4-5-20250929"
	openaiModel    = "gpt-4o-2024-08-06"
)

// anthropicUsage is an Anthropic Messages API usage object: input_tokens is
// the uncached part of the prompt, the cache counts are separate.
func anthropicUsage() map[string]any {
	return map[string]any{
		"input_tokens":                40,
		"cache_read_input_tokens":     8000,
		"cache_creation_input_tokens": 1000,
		"output_tokens":               200,
	}
}

// chatUsage is an OpenAI Chat Completions usage object: prompt_tokens
// includes the cached tokens, completion_tokens includes the reasoning.
func chatUsage() map[string]any {
	return map[string]any{
		"prompt_tokens":     2500,
		"completion_tokens": 300,
		"total_tokens":      2800,
		"prompt_tokens_details": map[string]any{
			"cached_tokens": 2048, "audio_tokens": 0,
		},
		"completion_tokens_details": map[string]any{
			"reasoning_tokens": 120, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
		},
	}
}

// responsesUsage is the same call's usage as the OpenAI Responses API
// spells it.
func responsesUsage() map[string]any {
	return map[string]any{
		"input_tokens":          2500,
		"input_tokens_details":  map[string]any{"cached_tokens": 2048},
		"output_tokens":         300,
		"output_tokens_details": map[string]any{"reasoning_tokens": 120},
		"total_tokens":          2800,
	}
}

// mockLLM is a local stand-in for the Anthropic and OpenAI APIs. It answers
// POST /v1/messages (JSON, or server-sent events when the request says
// "stream": true), POST /v1/chat/completions (JSON or SSE) and POST
// /v1/responses (JSON) with fixed usage, and records each request.
type mockLLM struct {
	URL string // http://127.0.0.1:port, without /v1

	mu    sync.Mutex
	calls []string // "POST /v1/messages stream=true"
}

// startMockLLM starts a mock on 127.0.0.1, closed on test cleanup.
func startMockLLM(t *testing.T) *mockLLM {
	t.Helper()
	m := &mockLLM{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", m.messages)
	mux.HandleFunc("POST /v1/chat/completions", m.chatCompletions)
	mux.HandleFunc("POST /v1/responses", m.responses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		m.record(r, false)
		http.Error(w, `{"error":{"type":"not_found","message":"mock: no such endpoint"}}`, http.StatusNotFound)
	})
	srv := httptest.NewServer(mux) // binds 127.0.0.1
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// Calls returns the requests the mock has seen.
func (m *mockLLM) Calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

func (m *mockLLM) record(r *http.Request, stream bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, fmt.Sprintf("%s %s stream=%v", r.Method, r.URL.Path, stream))
}

// readStream decodes the request body's "stream" flag.
func readStream(w http.ResponseWriter, r *http.Request) (stream, ok bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false, false
	}
	var req struct {
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "mock: request is not JSON: "+err.Error(), http.StatusBadRequest)
		return false, false
	}
	return req.Stream, true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events; an empty event name writes a data-only
// event (OpenAI's style), and data "[DONE]" is written verbatim.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) event(name string, data any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	if str, ok := data.(string); ok {
		fmt.Fprintf(s.w, "data: %s\n\n", str)
	} else {
		b, _ := json.Marshal(data)
		fmt.Fprintf(s.w, "data: %s\n\n", b)
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

const replyText = "Hello from the mock."

// messages answers the Anthropic Messages API.
func (m *mockLLM) messages(w http.ResponseWriter, r *http.Request) {
	stream, ok := readStream(w, r)
	if !ok {
		return
	}
	m.record(r, stream)
	if !stream {
		writeJSON(w, map[string]any{
			"id": "msg_mock01", "type": "message", "role": "assistant", "model": anthropicModel,
			"content":     []any{map[string]any{"type": "text", "text": replyText}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": anthropicUsage(),
		})
		return
	}
	// The event sequence of Anthropic's streaming docs: message_start carries
	// the input and cache counts (and output_tokens 1), message_delta the
	// cumulative output count.
	start := anthropicUsage()
	start["output_tokens"] = 1
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_mock01", "type": "message", "role": "assistant", "model": anthropicModel,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	s.event("ping", map[string]any{"type": "ping"})
	for _, part := range []string{"Hello ", "from the ", "mock."} {
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": part}})
	}
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 200}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// chatCompletions answers the OpenAI Chat Completions API.
func (m *mockLLM) chatCompletions(w http.ResponseWriter, r *http.Request) {
	stream, ok := readStream(w, r)
	if !ok {
		return
	}
	m.record(r, stream)
	created := time.Now().Unix()
	if !stream {
		writeJSON(w, map[string]any{
			"id": "chatcmpl-mock01", "object": "chat.completion", "created": created, "model": openaiModel,
			"system_fingerprint": "fp_mock",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": replyText, "refusal": nil}}},
			"usage": chatUsage(),
		})
		return
	}
	// Content chunks, then (as with stream_options.include_usage) a final
	// chunk with no choices and the usage.
	chunk := func(choices []any, usage any) map[string]any {
		return map[string]any{"id": "chatcmpl-mock01", "object": "chat.completion.chunk", "created": created,
			"model": openaiModel, "system_fingerprint": "fp_mock", "choices": choices, "usage": usage}
	}
	s := newSSE(w)
	s.event("", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "finish_reason": nil}}, nil))
	s.event("", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"content": replyText}, "finish_reason": nil}}, nil))
	s.event("", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}, nil))
	s.event("", chunk([]any{}, chatUsage()))
	s.event("", "[DONE]")
}

// responses answers the OpenAI Responses API (non-streaming only: the tests
// do not stream through it).
func (m *mockLLM) responses(w http.ResponseWriter, r *http.Request) {
	stream, ok := readStream(w, r)
	if !ok {
		return
	}
	m.record(r, stream)
	if stream {
		http.Error(w, `{"error":{"message":"mock: streaming /v1/responses is not implemented"}}`, http.StatusNotImplemented)
		return
	}
	writeJSON(w, map[string]any{
		"id": "resp_mock01", "object": "response", "created_at": time.Now().Unix(), "status": "completed",
		"model": openaiModel, "error": nil, "incomplete_details": nil,
		"output": []any{map[string]any{"type": "message", "id": "msg_mock01", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": replyText, "annotations": []any{}}}}},
		"usage": responsesUsage(),
	})
}

package demo

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

const (
	kindInternal = trace.SpanKindInternal
	kindClient   = trace.SpanKindClient
	codeError    = codes.Error
)

// usage is a call's token usage in the inclusive form (input includes cache
// reads and writes, output includes reasoning).
type usage struct {
	input, output, cacheRead, cacheWrite, reasoning int
}

func (u *usage) add(o usage) {
	u.input += o.input
	u.output += o.output
	u.cacheRead += o.cacheRead
	u.cacheWrite += o.cacheWrite
	u.reasoning += o.reasoning
}

// aggregated is the usage an agent span repeats from its descendants, the
// way Strands records it: the sum of their inclusive usage (input including
// cache reads and writes), whatever form each chat span reported it in.
func (u usage) aggregated() []attribute.KeyValue {
	if u == (usage{}) {
		return nil
	}
	return []attribute.KeyValue{
		attribute.Int("gen_ai.usage.input_tokens", u.input),
		attribute.Int("gen_ai.usage.output_tokens", u.output),
		attribute.Int("gen_ai.usage.cache_read.input_tokens", u.cacheRead),
		attribute.Int("gen_ai.usage.cache_creation.input_tokens", u.cacheWrite),
	}
}

// session is the growing prompt of one agent invocation and what the
// provider has cached of it.
type session struct {
	cache     cacheStyle
	context   int // tokens of the prompt the next call sends
	cached    int // explicit caching: tokens written to the cache so far
	prevInput int
}

func newSession(a *agentProfile, prefix int) *session {
	return &session{cache: a.model.cache, context: prefix}
}

// add appends tokens (a message, a tool result) to the prompt.
func (s *session) add(tokens int) { s.context += tokens }

// call is the usage of the next call's prompt: all input, cache reads, writes.
func (s *session) call(rng *rand.Rand) (input, read, write int) {
	input = s.context
	switch s.cache {
	case cacheExplicit:
		// A breakpoint on the last message: everything before the short
		// uncached tail is read from or written to the cache.
		read = s.cached
		tail := min(5+rng.IntN(36), input-read)
		write = input - read - tail
		s.cached = read + write
	case cacheAutomatic:
		if s.prevInput >= 1024 {
			read = s.prevInput / 128 * 128
		}
	case cacheImplicit:
		if s.prevInput >= 1024 && rng.Float64() < 0.85 {
			read = s.prevInput / 256 * 256
		}
	}
	s.prevInput = input
	return input, read, write
}

// chatShape says what kind of chat call to build.
type chatShape struct {
	model  *model // instead of the agent's model
	output [2]int // visible output tokens
	final  bool   // a final answer rather than a request for tools
	fail   bool   // the call fails
	// offered records the tools the agent's model was offered
	// (gen_ai.tool.definitions).
	offered bool
}

// chat builds a "chat <model>" span starting at start, and returns it with
// its usage in the inclusive form whatever style the span reports. sess nil
// means a fresh large prompt (the agent's bigPrompt) that never hits the cache.
func (b *builder) chat(start time.Time, a *agentProfile, style usageStyle, sess *session, shape chatShape) (SpanSpec, usage) {
	m := a.model
	if shape.model != nil {
		m = shape.model
	}
	var input, read, write int
	if sess == nil {
		input = b.between(a.bigPrompt)
	} else {
		input, read, write = sess.call(b.rng)
	}
	span := SpanSpec{SpanID: b.spanID(), Name: "chat " + m.request, Kind: kindClient, Start: start}
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs, attribute.String("gen_ai.operation.name", "chat"))
	if style == usageDeprecated {
		attrs = append(attrs, attribute.String("gen_ai.system", m.provider))
	} else {
		attrs = append(attrs, attribute.String("gen_ai.provider.name", m.provider))
	}
	attrs = append(attrs,
		attribute.String("gen_ai.request.model", m.request),
		attribute.String("gen_ai.agent.name", a.name),
		attribute.String("server.address", m.server),
		attribute.Int("server.port", 443),
		attribute.Int("gen_ai.request.max_tokens", 4096),
		attribute.Float64("gen_ai.request.temperature", 0.2),
	)
	stream := false
	if m.provider == "anthropic" || m.provider == "gcp.gemini" {
		stream = b.rng.Float64() < streamRate
		attrs = append(attrs, attribute.Bool("gen_ai.request.stream", stream))
	}
	if a.bigPrompt[0] > 0 {
		// The silent cache invalidator: the prompt starts with the time.
		instr, _ := json.Marshal([]map[string]string{{
			"type":    "text",
			"content": "Current time: " + start.Format(time.RFC3339Nano) + ". You are a summarizer. Summarize the findings below for the user in at most 300 words.",
		}})
		attrs = append(attrs, attribute.String("gen_ai.system_instructions", string(instr)))
	}
	// What the call was sent and answered, in the OpenTelemetry parts
	// schema (content capture on), built from the conversation's topic
	// without drawing on the random source, so the rest of the run stays
	// as the seed makes it.
	attrs = append(attrs, attribute.String("gen_ai.input.messages", demoMessages("user", b.question(a))))
	if shape.offered || (b.conv.trial != nil && len(a.tools) > 0) {
		// The evaluation harness records the tools offered on every call.
		attrs = append(attrs, attribute.String("gen_ai.tool.definitions", toolDefinitions(a)))
	}
	if shape.fail {
		span.End = start.Add(b.msBetween(100, 2000))
		span.Status, span.StatusMessage = codeError, m.errorType+": the provider is overloaded"
		span.Attributes = append(attrs, attribute.String("error.type", m.errorType))
		span.Events = []EventSpec{exception(span.End, m.errorType, span.StatusMessage)}
		return span, usage{}
	}

	output := b.between(shape.output)
	reasoning := 0
	if m.reasoning {
		reasoning = b.between([2]int{100, 800})
		output += reasoning
	}
	ttft := b.msBetween(m.ttft[0], m.ttft[1]) + time.Duration(input)*20*time.Microsecond // prefill
	generate := time.Duration(float64(output) / float64(b.between(m.tokensPerSec)) * float64(time.Second))
	span.End = start.Add(ttft + generate).Truncate(time.Microsecond)
	finish := m.toolFinish
	if shape.final {
		finish = m.stopFinish
	}
	attrs = append(attrs,
		attribute.String("gen_ai.response.model", m.response),
		attribute.String("gen_ai.response.id", m.respIDPrefix+b.token(24)),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{finish}),
	)
	if stream {
		attrs = append(attrs, attribute.Float64("gen_ai.response.time_to_first_chunk", math.Round(ttft.Seconds()*1000)/1000))
	}
	switch style {
	case usageDeprecated:
		// Older instrumentations: prompt_tokens (OpenAI's count, cached
		// tokens included) and the cache reads under the pre-1.40 name.
		attrs = append(attrs,
			attribute.Int("gen_ai.usage.prompt_tokens", input),
			attribute.Int("gen_ai.usage.completion_tokens", output))
		if m.cache != cacheNone {
			attrs = append(attrs, attribute.Int("gen_ai.usage.cache_read_input_tokens", read))
		}
	case usageAdditive:
		// Anthropic's API counts input_tokens after the cache breakpoints:
		// only the uncached tail.
		attrs = append(attrs,
			attribute.Int("gen_ai.usage.input_tokens", input-read-write),
			attribute.Int("gen_ai.usage.output_tokens", output),
			attribute.Int("gen_ai.usage.cache_read.input_tokens", read),
			attribute.Int("gen_ai.usage.cache_creation.input_tokens", write))
	default:
		attrs = append(attrs,
			attribute.Int("gen_ai.usage.input_tokens", input),
			attribute.Int("gen_ai.usage.output_tokens", output))
		if m.cache != cacheNone {
			attrs = append(attrs, attribute.Int("gen_ai.usage.cache_read.input_tokens", read))
		}
		if m.cache == cacheExplicit {
			attrs = append(attrs, attribute.Int("gen_ai.usage.cache_creation.input_tokens", write))
		}
		if m.reasoning {
			attrs = append(attrs, attribute.Int("gen_ai.usage.reasoning.output_tokens", reasoning))
		}
		if style == usageClientCost {
			cost := float64(input)*m.inputCost + float64(output)*m.outputCost
			attrs = append(attrs,
				attribute.Float64("gen_ai.usage.cost.amount", math.Round(cost*1e9)/1e9),
				attribute.String("gen_ai.usage.cost.currency", "USD"))
		}
	}
	answer := "I will look into " + b.conv.topic + " with my tools."
	if shape.final {
		answer = "Here is what I found about " + b.conv.topic + ", with the sources the tools returned."
	}
	attrs = append(attrs, attribute.String("gen_ai.output.messages", demoMessages("assistant", answer)))
	span.Attributes = attrs
	if sess != nil {
		sess.add(output - reasoning) // the answer joins the conversation; thoughts do not
	}
	return span, usage{input: input, output: output, cacheRead: read, cacheWrite: write, reasoning: reasoning}
}

// question is what the agent's call is asked: the user's request for the
// planner, the delegated step for a sub-agent.
func (b *builder) question(a *agentProfile) string {
	if a == &plannerAgent {
		return "Can you help me with " + b.conv.topic + "?"
	}
	return "As the " + a.name + ": work on " + b.conv.topic + " and report back."
}

// demoMessages is one text message of role as gen_ai.*.messages JSON.
func demoMessages(role, text string) string {
	return jsonString([]map[string]any{{"role": role, "parts": []map[string]string{{"type": "text", "content": text}}}})
}

// toolCall builds the spans of one tool call: one per attempt, at most
// maxSpans (≥ 1), all with the same call id. It returns when the last attempt
// ended and how many tokens its result adds to the prompt. ok forces success.
func (b *builder) toolCall(start time.Time, a *agentProfile, name, args, callID string, maxSpans int, ok bool) ([]SpanSpec, time.Time, int) {
	tl := tools[name]
	var spans []SpanSpec
	t := start
	for attempt := 1; ; attempt++ {
		span := SpanSpec{SpanID: b.spanID(), Name: "execute_tool " + name, Kind: kindInternal, Start: t}
		attrs := make([]attribute.KeyValue, 0, 10)
		attrs = append(attrs,
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.String("gen_ai.tool.call.id", callID),
			attribute.String("gen_ai.tool.type", "function"),
			attribute.String("gen_ai.tool.description", tl.description),
			attribute.String("gen_ai.agent.name", a.name),
			attribute.String("gen_ai.tool.call.arguments", args),
		)
		if tl.maxAttempts > 1 {
			attrs = append(attrs, attribute.Int("gen_ai.tool.call.attempt", attempt))
		}
		if !ok && b.rng.Float64() < tl.failRate {
			span.End = t.Add(b.msBetween(tl.failLatency[0], tl.failLatency[1]))
			msg := fmt.Sprintf("%s: %s after %d ms", name, tl.errorType, span.End.Sub(t).Milliseconds())
			span.Status, span.StatusMessage = codeError, msg
			span.Attributes = append(attrs, attribute.String("error.type", tl.errorType))
			span.Events = []EventSpec{exception(span.End, tl.errorType, msg)}
			spans = append(spans, span)
			if attempt < tl.maxAttempts && len(spans) < maxSpans {
				t = span.End.Add(time.Duration(attempt) * b.msBetween(backoff[0], backoff[1]))
				continue
			}
			return spans, span.End, 30 // the error message the model sees
		}
		latency := tl.latency
		if tl.tail > 0 && b.rng.Float64() < tl.tail {
			latency = tl.tailLatency
		}
		span.End = t.Add(b.msBetween(latency[0], latency[1]))
		span.Attributes = append(attrs, attribute.String("gen_ai.tool.call.result", b.toolResult(name)))
		spans = append(spans, span)
		return spans, span.End, b.between(tl.resultToks)
	}
}

func exception(at time.Time, typ, msg string) EventSpec {
	return EventSpec{Name: "exception", Time: at, Attributes: []attribute.KeyValue{
		attribute.String("exception.type", typ),
		attribute.String("exception.message", msg),
	}}
}

var querySuffixes = []string{"", " workaround", " root cause", " official documentation", " 2026", " known issue", " best practices", " example"}

var repos = []string{"payments", "web", "session-service", "orders-api"}

var indexes = map[string]string{"support-bot": "kb-support", "research-agent": "papers", "code-assistant": "repo-code"}

var commands = map[string][]string{
	"code_fix": {
		"go test ./... -run TestCheckoutTimeout -count=5",
		"go test -race ./session/...",
		"go vet ./...",
		"git diff --stat",
		"grep -rn \"evict\" internal/cache",
	},
	"research_report": {
		"python analyze.py --input data.csv --plot",
		"python -c \"import pandas as pd; print(pd.read_csv('data.csv').describe())\"",
		"wc -l sources.txt",
	},
}

// v2Commands are what coder 1.5.0 (coderV2) runs in its sandbox: many
// checks, seldom the same one twice.
var v2Commands = []string{
	"go test ./... -count=1",
	"go test ./... -count=1 -shuffle=on",
	"go test -race ./... -count=1",
	"go vet ./...",
	"golangci-lint run ./...",
	"go build ./...",
	"go test ./... -run TestCheckoutTimeout -count=10",
	"go test -cover ./...",
	"git diff --stat",
	"staticcheck ./...",
}

// Tool arguments and results, encoded as JSON strings.
type (
	searchArgs struct {
		Query      string `json:"query"`
		MaxResults int    `json:"max_results"`
	}
	fetchArgs struct {
		URL      string `json:"url"`
		TimeoutS int    `json:"timeout_s"`
	}
	vectorArgs struct {
		Query string `json:"query"`
		Index string `json:"index"`
		TopK  int    `json:"top_k"`
	}
	sandboxArgs struct {
		Language string `json:"language"`
		Command  string `json:"command"`
		TimeoutS int    `json:"timeout_s"`
	}
	searchHit struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Snippet string `json:"snippet"`
	}
	searchResult struct {
		Results []searchHit `json:"results"`
	}
	fetchResult struct {
		Status      int    `json:"status"`
		ContentType string `json:"content_type"`
		Bytes       int    `json:"bytes"`
		Text        string `json:"text"`
	}
	vectorMatch struct {
		ID    string  `json:"id"`
		Score float64 `json:"score"`
	}
	vectorResult struct {
		Matches []vectorMatch `json:"matches"`
	}
	sandboxResult struct {
		ExitCode   int    `json:"exit_code"`
		Stdout     string `json:"stdout"`
		Stderr     string `json:"stderr"`
		DurationMS int    `json:"duration_ms"`
	}
	refundArgs struct {
		Invoice   string  `json:"invoice"`
		AmountUSD float64 `json:"amount_usd"`
		Reason    string  `json:"reason"`
	}
	refundResult struct {
		RefundID string `json:"refund_id"`
		Status   string `json:"status"`
	}
	mergeArgs struct {
		Repo   string `json:"repo"`
		Number int    `json:"number"`
		Method string `json:"method"`
	}
	mergeResult struct {
		Merged bool   `json:"merged"`
		SHA    string `json:"sha"`
	}
)

// toolArgs is a JSON string of arguments for the tool, about the topic.
func (b *builder) toolArgs(name string) string {
	topic := b.conv.topic
	switch name {
	case "web_search":
		return jsonString(searchArgs{Query: topic + querySuffixes[b.choose(name, len(querySuffixes))], MaxResults: 5})
	case "fetch_url":
		return jsonString(fetchArgs{URL: b.url(), TimeoutS: 3})
	case "vector_search":
		return jsonString(vectorArgs{Query: topic + querySuffixes[b.choose(name, len(querySuffixes))], Index: indexes[b.conv.app.service], TopK: 8})
	case "issue_refund":
		return jsonString(refundArgs{Invoice: fmt.Sprintf("INV-%05d", 10000+b.rng.IntN(90000)), AmountUSD: float64(19 + b.rng.IntN(231)), Reason: topic})
	case "merge_pull_request":
		return jsonString(mergeArgs{Repo: "acme/" + repos[b.rng.IntN(len(repos))], Number: 1000 + b.rng.IntN(9000), Method: "squash"})
	}
	cmds := commands[b.conv.task.name]
	if tr := b.conv.trial; tr != nil && tr.Version == 2 {
		cmds = v2Commands
	}
	if cmds == nil {
		cmds = commands["code_fix"]
	}
	return jsonString(sandboxArgs{Language: "bash", Command: cmds[b.choose(name, len(cmds))], TimeoutS: 30})
}

// toolResult is a JSON string of a successful result of the tool.
func (b *builder) toolResult(name string) string {
	switch name {
	case "web_search":
		hits := make([]searchHit, 3)
		for i := range hits {
			hits[i] = searchHit{
				Title:   strings.ToUpper(b.conv.topic[:1]) + b.conv.topic[1:] + " — " + pick(b.rng, []string{"overview", "discussion", "guide", "news", "analysis"}),
				URL:     b.url(),
				Snippet: "… " + b.conv.topic + " …",
			}
		}
		return jsonString(searchResult{Results: hits})
	case "fetch_url":
		return jsonString(fetchResult{
			Status:      200,
			ContentType: "text/html; charset=utf-8",
			Bytes:       2000 + b.rng.IntN(120000),
			Text:        "Page about " + b.conv.topic + ". [content truncated]",
		})
	case "vector_search":
		matches := make([]vectorMatch, 3)
		score := 0.92
		for i := range matches {
			score -= 0.01 + float64(b.rng.IntN(8))/100
			matches[i] = vectorMatch{ID: fmt.Sprintf("doc-%05d", b.rng.IntN(100000)), Score: math.Round(score*100) / 100}
		}
		return jsonString(vectorResult{Matches: matches})
	case "issue_refund":
		return jsonString(refundResult{RefundID: "re_" + b.token(24), Status: "succeeded"})
	case "merge_pull_request":
		return jsonString(mergeResult{Merged: true, SHA: fmt.Sprintf("%016x%016x%08x", b.rng.Uint64(), b.rng.Uint64(), b.rng.Uint32())})
	}
	res := sandboxResult{ExitCode: 0, Stdout: "ok  \t./...\t3.214s", DurationMS: 1500 + b.rng.IntN(6000)}
	if b.rng.IntN(3) == 0 {
		res.ExitCode = 1
		res.Stdout = "--- FAIL: TestCheckoutTimeout (5.01s)\n    checkout_test.go:88: context deadline exceeded\nFAIL"
	}
	return jsonString(res)
}

func (b *builder) url() string {
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, b.conv.topic)
	return fmt.Sprintf("https://%s/%s-%d", pick(b.rng, domains), slug, b.rng.IntN(1000))
}

func jsonString(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("demo: marshal tool content: %v", err)) // structs of strings and numbers always marshal
	}
	return string(out)
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// choose draws one of n options of a tool's arguments. In an evaluation
// run it draws one the run has not drawn for the tool since it drew them
// all: the harness's agents vary their searches and checks, so none runs
// into tally's repeat-loop rule (the same arguments five times) by chance.
// Either way it draws one number.
func (b *builder) choose(tool string, n int) int {
	if b.conv.trial == nil {
		return b.rng.IntN(n)
	}
	if b.drawn == nil {
		b.drawn = map[string][]bool{}
	}
	d := b.drawn[tool]
	if len(d) != n || !slices.Contains(d, false) {
		d = make([]bool, n)
		b.drawn[tool] = d
	}
	k := b.rng.IntN(n - count(d))
	for i := range d {
		if d[i] {
			continue
		}
		if k == 0 {
			d[i] = true
			return i
		}
		k--
	}
	panic("demo: choose found no option") // unreachable: k < the options left
}

// count is the number of true values.
func count(d []bool) int {
	n := 0
	for _, v := range d {
		if v {
			n++
		}
	}
	return n
}

func (b *builder) between(r [2]int) int { return r[0] + b.rng.IntN(r[1]-r[0]+1) }

// msBetween is a random duration between lo and hi milliseconds, in µs steps.
func (b *builder) msBetween(lo, hi int) time.Duration {
	return time.Duration(lo)*time.Millisecond + time.Duration(b.rng.Int64N(int64(hi-lo)*1000+1))*time.Microsecond
}

func (b *builder) traceID() trace.TraceID {
	var id trace.TraceID
	for !id.IsValid() {
		putUint64(id[:8], b.rng.Uint64())
		putUint64(id[8:], b.rng.Uint64())
	}
	return id
}

func (b *builder) spanID() trace.SpanID {
	var id trace.SpanID
	for !id.IsValid() {
		putUint64(id[:], b.rng.Uint64())
	}
	return id
}

func putUint64(dst []byte, v uint64) {
	for i := range 8 {
		dst[i] = byte(v >> (56 - 8*i))
	}
}

// callID is a tool call id as the model's provider would issue it.
func (b *builder) callID(m *model) string { return m.callIDPrefix + b.token(22) }

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func (b *builder) token(n int) string {
	out := make([]byte, n)
	for i := range out {
		out[i] = base62[b.rng.IntN(len(base62))]
	}
	return string(out)
}

func uuid(rng *rand.Rand) string {
	var u [16]byte
	putUint64(u[:8], rng.Uint64())
	putUint64(u[8:], rng.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// agentID is a stable id of an agent deployed in a service.
func agentID(service, name string) string {
	h := fnv.New64a()
	h.Write([]byte(service + "/" + name))
	return fmt.Sprintf("agent_%016x", h.Sum64())
}

func pad4(n int) string { return fmt.Sprintf("%04d", n) }

func errorTypeOf(s SpanSpec) string {
	for _, kv := range s.Attributes {
		if kv.Key == "error.type" {
			return kv.Value.AsString()
		}
	}
	return "error"
}

package recording

import (
	"bytes"
	"github.com/tallyhq/tally/replay"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/schema"
	"github.com/tallyhq/tally/support/canonical"
)

const testTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// base is 2025-03-01T10:00:00Z (unix 1740823200) in nanoseconds.
const base = uint64(1740823200) * 1e9

// tripRows are the rows ingest would store for the run in
// testdata/expected_fixture.json: an agent span, one chat inference and five
// tool calls (a search, a get_weather that timed out and its retry, a booking
// with a plain-text result, and a notify recorded without content).
func tripRows() ([]schema.Span, []schema.Content) {
	ms := uint64(time.Millisecond)
	span := func(id, parent, typ, name string, startMs, durNs uint64) schema.Span {
		start := base + startMs*ms
		return schema.Span{
			Project: "p1", TraceID: testTrace, SpanID: id, ParentSpanID: parent,
			Start: time.Unix(0, int64(start)).UTC().Truncate(time.Second), StartNs: start,
			EndNs: start + durNs, DurationNs: durNs, Name: name, SpanType: typ,
			Status: "unset", Service: "planner-svc", AgentName: "trip-planner", ConversationID: "conv-42",
		}
	}
	root := span("a000000000000001", "", schema.TypeAgent, "invoke_agent trip-planner", 0, 10_000*ms)
	root.TaskName = "plan_trip"

	chat := span("b000000000000001", "a000000000000001", schema.TypeInference, "chat gpt-4o", 100, 900*ms)
	chat.Operation, chat.Provider, chat.Model = "chat", "openai", "gpt-4o-2024-08-06"
	chat.InputTokens, chat.CacheReadTokens, chat.OutputTokens = 1200, 1024, 85
	chat.FinishReasons = []string{"tool_calls"}

	tool := func(id, name, callID string, startMs, durNs uint64, status string, attempt uint32) schema.Span {
		s := span(id, "a000000000000001", schema.TypeTool, "execute_tool "+name, startMs, durNs)
		s.Operation, s.ToolName, s.ToolCallID, s.Status, s.Attempt = "execute_tool", name, callID, status, attempt
		return s
	}
	search := tool("c000000000000001", "search", "call_1", 1000, 250*ms, "ok", 1)
	search.ArgsHash = "41694c00fa84c49e916c32d98e6ded15f55e3280582010ec74b64816492b9d19" // as ingest stores it
	weather1 := tool("c000000000000002", "get_weather", "call_2", 2000, 5000*ms, "error", 1)
	weather1.ErrorType, weather1.StatusMessage = "timeout", "upstream timed out after 5s"
	weather2 := tool("c000000000000003", "get_weather", "call_2", 7500, 320_500_000, "ok", 2) // 320.5 ms
	book := tool("c000000000000004", "book", "call_3", 8000, 1200*ms, "ok", 1)
	notify := tool("c000000000000005", "notify", "", 8000, 50*ms, "unset", 0) // same start as book: span id decides

	content := func(spanID, kind, key, value string) schema.Content {
		return schema.Content{Project: "p1", TraceID: testTrace, SpanID: spanID, Kind: kind, SourceKey: key, Value: value}
	}
	contents := []schema.Content{
		content("b000000000000001", schema.ContentOutputMessages, "gen_ai.output.messages",
			`[{"role":"assistant","parts":[{"type":"tool_call","name":"search","id":"call_1","arguments":{"q":"hotels in Lisbon","limit":10}}]}]`),
		content("c000000000000001", schema.ContentToolArguments, "gen_ai.tool.call.arguments", `{"q": "hotels in Lisbon", "limit": 10}`),
		content("c000000000000001", schema.ContentToolResult, "gen_ai.tool.call.result",
			`{"hits":[{"name":"Casa Azul","id":"h1"},{"name":"Hotel Sol","id":"h2"}]}`),
		content("c000000000000002", schema.ContentToolArguments, "input.value", `{"city":"Lisbon"}`),
		content("c000000000000003", schema.ContentToolArguments, "input.value", `{"city": "Lisbon"}`),
		content("c000000000000003", schema.ContentToolResult, "output.value", `{"temp_c":18.5,"sky":"clear"}`),
		content("c000000000000004", schema.ContentToolArguments, "gen_ai.tool.call.arguments", `{"nights":3,"hotel_id":"h1"}`),
		content("c000000000000004", schema.ContentToolResult, "gen_ai.tool.call.result", `confirmed <ref ABC123> & emailed`),
	}
	// search is delivered twice (an exporter retry): it must appear once.
	return []schema.Span{root, chat, search, weather1, weather2, book, notify, search}, contents
}

func TestBuildMatchesHandWrittenFixture(t *testing.T) {
	want, err := os.ReadFile("../testdata/expected_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	spans, contents := tripRows()
	f, err := Build(replay.RunInfo{SourceVersion: "v0.1.0-test"}, spans, contents, WithInferences())
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	got, err := f.MarshalDeterministic()
	if err != nil {
		t.Fatalf("MarshalDeterministic: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("fixture differs from testdata/expected_fixture.json\n--- got\n%s", got)
	}
}

func TestBuildDeterministic(t *testing.T) {
	spans, contents := tripRows()
	first, err := Build(replay.RunInfo{SourceVersion: "v"}, spans, contents, WithInferences())
	if err != nil {
		t.Fatal(err)
	}
	a, err := first.MarshalDeterministic()
	if err != nil {
		t.Fatal(err)
	}
	b, err := first.MarshalDeterministic()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("marshalling the same fixture twice gave different bytes")
	}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 20; i++ {
		s2 := append([]schema.Span(nil), spans...)
		c2 := append([]schema.Content(nil), contents...)
		rng.Shuffle(len(s2), func(i, j int) { s2[i], s2[j] = s2[j], s2[i] })
		rng.Shuffle(len(c2), func(i, j int) { c2[i], c2[j] = c2[j], c2[i] })
		f, err := Build(replay.RunInfo{SourceVersion: "v"}, s2, c2, WithInferences())
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.MarshalDeterministic()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) {
			t.Fatalf("shuffle %d: rows in another order gave different bytes:\n%s", i, got)
		}
	}
}

func TestBuildArgumentKeyOrderDoesNotChangeHash(t *testing.T) {
	// Two runs, identical but for the key order and spacing of the arguments.
	// Neither span carries an ingest hash, so Build computes it.
	// Expected: printf '%s' '{"limit":5,"q":"cats"}' | sha256sum
	const want = "86df850ed8ab0497fdc536b5eecfb9255a91285b616129eb92aa5867b36c4be0"
	for _, args := range []string{`{"q":"cats","limit":5}`, `{ "limit": 5, "q": "cats" }`} {
		s := schema.Span{TraceID: testTrace, SpanID: "c1", SpanType: schema.TypeTool, ToolName: "search", StartNs: base, Status: "ok"}
		c := []schema.Content{
			{TraceID: testTrace, SpanID: "c1", Kind: schema.ContentToolArguments, Value: args},
			{TraceID: testTrace, SpanID: "c1", Kind: schema.ContentToolResult, Value: `[]`},
		}
		f, err := Build(replay.RunInfo{}, []schema.Span{s}, c)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Calls[0].ArgsHash; got != want {
			t.Errorf("args %s: hash %s, want %s", args, got, want)
		}
		if got := string(f.Calls[0].Arguments); got != `{"limit":5,"q":"cats"}` {
			t.Errorf("args %s: canonical arguments %s", args, got)
		}
		if got := canonical.Hash(args); got != want {
			t.Errorf("canonical.Hash(%s) = %s, want %s", args, got, want)
		}
	}
}

func TestBuildWithoutInferencesAndRunDefaults(t *testing.T) {
	spans, contents := tripRows()
	f, err := Build(replay.RunInfo{TraceID: testTrace, Agent: "given-agent"}, spans, contents)
	if err != nil {
		t.Fatal(err)
	}
	if f.Inferences != nil {
		t.Errorf("inferences exported without WithInferences: %+v", f.Inferences)
	}
	if f.Run.Agent != "given-agent" || f.Run.Task != "plan_trip" || f.Run.StartedAt != "2025-03-01T10:00:00Z" {
		t.Errorf("run info = %+v", f.Run)
	}
	b, err := f.MarshalDeterministic()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"inferences"`) {
		t.Error(`"inferences" key present without WithInferences`)
	}
}

func TestBuildTaskFallsBackToRootName(t *testing.T) {
	spans := []schema.Span{
		{TraceID: testTrace, SpanID: "r", Name: "handle_ticket", SpanType: schema.TypeAgent, StartNs: base},
		{TraceID: testTrace, SpanID: "t", ParentSpanID: "r", SpanType: schema.TypeTool, ToolName: "x", StartNs: base + 1, Status: "ok"},
	}
	f, err := Build(replay.RunInfo{}, spans, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Run.Task != "handle_ticket" {
		t.Errorf("task = %q, want the root span's name", f.Run.Task)
	}
	// No content at all: both parts missing, listed in the summary.
	if got := strings.Join(f.Calls[0].Missing, ","); got != "arguments,result" {
		t.Errorf("missing = %q", got)
	}
	if len(f.Missing.Arguments) != 1 || f.Missing.Arguments[0] != 1 || len(f.Missing.Results) != 1 {
		t.Errorf("summary = %+v", f.Missing)
	}
}

func TestBuildRejectsMixedTraces(t *testing.T) {
	spans := []schema.Span{
		{TraceID: testTrace, SpanID: "a", SpanType: schema.TypeTool, ToolName: "x"},
		{TraceID: "ffffffffffffffffffffffffffffffff", SpanID: "b", SpanType: schema.TypeTool, ToolName: "x", StartNs: 1},
	}
	if _, err := Build(replay.RunInfo{}, spans, nil); err == nil {
		t.Fatal("Build accepted spans of two traces")
	}
}

func TestBuildTruncatedAndRedacted(t *testing.T) {
	spans := []schema.Span{{TraceID: testTrace, SpanID: "c1", SpanType: schema.TypeTool, ToolName: "fetch", StartNs: base, Status: "ok"}}
	contents := []schema.Content{
		{TraceID: testTrace, SpanID: "c1", Kind: schema.ContentToolArguments, SourceKey: "gen_ai.tool.call.arguments", Value: `{"token":"s3cret","url":"https://x"}`},
		{TraceID: testTrace, SpanID: "c1", Kind: schema.ContentToolResult, SourceKey: "gen_ai.tool.call.result", Value: `{"body":"abc…[truncated by tally]`, Truncated: 1},
	}
	redact := func(key string, v []byte) []byte {
		if key == "gen_ai.tool.call.arguments" {
			return bytes.ReplaceAll(v, []byte("s3cret"), []byte("[REDACTED]"))
		}
		return v
	}
	f, err := Build(replay.RunInfo{}, spans, contents, WithRedact(redact))
	if err != nil {
		t.Fatal(err)
	}
	c := f.Calls[0]
	if got := string(c.Arguments); got != `{"token":"[REDACTED]","url":"https://x"}` {
		t.Errorf("arguments = %s", got)
	}
	// The hash is of the arguments as recorded, so the agent's real call matches.
	if want := canonical.Hash(`{"token":"s3cret","url":"https://x"}`); c.ArgsHash != want {
		t.Errorf("args hash %s, want hash of unredacted %s", c.ArgsHash, want)
	}
	if c.Result != nil || c.ResultText != `{"body":"abc…[truncated by tally]` {
		t.Errorf("truncated result: json %s text %q", c.Result, c.ResultText)
	}
	if len(c.Truncated) != 1 || c.Truncated[0] != replay.PartResult || len(c.Missing) != 0 {
		t.Errorf("truncated = %v, missing = %v", c.Truncated, c.Missing)
	}
}

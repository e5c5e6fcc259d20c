package api_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tallyhq/tally/api"
	"github.com/tallyhq/tally/internal/tallytest"
	"github.com/tallyhq/tally/query"
	"github.com/tallyhq/tally/transcript"
)

// TestSpanContentChat sends three conformance scenarios, each in another
// message dialect as its instrumentation's source writes it, to a real
// tally, and reads each call's messages back as chat turns.
func TestSpanContentChat(t *testing.T) {
	tally := tallytest.Start(t)
	text := func(role, s string) transcript.Message {
		return transcript.Message{Role: role, Parts: []transcript.Part{{Type: transcript.PartText, Text: s}}}
	}
	for _, c := range []struct {
		scenario, span string
		want           transcript.Chat
	}{
		// OpenInference (Python, Anthropic): flattened llm.input_messages.N.*
		// and llm.output_messages.N.* span attributes.
		{"openinference-py-anthropic-cache", "llm", transcript.Chat{
			Input:       []transcript.Message{text("system", "You are a support agent..."), text("user", "Where is my order?")},
			Output:      []transcript.Message{text("assistant", "Your order shipped yesterday...")},
			InputSource: "llm.input_messages.*", OutputSource: "llm.output_messages.*"}},
		// Vercel AI SDK 5: ai.prompt {"prompt"} and ai.response.text, stored
		// as captured content.
		{"vercel-ai-v5-anthropic-generate-cache", "root", transcript.Chat{
			Input: []transcript.Message{text("user", "Where is my order #4411?")},
			Output: []transcript.Message{{Role: "assistant", FinishReason: "stop",
				Parts: []transcript.Part{{Type: transcript.PartText, Text: "Your order #4411 shipped yesterday and arrives Thursday."}}}},
			InputSource: "ai.prompt", OutputSource: "ai.response.text"}},
		// Pydantic AI: the OpenTelemetry parts schema.
		{"pydantic-ai-v2-anthropic-invoke-agent-cache", "chat2", transcript.Chat{
			Input: []transcript.Message{text("user", "Where is order 4411?")},
			Output: []transcript.Message{{Role: "assistant", FinishReason: "stop",
				Parts: []transcript.Part{{Type: transcript.PartText, Text: "..."}}}},
			InputSource: "gen_ai.input.messages", OutputSource: "gen_ai.output.messages"}},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			sc := tallytest.SendScenario(t, tally.URL, c.scenario)
			code, _, body := get(t, tally.URL+"/api/v1/runs/"+sc.TraceID()+"/spans/"+sc.SpanID(c.span), "")
			if code != http.StatusOK {
				t.Fatalf("span content: %d %s", code, body)
			}
			var got api.SpanContent
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Chat == nil || !reflect.DeepEqual(*got.Chat, c.want) {
				t.Errorf("chat\n got %+v\nwant %+v", got.Chat, c.want)
			}
		})
	}
	// A tool span carries arguments and a result, no messages: no chat.
	sc := tallytest.SendScenario(t, tally.URL, "pydantic-ai-v2-anthropic-invoke-agent-cache")
	code, _, body := get(t, tally.URL+"/api/v1/runs/"+sc.TraceID()+"/spans/"+sc.SpanID("tool"), "")
	var got api.SpanContent
	if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Chat != nil {
		t.Errorf("tool span: %d %s, want no chat", code, body)
	}
	// Issue #41: a span or run tally lacks answered 200 with no content.
	for _, path := range []string{
		"/api/v1/runs/" + sc.TraceID() + "/spans/00000000000000ff",
		"/api/v1/runs/0123456789abcdef0123456789abcdef/spans/" + sc.SpanID("tool"),
	} {
		if code, _, body := get(t, tally.URL+path, ""); code != http.StatusNotFound || !strings.Contains(string(body), "not found") {
			t.Errorf("GET %s: %d %s, want 404", path, code, body)
		}
	}
}

// TestConversationTranscript sends two runs of one conversation, each
// capturing its messages, and reads the conversation back as chat: per run
// the user's question (the last user message of its first call) and its
// answer (its last call's output), oldest run first.
func TestConversationTranscript(t *testing.T) {
	tally := tallytest.Start(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	first := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-t", Base: base,
		Question: "Why is my export failing?", Answer: "The exporter times out; raise its timeout."})
	second := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-t", Base: base.Add(time.Minute),
		Question: "To what?", Answer: "30 seconds."})
	// A third run without captured messages has a turn with none.
	third := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-t", Base: base.Add(2 * time.Minute)})

	code, _, body := get(t, tally.URL+"/api/v1/conversations/conv-t/transcript", "")
	if code != http.StatusOK {
		t.Fatalf("transcript: %d %s", code, body)
	}
	var tr query.Transcript
	if err := json.Unmarshal(body, &tr); err != nil {
		t.Fatal(err)
	}
	turn := func(q, a string) []transcript.Message {
		return []transcript.Message{
			{Role: "user", Parts: []transcript.Part{{Type: transcript.PartText, Text: q}}},
			{Role: "assistant", FinishReason: "stop", Parts: []transcript.Part{{Type: transcript.PartText, Text: a}}},
		}
	}
	want := []struct {
		id   string
		msgs []transcript.Message
	}{
		{first, turn("Why is my export failing?", "The exporter times out; raise its timeout.")},
		{second, turn("To what?", "30 seconds.")},
		{third, []transcript.Message{}},
	}
	if len(tr.Turns) != len(want) || tr.Truncated {
		t.Fatalf("%d turns (truncated %v), want %d: %s", len(tr.Turns), tr.Truncated, len(want), body)
	}
	for i, w := range want {
		if tr.Turns[i].TraceID != w.id || tr.Turns[i].Task != "triage_ticket" || !reflect.DeepEqual(tr.Turns[i].Messages, w.msgs) {
			t.Errorf("turn %d: %+v, want run %s with %+v", i, tr.Turns[i], w.id, w.msgs)
		}
	}
	if code, _, body := get(t, tally.URL+"/api/v1/conversations/nope/transcript", ""); code != http.StatusNotFound {
		t.Errorf("unknown conversation: %d %s", code, body)
	}
}

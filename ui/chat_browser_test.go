package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tallyhq/tally/internal/tallytest"
)

// TestConversationsAndChat: /conversations lists a conversation of two
// runs, its page shows the transcript (each run's question and answer),
// and a model call's detail shows its messages as chat turns with the tool
// call, the raw values folded away.
func TestConversationsAndChat(t *testing.T) {
	tally := startTally(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond).UTC()
	first := tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-chat", Base: base,
		Question: "Why is my export failing?", Answer: "The exporter times out; raise its timeout."})
	tallytest.SendAgentRun(t, tally.URL, tallytest.AgentRun{Conversation: "conv-chat", Base: base.Add(time.Minute),
		Question: "To what?", Answer: "30 seconds."})
	ctx := newBrowser(t)

	open(t, ctx, tally.URL+"/conversations")
	waitFor(t, ctx, `!!document.querySelector('#conv-list')`)
	row := run(t, ctx, "conversation row", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#conv-list tr[data-conversation-id="conv-chat"] td')].map(td => td.textContent)`))
	if len(row) < 2 || row[0] != "conv-chat" || row[1] != "2" {
		t.Fatalf("conversations list row %q, want conv-chat with 2 runs", row)
	}
	run(t, ctx, "open conversation", chromedp.Click(chromedp.CSS(`#conv-list a[href="/conversations/conv-chat"]`)))
	waitFor(t, ctx, `document.querySelectorAll('#conv-transcript .turn').length === 2`)
	type msg struct {
		Role string `json:"role"`
		Text string `json:"text"`
	}
	turns := run(t, ctx, "transcript", chromedp.Evaluate[[][]msg](`[...document.querySelectorAll('#conv-transcript .turn')].map(s =>
		[...s.querySelectorAll('.msg')].map(m => ({role: m.dataset.role, text: m.querySelector('.part-text') ? m.querySelector('.part-text').textContent : ''})))`))
	want := [][]msg{
		{{"user", "Why is my export failing?"}, {"assistant", "The exporter times out; raise its timeout."}},
		{{"user", "To what?"}, {"assistant", "30 seconds."}},
	}
	if len(turns) != 2 || len(turns[0]) != 2 || turns[0][0] != want[0][0] || turns[0][1] != want[0][1] ||
		len(turns[1]) != 2 || turns[1][0] != want[1][0] || turns[1][1] != want[1][1] {
		t.Errorf("transcript %+v, want %+v", turns, want)
	}

	// The first run's claude call: system, user, and a tool call answered.
	open(t, ctx, tally.URL+"/runs/"+first)
	run(t, ctx, "waterfall drawn", chromedp.WaitReady(chromedp.CSS("body[data-rendered]")))
	run(t, ctx, "select claude", chromedp.Click(chromedp.CSS(`#wf-rows .wf-row[data-type="inference"] .name`)))
	waitFor(t, ctx, `!!document.querySelector('#detail-content [data-chat]')`)
	roles := run(t, ctx, "chat roles", chromedp.Evaluate[[]string](`[...document.querySelectorAll('#detail-content [data-chat] .msg')].map(m => m.dataset.role)`))
	if strings.Join(roles, ",") != "system,user,assistant" {
		t.Errorf("chat roles %v, want system, user, assistant", roles)
	}
	text := run(t, ctx, "chat", chromedp.Text(chromedp.CSS("#detail-content [data-chat]")))
	// innerText follows the stylesheet, which writes roles in capitals.
	for _, w := range []string{"you triage support tickets.", "why is my export failing?", "→ web_search", "call_1", `"q"`, "assistant · tool_call"} {
		if !strings.Contains(strings.ToLower(text), w) {
			t.Errorf("chat lacks %q:\n%s", w, text)
		}
	}
	if n := run(t, ctx, "raw values", chromedp.Evaluate[int](`document.querySelectorAll('#detail-content details.raw-content .content-item').length`)); n != 3 {
		t.Errorf("%d raw values folded under the chat, want 3 (system instructions, input and output messages)", n)
	}
}

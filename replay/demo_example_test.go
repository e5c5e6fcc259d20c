package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tallyhq/tally/replay"
)

// toolRequest is one tool call a model asked for.
type toolRequest struct {
	Tool string
	Args map[string]any
}

// scriptedModel stands in for the LLM in a test: it asks for the tool calls
// the production model asked for, one per turn. (A test can also replay the
// model from a fixture exported with --inferences, or use any fake.)
type scriptedModel struct {
	requests []toolRequest
	next     int
}

// NextToolCall returns the model's next tool call; ok is false when the
// model is done. The previous call's answer is what the model saw.
func (m *scriptedModel) NextToolCall(previous json.RawMessage, previousErr error) (req toolRequest, ok bool) {
	if m.next == len(m.requests) {
		return toolRequest{}, false
	}
	m.next++
	return m.requests[m.next-1], true
}

// demoTools is what the research step needs from its tools: in production a
// client of the real tools, in tests a *replay.Player.
type demoTools interface {
	Call(ctx context.Context, tool string, args any) (json.RawMessage, error)
}

// researchStep is the agent code under test: it runs the tool calls the model
// asks for and hands each result, or the tool's error, back to the model,
// which decides what to do next (here: retry a rate-limited search).
func researchStep(ctx context.Context, model *scriptedModel, tools demoTools) error {
	var (
		result json.RawMessage
		err    error
	)
	for {
		req, ok := model.NextToolCall(result, err)
		if !ok {
			return nil
		}
		result, err = tools.Call(ctx, req.Tool, req.Args)
		var failed *replay.RecordedError
		switch {
		case errors.As(err, &failed):
			fmt.Printf("%s failed: %s\n", req.Tool, failed.Message)
		case err != nil:
			return err // not in the fixture: the agent changed behaviour
		default:
			fmt.Printf("%s: %s\n", req.Tool, summarize(req.Tool, result))
		}
	}
}

// summarize shortens a tool result for the example's output.
func summarize(tool string, result json.RawMessage) string {
	var r struct {
		Results []json.RawMessage `json:"results"`
		Status  int               `json:"status"`
		Bytes   int               `json:"bytes"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return err.Error()
	}
	if tool == "web_search" {
		return fmt.Sprintf("%d results", len(r.Results))
	}
	return fmt.Sprintf("HTTP %d, %d bytes", r.Status, r.Bytes)
}

// Example_demoRun replays a run recorded by `tally demo` offline. The fixture
// testdata/demo_fixture.json holds demo run c8e736dea0307c62e3d0cce802b84730,
// which `make run` loads too: `tally replay export
// c8e736dea0307c62e3d0cce802b84730 -o demo.fixture.json` exports the same
// calls, arguments and results (with today's timestamps). Regenerate the file
// with `go test ./query -run TestRegenerateDemoFixture -update`. The
// rate-limited web_search and its retry have the same arguments: the player
// answers them in recorded order, the error first.
func Example_demoRun() {
	fixture, err := replay.Load("testdata/demo_fixture.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	const topic = "cannot reset password after SSO migration"
	model := &scriptedModel{requests: []toolRequest{
		{"web_search", map[string]any{"query": topic + " official documentation", "max_results": 5}},
		{"web_search", map[string]any{"query": topic, "max_results": 5}},
		{"fetch_url", map[string]any{"url": "https://en.wikipedia.org/cannot-reset-password-after-sso-migration-376", "timeout_s": 3}},
		{"web_search", map[string]any{"query": topic, "max_results": 5}}, // the retry
		{"fetch_url", map[string]any{"url": "https://github.com/cannot-reset-password-after-sso-migration-643", "timeout_s": 3}},
	}}
	player := replay.NewPlayer(fixture, replay.Strict())

	if err := researchStep(context.Background(), model, player); err != nil {
		fmt.Println("agent failed:", err)
	}
	if err := player.Report().Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replay clean")
	// Output:
	// web_search: 3 results
	// web_search failed: web_search: rate_limited after 86 ms
	// fetch_url: HTTP 200, 11792 bytes
	// web_search: 3 results
	// fetch_url failed: fetch_url: timeout after 3065 ms
	// replay clean
}

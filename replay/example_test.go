package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tallyhq/tally/replay"
)

// toolCaller is what the example agent needs from its tools: in production a
// client of the real tools, in tests a *replay.Player.
type toolCaller interface {
	Call(ctx context.Context, tool string, args any) (json.RawMessage, error)
}

// planTrip is a small agent loop: search hotels, fetch the weather (retrying
// once on error), book the first hit and notify the user.
func planTrip(ctx context.Context, tools toolCaller) error {
	res, err := tools.Call(ctx, "search", map[string]any{"q": "hotels in Lisbon", "limit": 10})
	if err != nil {
		return err
	}
	var hits struct {
		Hits []struct{ ID, Name string }
	}
	if err := json.Unmarshal(res, &hits); err != nil {
		return err
	}
	fmt.Println("search:", hits.Hits[0].Name)

	for attempt := 1; attempt <= 2; attempt++ {
		weather, err := tools.Call(ctx, "get_weather", `{"city":"Lisbon"}`)
		var recorded *replay.RecordedError
		if errors.As(err, &recorded) {
			fmt.Printf("get_weather attempt %d: %s: %s\n", attempt, recorded.Type, recorded.Message)
			continue
		}
		if err != nil {
			return err
		}
		fmt.Printf("get_weather attempt %d: %s\n", attempt, weather)
		break
	}

	booking, err := tools.Call(ctx, "book", map[string]any{"hotel_id": hits.Hits[0].ID, "nights": 3})
	if err != nil {
		return err
	}
	fmt.Println("book:", string(booking))

	// notify was recorded with content capture off: it matches any
	// arguments, but there is no result to answer with.
	if _, err := tools.Call(ctx, "notify", map[string]string{"to": "user"}); errors.Is(err, replay.ErrResultNotCaptured) {
		fmt.Println("notify: result not captured")
	} else if err != nil {
		return err
	}
	return nil
}

// Example replays a recorded run for an agent's tests, with no server: load
// the fixture exported by `tally replay export`, hand a Player to the agent in
// place of its tools, then check that every recorded call was made and
// nothing else was called.
func Example() {
	fixture, err := replay.Load("testdata/expected_fixture.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	player := replay.NewPlayer(fixture, replay.Strict())

	if err := planTrip(context.Background(), player); err != nil {
		fmt.Println("agent failed:", err)
	}
	if err := player.Report().Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("replay clean")
	// Output:
	// search: Casa Azul
	// get_weather attempt 1: timeout: upstream timed out after 5s
	// get_weather attempt 2: {"sky":"clear","temp_c":18.5}
	// book: "confirmed <ref ABC123> & emailed"
	// notify: result not captured
	// replay clean
}

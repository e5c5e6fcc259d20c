package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// tripCalls is a call sequence against testdata/expected_fixture.json that
// exercises every kind of answer.
var tripCalls = []struct{ tool, args string }{
	{"search", `{"limit":10,"q":"hotels in Lisbon"}`},
	{"get_weather", `{"city":"Lisbon"}`},  // recorded error
	{"get_weather", `{"city": "Lisbon"}`}, // recorded result
	{"get_weather", `{"city":"Lisbon"}`},  // used up: unexpected
	{"search", `{"q":"hotels in Porto","limit":10}`},
	{"book", `{"hotel_id":"h1","nights":3}`}, // text result
	{"notify", `{}`},                         // result not captured
}

type httpAnswer struct {
	status int
	body   CallResponse
}

// answerOf is what the server must answer for a player's outcome.
func answerOf(t *testing.T, result json.RawMessage, err error) httpAnswer {
	t.Helper()
	var (
		rec *RecordedError
		uce *UnexpectedCallError
	)
	switch {
	case err == nil:
		return httpAnswer{200, CallResponse{Result: result}}
	case errors.As(err, &rec):
		return httpAnswer{200, CallResponse{Result: rec.Result, Error: &CallError{Type: rec.Type, Message: rec.Message}}}
	case errors.As(err, &uce):
		return httpAnswer{404, CallResponse{Error: &CallError{Type: "unexpected_call", Message: err.Error()}}}
	case errors.Is(err, ErrNotRecorded):
		return httpAnswer{404, CallResponse{Error: &CallError{Type: "not_recorded", Message: err.Error()}}}
	case errors.Is(err, ErrResultNotCaptured):
		return httpAnswer{409, CallResponse{Error: &CallError{Type: "result_not_captured", Message: err.Error()}}}
	}
	t.Fatalf("unexpected player error %v", err)
	return httpAnswer{}
}

func post(t *testing.T, url string, body any) httpAnswer {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"/call", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out CallResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	return httpAnswer{resp.StatusCode, out}
}

func sameAnswer(a, b httpAnswer) bool {
	ja, _ := json.Marshal(a.body)
	jb, _ := json.Marshal(b.body)
	return a.status == b.status && bytes.Equal(ja, jb)
}

func TestServerAnswersLikeThePlayer(t *testing.T) {
	for _, strict := range []bool{true, false} {
		f, err := Load("testdata/expected_fixture.json")
		if err != nil {
			t.Fatal(err)
		}
		var opts []Option
		if strict {
			opts = append(opts, Strict())
		}
		direct := NewPlayer(f, opts...)
		served := NewPlayer(f, opts...)
		srv := httptest.NewServer(NewServer(served))

		for i, c := range tripCalls {
			result, err := direct.Call(context.Background(), c.tool, c.args)
			want := answerOf(t, result, err)
			// Half the calls send the arguments as a JSON object, half as a
			// JSON string holding the JSON text, as OTel attributes carry it.
			var args any = json.RawMessage(c.args)
			if i%2 == 1 {
				args = c.args
			}
			got := post(t, srv.URL, map[string]any{"tool": c.tool, "arguments": args})
			if !sameAnswer(got, want) {
				t.Errorf("strict=%v call %d %s %s:\n got %d %+v\nwant %d %+v", strict, i, c.tool, c.args, got.status, got.body, want.status, want.body)
			}
		}

		resp, err := http.Get(srv.URL + "/report")
		if err != nil {
			t.Fatal(err)
		}
		gotReport, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wantReport, _ := json.Marshal(direct.Report())
		var g, w any
		_ = json.Unmarshal(gotReport, &g)
		_ = json.Unmarshal(wantReport, &w)
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if resp.StatusCode != 200 || !bytes.Equal(gj, wj) {
			t.Errorf("strict=%v report:\n got %d %s\nwant %s", strict, resp.StatusCode, gotReport, wantReport)
		}
		srv.Close()
	}
}

func TestServerAnswersAndReportByHand(t *testing.T) {
	f, err := Load("testdata/expected_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(NewPlayer(f, Strict())))
	defer srv.Close()

	got := post(t, srv.URL, map[string]any{"tool": "get_weather", "arguments": map[string]string{"city": "Lisbon"}})
	if got.status != 200 || got.body.Error == nil || got.body.Error.Type != "timeout" || got.body.Error.Message != "upstream timed out after 5s" {
		t.Errorf("recorded error answer = %d %+v", got.status, got.body)
	}
	got = post(t, srv.URL, map[string]any{"tool": "search", "arguments": map[string]any{"q": "hotels in Lisbon", "limit": 5}})
	want := `unexpected call search(args {"limit":5,"q":"hotels in Lisbon"}): closest recorded call #1 search differs at "limit": recorded 10, got 5`
	if got.status != 404 || got.body.Error == nil || got.body.Error.Type != "unexpected_call" || got.body.Error.Message != want {
		t.Errorf("unexpected call answer = %d %+v", got.status, got.body.Error)
	}

	resp, err := http.Get(srv.URL + "/report")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r Report
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	// 5 recorded calls, #2 made: #1, #3, #4, #5 unmet; the search was unexpected.
	var seqs []int
	for _, u := range r.Unmet {
		seqs = append(seqs, u.Seq)
	}
	if len(seqs) != 4 || seqs[0] != 1 || seqs[1] != 3 || seqs[2] != 4 || seqs[3] != 5 {
		t.Errorf("unmet seqs = %v, want [1 3 4 5]", seqs)
	}
	if len(r.Unexpected) != 1 || r.Unexpected[0].Message != want {
		t.Errorf("unexpected = %+v", r.Unexpected)
	}
}

func TestServerSelectsFixtureByTrace(t *testing.T) {
	a := &Fixture{Format: FormatV1, Run: RunInfo{TraceID: "aaaa"}, Calls: []Call{{Seq: 1, Tool: "t", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`"from a"`)}}}
	b := &Fixture{Format: FormatV1, Run: RunInfo{TraceID: "bbbb"}, Calls: []Call{{Seq: 1, Tool: "t", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`"from b"`)}}}
	srv := httptest.NewServer(NewServer(NewPlayer(a, Strict()), NewPlayer(b, Strict())))
	defer srv.Close()

	tests := []struct {
		name       string
		body       map[string]any
		wantStatus int
		wantResult string
		wantType   string
	}{
		{"selects b", map[string]any{"trace_id": "bbbb", "tool": "t", "arguments": map[string]any{}}, 200, `"from b"`, ""},
		{"selects a", map[string]any{"trace_id": "aaaa", "tool": "t", "arguments": map[string]any{}}, 200, `"from a"`, ""},
		{"trace required with two fixtures", map[string]any{"tool": "t", "arguments": map[string]any{}}, 400, "", "bad_request"},
		{"unknown trace", map[string]any{"trace_id": "cccc", "tool": "t"}, 404, "", "unknown_trace"},
		{"tool required", map[string]any{"trace_id": "aaaa"}, 400, "", "bad_request"},
		{"unknown field", map[string]any{"trace_id": "aaaa", "tool": "t", "args": 1}, 400, "", "bad_request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := post(t, srv.URL, tc.body)
			if got.status != tc.wantStatus || string(got.body.Result) != tc.wantResult {
				t.Errorf("got %d %s, want %d %s", got.status, got.body.Result, tc.wantStatus, tc.wantResult)
			}
			if tc.wantType != "" && (got.body.Error == nil || got.body.Error.Type != tc.wantType) {
				t.Errorf("error = %+v, want type %s", got.body.Error, tc.wantType)
			}
		})
	}

	resp, err := http.Get(srv.URL + "/call")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /call = %d, want 405", resp.StatusCode)
	}
}

// TestServerRefusesTrailingData: a /call body is exactly one JSON object;
// anything after it is a 400, not silently ignored.
func TestServerRefusesTrailingData(t *testing.T) {
	f := &Fixture{Format: FormatV1, Run: RunInfo{TraceID: "aaaa"}, Calls: []Call{{Seq: 1, Tool: "t", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`"ok"`)}}}
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"one object", `{"tool":"t","arguments":{}}`, http.StatusOK},
		{"trailing whitespace", "{\"tool\":\"t\",\"arguments\":{}}\n \t", http.StatusOK},
		{"trailing garbage", `{"tool":"t","arguments":{}} garbage`, http.StatusBadRequest},
		{"second object", `{"tool":"t","arguments":{}}{"tool":"t"}`, http.StatusBadRequest},
		{"trailing bracket", `{"tool":"t","arguments":{}}]`, http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(NewServer(NewPlayer(f, Strict())))
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/call", "application/json", bytes.NewReader([]byte(c.body)))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("POST /call %q: %d %s, want %d", c.body, resp.StatusCode, b, c.want)
			}
		})
	}
}

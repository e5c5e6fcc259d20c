package replay

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"testing"
)

// testTrace is the trace id of testdata/expected_fixture.json.
const testTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// searchFixture records three calls: two searches and a fetch with a
// plain-text result.
func searchFixture() *Fixture {
	return &Fixture{
		Format: FormatV1,
		Run:    RunInfo{TraceID: testTrace},
		Calls: []Call{
			{Seq: 1, SpanID: "s1", Tool: "search", Arguments: json.RawMessage(`{"q":"dogs","limit":10}`), Result: json.RawMessage(`{"n": 1}`), Status: "ok"},
			{Seq: 2, SpanID: "s2", Tool: "fetch", Arguments: json.RawMessage(`{"url":"https://a"}`), ResultText: "page A", Status: "ok"},
			{Seq: 3, SpanID: "s3", Tool: "search", Arguments: json.RawMessage(`{"q":"cats","limit":10}`), Result: json.RawMessage(`{"n":3}`), Status: "ok"},
		},
	}
}

func TestPlayerAnswersRecordedResults(t *testing.T) {
	p := NewPlayer(searchFixture())
	ctx := context.Background()
	type args struct {
		Limit int    `json:"limit"`
		Q     string `json:"q"`
	}
	tests := []struct {
		name string
		tool string
		args any
		want string
	}{
		{"JSON string, other key order", "search", `{"limit": 10, "q": "dogs"}`, `{"n":1}`},
		{"Go struct", "search", args{Limit: 10, Q: "cats"}, `{"n":3}`},
		{"text result comes back as a JSON string", "fetch", []byte(`{"url":"https://a"}`), `"page A"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.Call(ctx, tc.tool, tc.args)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("result %s, want %s", got, tc.want)
			}
		})
	}
	if err := p.Report().Err(); err != nil {
		t.Errorf("report after every call made: %v", err)
	}
}

func TestPlayerRepeatedCallsInRecordedOrder(t *testing.T) {
	f, err := Load("testdata/expected_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlayer(f, Strict())
	ctx := context.Background()
	// get_weather {"city":"Lisbon"} was recorded twice: #2 timed out, #3 answered.
	_, err = p.Call(ctx, "get_weather", map[string]string{"city": "Lisbon"})
	var rec *RecordedError
	if !errors.As(err, &rec) {
		t.Fatalf("first call: err = %v, want a *RecordedError", err)
	}
	if rec.Seq != 2 || rec.Type != "timeout" || rec.Message != "upstream timed out after 5s" {
		t.Errorf("recorded error = %+v", rec)
	}
	if want := "replay: recorded error from call #2 get_weather: timeout: upstream timed out after 5s"; rec.Error() != want {
		t.Errorf("Error() = %q, want %q", rec.Error(), want)
	}
	got, err := p.Call(ctx, "get_weather", json.RawMessage(`{"city":"Lisbon"}`))
	if err != nil || string(got) != `{"sky":"clear","temp_c":18.5}` {
		t.Errorf("second call = %s, %v", got, err)
	}
	_, err = p.Call(ctx, "get_weather", `{"city":"Lisbon"}`)
	var uce *UnexpectedCallError
	if !errors.As(err, &uce) {
		t.Fatalf("third call: err = %v, want *UnexpectedCallError", err)
	}
	want := `unexpected call get_weather(args {"city":"Lisbon"}): closest recorded call #2 get_weather has the same arguments but its 2 recorded answer(s) were already used`
	if err.Error() != want {
		t.Errorf("third call:\n got %s\nwant %s", err, want)
	}
}

func TestStrictDiffMessages(t *testing.T) {
	tests := []struct {
		name    string
		fixture *Fixture
		before  []string // calls made first, as tool + " " + args
		tool    string
		args    any
		want    string
	}{
		{
			name: "one key differs: closest of the same tool",
			tool: "search", args: `{"q":"cats","limit":5}`,
			// #1 differs at limit and q (2 keys), #3 only at limit (1 key).
			want: `unexpected call search(args {"q":"cats","limit":5}): closest recorded call #3 search differs at "limit": recorded 10, got 5`,
		},
		{
			name: "several keys differ, absent keys shown",
			tool: "search", args: `{"q":"birds","page":2}`,
			// #1 and #3 both differ at limit, page and q: the earlier wins.
			want: `unexpected call search(args {"q":"birds","page":2}): closest recorded call #1 search differs at "limit": recorded 10, got (absent); "page": recorded (absent), got 2; "q": recorded "dogs", got "birds"`,
		},
		{
			name: "unknown tool: closest of any tool",
			tool: "serach", args: map[string]any{"q": "cats", "limit": 10},
			want: `unexpected call serach(args {"limit":10,"q":"cats"}): no recorded call of tool "serach"; closest recorded call #3 search has the same arguments`,
		},
		{
			name: "arguments not an object: compared whole",
			tool: "fetch", args: `["https://b"]`,
			want: `unexpected call fetch(args ["https://b"]): closest recorded call #2 fetch differs in arguments: recorded {"url":"https://a"}, got ["https://b"]`,
		},
		{
			name:   "used up: prefers the call with the same arguments",
			before: []string{`search {"q":"cats","limit":10}`},
			tool:   "search", args: `{"limit":10,"q":"cats"}`,
			want: `unexpected call search(args {"limit":10,"q":"cats"}): closest recorded call #3 search has the same arguments but its 1 recorded answer(s) were already used`,
		},
		{
			name:    "empty fixture",
			fixture: &Fixture{Format: FormatV1},
			tool:    "x", args: struct{}{},
			want: `unexpected call x(args {}): the fixture records no calls`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fixture
			if f == nil {
				f = searchFixture()
			}
			p := NewPlayer(f, Strict())
			for _, b := range tc.before {
				var tool, args string
				for i := range b {
					if b[i] == ' ' {
						tool, args = b[:i], b[i+1:]
						break
					}
				}
				if _, err := p.Call(context.Background(), tool, args); err != nil {
					t.Fatalf("setup call %s: %v", b, err)
				}
			}
			_, err := p.Call(context.Background(), tc.tool, tc.args)
			var uce *UnexpectedCallError
			if !errors.As(err, &uce) {
				t.Fatalf("err = %v, want *UnexpectedCallError", err)
			}
			if err.Error() != tc.want {
				t.Errorf("\n got %s\nwant %s", err, tc.want)
			}
			if errors.Is(err, ErrNotRecorded) {
				t.Error("strict error must not match ErrNotRecorded")
			}
		})
	}
}

func TestNonStrictNotRecorded(t *testing.T) {
	p := NewPlayer(searchFixture())
	_, err := p.Call(context.Background(), "search", `{"q":"cats","limit":5}`)
	if !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("err = %v, want ErrNotRecorded", err)
	}
	if want := `replay: call not recorded: search(args {"q":"cats","limit":5})`; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	var uce *UnexpectedCallError
	if errors.As(err, &uce) {
		t.Error("non-strict error must not be an *UnexpectedCallError")
	}
}

func TestReport(t *testing.T) {
	p := NewPlayer(searchFixture(), Strict())
	ctx := context.Background()
	if _, err := p.Call(ctx, "search", `{"q":"dogs","limit":10}`); err != nil {
		t.Fatal(err)
	}
	_, _ = p.Call(ctx, "search", `{"q":"cats","limit":5}`)

	r := p.Report()
	// #1 was made; #2 fetch and #3 search were not.
	if len(r.Unmet) != 2 || r.Unmet[0].Seq != 2 || r.Unmet[0].Tool != "fetch" || r.Unmet[1].Seq != 3 {
		t.Errorf("unmet = %+v", r.Unmet)
	}
	if r.Unmet[1].Arguments != `{"limit":10,"q":"cats"}` || r.Unmet[1].TraceID != testTrace {
		t.Errorf("unmet #3 = %+v", r.Unmet[1])
	}
	if len(r.Unexpected) != 1 || r.Unexpected[0].Tool != "search" || r.Unexpected[0].Arguments != `{"q":"cats","limit":5}` {
		t.Fatalf("unexpected = %+v", r.Unexpected)
	}
	// Expected: printf '%s' '{"limit":5,"q":"cats"}' | sha256sum
	if r.Unexpected[0].ArgsHash != "86df850ed8ab0497fdc536b5eecfb9255a91285b616129eb92aa5867b36c4be0" {
		t.Errorf("unexpected args hash %s", r.Unexpected[0].ArgsHash)
	}
	want := `replay: 2 recorded call(s) never made, 1 unexpected call(s)
  never made: #2 fetch(args {"url":"https://a"}) in trace 4bf92f3577b34da6a3ce929d0e0e4736
  never made: #3 search(args {"limit":10,"q":"cats"}) in trace 4bf92f3577b34da6a3ce929d0e0e4736
  unexpected call search(args {"q":"cats","limit":5}): closest recorded call #3 search differs at "limit": recorded 10, got 5`
	if err := r.Err(); err == nil || err.Error() != want {
		t.Errorf("Report.Err():\n got %v\nwant %s", err, want)
	}
}

func TestPlayerArgumentsNotCapturedMatchAny(t *testing.T) {
	f := &Fixture{Format: FormatV1, Calls: []Call{
		{Seq: 1, Tool: "notify", Missing: []string{PartArguments}, Result: json.RawMessage(`true`)},
		{Seq: 2, Tool: "notify", Missing: []string{PartArguments, PartResult}},
	}}
	p := NewPlayer(f, Strict())
	got, err := p.Call(context.Background(), "notify", `{"to":"a"}`)
	if err != nil || string(got) != "true" {
		t.Errorf("first notify = %s, %v", got, err)
	}
	if _, err := p.Call(context.Background(), "notify", nil); !errors.Is(err, ErrResultNotCaptured) {
		t.Errorf("second notify err = %v, want ErrResultNotCaptured", err)
	}
}

func TestPlayerCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := NewPlayer(searchFixture())
	if _, err := p.Call(ctx, "search", `{"q":"dogs","limit":10}`); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if len(p.Report().Unmet) != 3 {
		t.Error("a canceled call must not use a recorded answer")
	}
}

func TestPlayerConcurrent(t *testing.T) {
	// Ten identical calls recorded with results 1..10: concurrent callers get
	// each result exactly once.
	f := &Fixture{Format: FormatV1}
	for i := 1; i <= 10; i++ {
		f.Calls = append(f.Calls, Call{Seq: i, Tool: "tick", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(jsonInt(i))})
	}
	p := NewPlayer(f, Strict())
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []string
	)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := p.Call(context.Background(), "tick", map[string]any{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, string(r))
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(got, func(i, j int) bool {
		return len(got[i]) < len(got[j]) || (len(got[i]) == len(got[j]) && got[i] < got[j])
	})
	want := []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if err := p.Report().Err(); err != nil {
		t.Error(err)
	}
}

func jsonInt(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestPlayerNullResultAndHashOnlyCall(t *testing.T) {
	// Call #1 returned JSON null; call #2's arguments were not captured but
	// ingest stored their hash, printf '%s' '{"limit":5,"q":"cats"}' | sha256sum.
	doc := `{"format":"tally.replay/v1","run":{},"missing":{"arguments":[2],"results":[]},"calls":[
	  {"seq":1,"tool":"lookup","args_hash":"","arguments":{"id":1},"result":null,"status":"ok","attempt":1,"duration_ms":1,"span_id":"a","started_at":"2025-03-01T10:00:00Z"},
	  {"seq":2,"tool":"search","args_hash":"86df850ed8ab0497fdc536b5eecfb9255a91285b616129eb92aa5867b36c4be0","missing":["arguments"],"result":[1],"status":"ok","attempt":1,"duration_ms":1,"span_id":"b","started_at":"2025-03-01T10:00:00Z"}]}`
	f, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlayer(f, Strict())
	ctx := context.Background()
	if got, err := p.Call(ctx, "lookup", `{"id":1}`); err != nil || string(got) != "null" {
		t.Errorf("lookup = %q, %v; want null", got, err)
	}
	if _, err := p.Call(ctx, "search", `{"q":"dogs","limit":5}`); err == nil {
		t.Error("a hash-only recorded call matched other arguments")
	}
	if got, err := p.Call(ctx, "search", `{"q":"cats","limit":5}`); err != nil || string(got) != "[1]" {
		t.Errorf("search = %s, %v; want [1]", got, err)
	}
}

package attribution

import (
	"fmt"
	"reflect"
	"testing"
)

// call builds a tool call of trace "t" that starts at second start and lasts
// one second.
func call(tool string, start uint64, opts ...func(*ToolCall)) ToolCall {
	c := ToolCall{TraceID: "t", SpanID: fmt.Sprintf("s%02d", start), ParentSpanID: "p", Tool: tool,
		StartNs: start * 1e9, DurationNs: 1e9}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func failed(c *ToolCall)                { c.Error = true }
func attemptN(n uint32) func(*ToolCall) { return func(c *ToolCall) { c.Attempt = n } }
func callID(id string) func(*ToolCall)  { return func(c *ToolCall) { c.CallID = id } }
func step(id string) func(*ToolCall)    { return func(c *ToolCall) { c.StepID = id } }
func args(h string) func(*ToolCall)     { return func(c *ToolCall) { c.ArgsHash = h } }
func parent(p string) func(*ToolCall)   { return func(c *ToolCall) { c.ParentSpanID = p } }
func trace(t string) func(*ToolCall)    { return func(c *ToolCall) { c.TraceID = t } }
func lasts(sec uint64) func(*ToolCall) {
	return func(c *ToolCall) { c.DurationNs = sec * 1e9 }
}

func TestClassifyRetries(t *testing.T) {
	const (
		orig    = ClassOriginal
		attempt = ClassRetryAttempt
		sameID  = ClassRetryCallID
		sameStp = ClassRetryStep
		afterEr = ClassRetryAfterError
		repeat  = ClassRepeat
	)
	for _, c := range []struct {
		name  string
		calls []ToolCall
		want  []Class
	}{
		{"attempt attribute 2 is a retry, 1 and unknown are not",
			[]ToolCall{call("a", 1, attemptN(1)), call("b", 2), call("c", 3, attemptN(2), parent("q"))},
			[]Class{orig, orig, attempt}},
		{"attempt decides first even when the call id repeats too",
			[]ToolCall{call("a", 1, callID("c1"), failed), call("a", 3, callID("c1"), attemptN(3))},
			[]Class{orig, attempt}},
		{"same call id later in the run, under another parent, after a success",
			[]ToolCall{call("a", 1, callID("c1")), call("a", 3, callID("c1"), parent("q"))},
			[]Class{orig, sameID}},
		{"same call id in another run is not a retry",
			[]ToolCall{call("a", 1, callID("c1"), failed), call("a", 3, callID("c1"), trace("u"))},
			[]Class{orig, orig}},
		{"same step id, even for another tool",
			[]ToolCall{call("a", 1, step("s1")), call("b", 3, step("s1"), parent("q"))},
			[]Class{orig, sameStp}},
		{"previous sibling call of the same tool failed",
			[]ToolCall{call("a", 1, failed), call("a", 3)},
			[]Class{orig, afterEr}},
		{"a failed call of another tool or under another parent is no retry",
			[]ToolCall{call("a", 1, failed), call("b", 3), call("a", 5, parent("q"))},
			[]Class{orig, orig, orig}},
		{"only the latest sibling call counts: after a successful retry, a new call is fresh",
			[]ToolCall{call("a", 1, failed), call("a", 3), call("a", 5)},
			[]Class{orig, afterEr, orig}},
		{"a parallel sibling that fails after this call started is no retry",
			// a@1 lasts 10 s, ends at 11 in error; a@3 started before it ended.
			[]ToolCall{call("a", 1, failed, lasts(10)), call("a", 3)},
			[]Class{orig, orig}},
		{"identical arguments after a success are a repeat, not a retry",
			[]ToolCall{call("a", 1, args("h1")), call("a", 3, args("h1")), call("a", 5, args("h1"))},
			[]Class{orig, repeat, repeat}},
		{"identical arguments after a failure are a retry",
			[]ToolCall{call("a", 1, args("h1"), failed), call("a", 3, args("h1"))},
			[]Class{orig, afterEr}},
		{"other arguments after a success are an original call",
			[]ToolCall{call("a", 1, args("h1")), call("a", 3, args("h2"))},
			[]Class{orig, orig}},
		{"calls are taken in start order whatever the input order",
			[]ToolCall{call("a", 3, callID("c1")), call("a", 1, callID("c1"))},
			[]Class{sameID, orig}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ClassifyRetries(c.calls)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestClassRetry(t *testing.T) {
	for c, want := range map[Class]bool{
		ClassOriginal: false, ClassRepeat: false, ClassRetryAttempt: true,
		ClassRetryCallID: true, ClassRetryStep: true, ClassRetryAfterError: true,
	} {
		if c.Retry() != want {
			t.Errorf("%s.Retry() = %v, want %v", c, c.Retry(), want)
		}
	}
}

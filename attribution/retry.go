package attribution

import "sort"

// Class says what a tool call was, as docs/design.md defines retries. Exactly one
// class applies to each call: the retry rules are tried in order and the
// first that matches decides; a call no retry rule matches is a repeat when
// the same tool already succeeded with the same arguments, else an original.
type Class string

// The classes of a tool call.
const (
	// ClassOriginal is a first call: no retry rule matched and it repeats no
	// earlier successful call.
	ClassOriginal Class = "original"
	// ClassRetryAttempt is a call whose attempt attribute says attempt ≥ 2.
	ClassRetryAttempt Class = "retry_attempt"
	// ClassRetryCallID is a call whose tool call id an earlier tool span of the
	// same run already carried.
	ClassRetryCallID Class = "retry_call_id"
	// ClassRetryStep is a call whose step id an earlier tool span of the same
	// run already carried.
	ClassRetryStep Class = "retry_step"
	// ClassRetryAfterError is a call of a tool whose previous call under the
	// same parent span ended in error before this one started.
	ClassRetryAfterError Class = "retry_after_error"
	// ClassRepeat is a call with the same tool and arguments hash as an earlier
	// successful call of the run: a loop signal, not a retry.
	ClassRepeat Class = "repeat"
)

// Classes lists the classes in the order the retry rules try them, the
// original and the repeat last.
func Classes() []Class {
	return []Class{ClassRetryAttempt, ClassRetryCallID, ClassRetryStep, ClassRetryAfterError, ClassRepeat, ClassOriginal}
}

// Retry reports whether the class counts as a retry.
func (c Class) Retry() bool {
	switch c {
	case ClassRetryAttempt, ClassRetryCallID, ClassRetryStep, ClassRetryAfterError:
		return true
	}
	return false
}

// ToolCall is the part of a tool span that retry classification and tool
// statistics need.
type ToolCall struct {
	TraceID      string
	SpanID       string
	ParentSpanID string
	Tool         string
	CallID       string
	StepID       string
	ArgsHash     string
	Error        bool // the span's status is error
	StartNs      uint64
	DurationNs   uint64
	Attempt      uint32 // 0 unknown, 1 first try, ≥ 2 a retry
}

// ClassifyRetries classifies each call (the result is parallel to calls).
// Calls may come from many runs in any order; within a run they are taken
// in start order (ties broken by span id). The rules, first match deciding:
//
//  1. the attempt attribute says attempt ≥ 2;
//  2. an earlier tool span of the run has the same (non-empty) call id;
//  3. an earlier tool span of the run has the same (non-empty) step id;
//  4. the previous call of the same tool under the same parent span ended in
//     error before this call started. Only the latest earlier sibling call
//     counts: after a failed call was retried successfully, a later call of
//     the tool is a fresh call, not another retry.
//
// A call no rule matches is a repeat when an earlier call of the run with the
// same tool and (non-empty) arguments hash succeeded, else an original.
func ClassifyRetries(calls []ToolCall) []Class {
	out := make([]Class, len(calls))
	byTrace := map[string][]int{}
	for i := range calls {
		byTrace[calls[i].TraceID] = append(byTrace[calls[i].TraceID], i)
	}
	// Strings become small integer keys ("" is 0, absent), so that the rules
	// run on the same representation as the keys ClickHouse computes for
	// query's tool statistics (see KeyedCall).
	keys := map[string]uint64{"": 0}
	key := func(s string) uint64 {
		k, ok := keys[s]
		if !ok {
			k = uint64(len(keys))
			keys[s] = k
		}
		return k
	}
	rc := NewRetryClassifier()
	var run []KeyedCall
	var classes []Class
	for _, idx := range byTrace {
		sort.SliceStable(idx, func(a, b int) bool {
			ca, cb := &calls[idx[a]], &calls[idx[b]]
			if ca.StartNs != cb.StartNs {
				return ca.StartNs < cb.StartNs
			}
			return ca.SpanID < cb.SpanID
		})
		run, classes = run[:0], classes[:0]
		for _, i := range idx {
			c := &calls[i]
			run = append(run, KeyedCall{Parent: key(c.ParentSpanID), Tool: key(c.Tool), CallID: key(c.CallID),
				StepID: key(c.StepID), ArgsHash: key(c.ArgsHash), Error: c.Error, StartNs: c.StartNs,
				DurationNs: c.DurationNs, Attempt: c.Attempt})
			classes = append(classes, "")
		}
		rc.ClassifyRun(run, classes)
		for n, i := range idx {
			out[i] = classes[n]
		}
	}
	return out
}

// siblingKey identifies the calls of one tool under one parent span.
type siblingKey struct{ parent, tool string }

// KeyedCall is a tool call reduced to what the retry rules compare: each key
// stands for the string it was made from, 0 for an empty call id, step id or
// arguments hash (absent, never equal to anything). Keys need only be
// distinct within one run: query's tool statistics have ClickHouse compute
// them as cityHash64 of the strings, where a collision between two of the few
// values of one run (probability about n²/2⁶⁵) is the only way to differ
// from comparing the strings.
type KeyedCall struct {
	Parent, Tool, CallID, StepID, ArgsHash uint64
	Error                                  bool // the span's status is error
	StartNs, DurationNs                    uint64
	Attempt                                uint32 // 0 unknown, 1 first try, ≥ 2 a retry
}

// RetryClassifier applies the rules of ClassifyRetries to one run at a time,
// over keyed calls; its maps are reused from run to run. It is the one place
// the retry rules are decided.
type RetryClassifier struct {
	seenCall, seenStep map[uint64]bool
	lastSibling        map[[2]uint64]int // (parent, tool) → index of the latest call
	succeeded          map[[2]uint64]bool
}

// NewRetryClassifier returns a RetryClassifier.
func NewRetryClassifier() *RetryClassifier {
	return &RetryClassifier{seenCall: map[uint64]bool{}, seenStep: map[uint64]bool{},
		lastSibling: map[[2]uint64]int{}, succeeded: map[[2]uint64]bool{}}
}

// ClassifyRun classifies the calls of one run, given in start order (ties
// broken by span id), into out (parallel to calls), by the rules of
// ClassifyRetries.
func (rc *RetryClassifier) ClassifyRun(calls []KeyedCall, out []Class) {
	clear(rc.seenCall)
	clear(rc.seenStep)
	clear(rc.lastSibling)
	clear(rc.succeeded)
	for i := range calls {
		c := &calls[i]
		sibling := [2]uint64{c.Parent, c.Tool}
		prev, hasPrev := rc.lastSibling[sibling]
		switch {
		case c.Attempt >= 2:
			out[i] = ClassRetryAttempt
		case c.CallID != 0 && rc.seenCall[c.CallID]:
			out[i] = ClassRetryCallID
		case c.StepID != 0 && rc.seenStep[c.StepID]:
			out[i] = ClassRetryStep
		case hasPrev && calls[prev].Error && calls[prev].StartNs+calls[prev].DurationNs <= c.StartNs:
			out[i] = ClassRetryAfterError
		case c.ArgsHash != 0 && rc.succeeded[[2]uint64{c.Tool, c.ArgsHash}]:
			out[i] = ClassRepeat
		default:
			out[i] = ClassOriginal
		}
		if c.CallID != 0 {
			rc.seenCall[c.CallID] = true
		}
		if c.StepID != 0 {
			rc.seenStep[c.StepID] = true
		}
		rc.lastSibling[sibling] = i
		if !c.Error && c.ArgsHash != 0 {
			rc.succeeded[[2]uint64{c.Tool, c.ArgsHash}] = true
		}
	}
}

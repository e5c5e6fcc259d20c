package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tallyhq/tally/support/canonical"
)

// ErrNotRecorded is returned by a non-strict Player for a call the fixture
// does not hold (wrapped: test with errors.Is), so the agent may fall back to
// the real tool.
var ErrNotRecorded = errors.New("replay: call not recorded")

// ErrResultNotCaptured is returned (wrapped) for a recorded call whose result
// content was not captured, so there is nothing to answer with.
var ErrResultNotCaptured = errors.New("replay: recorded result was not captured")

// RecordedError is the error a recorded call ended with, returned by
// Player.Call in place of a result.
type RecordedError struct {
	Seq     int    // the recorded call's Seq
	Tool    string // the recorded call's tool
	Type    string // error.type as recorded
	Message string // status message as recorded
	// Result is the result recorded beside the error, if any.
	Result json.RawMessage
}

// Error reports the recorded error type and message.
func (e *RecordedError) Error() string {
	return fmt.Sprintf("replay: recorded error from call #%d %s: %s: %s", e.Seq, e.Tool, e.Type, e.Message)
}

// ArgDiff is one top-level argument key that differs between a call and the
// closest recorded call. Values are canonical JSON; Key is empty when the
// arguments were not both JSON objects and are compared whole.
type ArgDiff struct {
	Key      string
	Recorded string // "(absent)" when the recorded call has no such key
	Got      string // "(absent)" when the call has no such key
}

// UnexpectedCallError is returned by a strict Player for a call the fixture
// does not hold. Its message names the closest recorded call (of the same
// tool if there is one, else of any tool) and the argument keys that differ.
type UnexpectedCallError struct {
	Tool      string
	Arguments string // the arguments as the agent sent them (compacted when JSON)
	ArgsHash  string
	// Closest is the recorded call nearest to this one, nil when the fixture
	// holds no calls. OtherTool is true when no recorded call has this tool.
	Closest   *Call
	OtherTool bool
	// Diffs lists the differing argument keys; empty when the closest call has
	// the same arguments (its recorded answers were all used up).
	Diffs []ArgDiff
	// Used is how many times the closest call's (tool, arguments) were
	// recorded, when Diffs is empty.
	Used int
}

// Error describes the call and how it differs from the closest recorded call, e.g.
//
//	unexpected call search(args {"q":"cats","limit":5}): closest recorded call #3 search differs at "limit": recorded 10, got 5
func (e *UnexpectedCallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unexpected call %s(args %s): ", e.Tool, e.Arguments)
	if e.Closest == nil {
		b.WriteString("the fixture records no calls")
		return b.String()
	}
	if e.OtherTool {
		fmt.Fprintf(&b, "no recorded call of tool %q; ", e.Tool)
	}
	fmt.Fprintf(&b, "closest recorded call #%d %s ", e.Closest.Seq, e.Closest.Tool)
	if len(e.Diffs) == 0 {
		if e.OtherTool {
			b.WriteString("has the same arguments")
		} else {
			fmt.Fprintf(&b, "has the same arguments but its %d recorded answer(s) were already used", e.Used)
		}
		return b.String()
	}
	b.WriteString("differs ")
	for i, d := range e.Diffs {
		if i > 0 {
			b.WriteString("; ")
		}
		if d.Key == "" {
			fmt.Fprintf(&b, "in arguments: recorded %s, got %s", d.Recorded, d.Got)
		} else {
			if i == 0 {
				b.WriteString("at ")
			}
			fmt.Fprintf(&b, "%q: recorded %s, got %s", d.Key, d.Recorded, d.Got)
		}
	}
	return b.String()
}

// Option changes how a Player answers.
type Option func(*Player)

// Strict makes a Player answer a call the fixture does not hold with an
// *UnexpectedCallError describing the closest recorded call, instead of
// ErrNotRecorded.
func Strict() Option {
	return func(p *Player) { p.strict = true }
}

// Player answers tool calls from one fixture. It is safe for concurrent use.
//
// A call is matched by (tool, canonical.Hash of its arguments). Identical
// calls get their recorded answers in recorded order; calls with different
// arguments are not ordered against each other. A recorded call with neither
// arguments nor args_hash (content capture was off) matches any call of its
// tool, after calls with matching arguments are used up.
type Player struct {
	traceID string
	strict  bool

	mu         sync.Mutex
	calls      []recordedCall
	byKey      map[matchKey][]int // queue of indexes into calls, in Seq order
	anyArgs    map[string][]int   // tool -> calls recorded without arguments
	used       []bool
	unexpected []UnexpectedCall

	faultRules []FaultRule
	faults     []*Fault // by index into calls: the fault answering it, nil for none
	faultLeft  []int    // how many more calls the fault answers
	injected   []InjectedFault
}

type matchKey struct {
	tool string
	hash string
}

type recordedCall struct {
	call    Call
	args    []byte // canonical JSON, or the text as recorded
	argsOK  bool   // args is JSON
	anyArgs bool   // recorded without arguments: matches any
	result  json.RawMessage
	hasRes  bool
}

// NewPlayer returns a player for fixture f. f is not modified or retained
// beyond the calls' copies.
func NewPlayer(f *Fixture, opts ...Option) *Player {
	p := &Player{
		traceID: f.Run.TraceID,
		byKey:   make(map[matchKey][]int),
		anyArgs: make(map[string][]int),
	}
	for _, opt := range opts {
		opt(p)
	}
	calls := append([]Call(nil), f.Calls...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Seq < calls[j].Seq })
	for _, c := range calls {
		rc := recordedCall{call: c}
		switch {
		case len(c.Arguments) > 0:
			if canon, err := canonical.JSON(c.Arguments); err == nil {
				rc.args, rc.argsOK = canon, true
			} else {
				rc.args = append([]byte(nil), c.Arguments...)
			}
		case c.ArgumentsText != "":
			rc.args = []byte(c.ArgumentsText)
			if canon, err := canonical.JSON(rc.args); err == nil {
				rc.args, rc.argsOK = canon, true
			}
		}
		hash := c.ArgsHash
		if hash == "" && rc.args != nil {
			hash = canonical.Hash(string(rc.args))
		}
		rc.anyArgs = hash == ""
		switch {
		case len(c.Result) > 0:
			var compact bytes.Buffer
			if err := json.Compact(&compact, c.Result); err == nil {
				rc.result = compact.Bytes()
			} else {
				rc.result = append(json.RawMessage(nil), c.Result...)
			}
			rc.hasRes = true
		case c.ResultText != "":
			rc.result = encodeText(c.ResultText)
			rc.hasRes = true
		}
		i := len(p.calls)
		p.calls = append(p.calls, rc)
		if rc.anyArgs {
			p.anyArgs[c.Tool] = append(p.anyArgs[c.Tool], i)
		} else {
			k := matchKey{c.Tool, hash}
			p.byKey[k] = append(p.byKey[k], i)
		}
	}
	p.used = make([]bool, len(p.calls))
	p.faults, p.faultLeft = make([]*Fault, len(p.calls)), make([]int, len(p.calls))
	for i := range p.calls {
		c := &p.calls[i].call
		f := c.Fault
		for j := range p.faultRules {
			if r := &p.faultRules[j]; (r.Seq != 0 && r.Seq == c.Seq) || (r.Tool != "" && r.Tool == c.Tool) {
				f = &r.Fault
			}
		}
		if f != nil {
			ff := *f
			p.faults[i] = &ff
			p.faultLeft[i] = max(ff.Attempts, 1)
		}
	}
	return p
}

// TraceID is the trace id of the fixture the player answers from.
func (p *Player) TraceID() string { return p.traceID }

// Call answers a tool call with what the fixture recorded for that tool and
// arguments. args may be a string or []byte or json.RawMessage holding the
// arguments' JSON text (non-JSON text is matched as-is), or any other Go value,
// which is encoded with encoding/json (nil encodes as null).
//
// The result is JSON; a result recorded as plain text comes back as a JSON
// string. A recorded error comes back as a *RecordedError. A call the fixture
// does not hold returns ErrNotRecorded, or with Strict an
// *UnexpectedCallError; either way it is listed in Report.
func (p *Player) Call(ctx context.Context, tool string, args any) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("replay: call %s: %w", tool, err)
	}
	raw, err := argsText(args)
	if err != nil {
		return nil, fmt.Errorf("replay: call %s: %w", tool, err)
	}
	hash := canonical.Hash(string(raw))

	p.mu.Lock()
	defer p.mu.Unlock()
	i, ok := p.take(p.byKey[matchKey{tool, hash}])
	if !ok {
		i, ok = p.take(p.anyArgs[tool])
	}
	if !ok {
		uce := p.explain(tool, raw, hash)
		p.unexpected = append(p.unexpected, UnexpectedCall{
			TraceID:   p.traceID,
			Tool:      tool,
			Arguments: uce.Arguments,
			ArgsHash:  hash,
			Message:   uce.Error(),
		})
		if p.strict {
			return nil, uce
		}
		return nil, fmt.Errorf("%w: %s(args %s)", ErrNotRecorded, tool, uce.Arguments)
	}
	rc := p.calls[i]
	if f := p.faults[i]; f != nil && p.faultLeft[i] > 0 {
		p.used[i] = false // the recording answers once the fault's attempts are spent
		if err := f.validate(); err != nil {
			return nil, fmt.Errorf("replay: call #%d %s: %w", rc.call.Seq, rc.call.Tool, err)
		}
		p.faultLeft[i]--
		p.injected = append(p.injected, InjectedFault{TraceID: p.traceID, Seq: rc.call.Seq, Tool: rc.call.Tool, Kind: f.Kind})
		return answerFault(&rc, f)
	}
	if rc.call.Error != nil {
		return nil, &RecordedError{
			Seq:     rc.call.Seq,
			Tool:    rc.call.Tool,
			Type:    rc.call.Error.Type,
			Message: rc.call.Error.Message,
			Result:  cloneRaw(rc.result),
		}
	}
	if !rc.hasRes {
		return nil, fmt.Errorf("%w: call #%d %s", ErrResultNotCaptured, rc.call.Seq, rc.call.Tool)
	}
	return cloneRaw(rc.result), nil
}

// take marks and returns the first unused call of queue.
func (p *Player) take(queue []int) (int, bool) {
	for _, i := range queue {
		if !p.used[i] {
			p.used[i] = true
			return i, true
		}
	}
	return 0, false
}

// explain builds the unexpected-call error for a call nothing answered.
func (p *Player) explain(tool string, raw []byte, hash string) *UnexpectedCallError {
	got, gotOK := raw, false
	if canon, err := canonical.JSON(raw); err == nil {
		got, gotOK = canon, true
	}
	uce := &UnexpectedCallError{Tool: tool, Arguments: displayArgs(raw), ArgsHash: hash}
	sameTool := false
	for i := range p.calls {
		if p.calls[i].call.Tool == tool {
			sameTool = true
			break
		}
	}
	best, bestScore := -1, 0
	var bestDiffs []ArgDiff
	for i := range p.calls {
		rc := &p.calls[i]
		if sameTool && rc.call.Tool != tool {
			continue
		}
		diffs := diffArgs(rc.args, rc.argsOK, got, gotOK)
		// Fewer differing keys is closer; on a tie an unused call, then the
		// earliest.
		score := len(diffs) * 2
		if p.used[i] {
			score++
		}
		if best < 0 || score < bestScore {
			best, bestScore, bestDiffs = i, score, diffs
		}
	}
	if best < 0 {
		return uce
	}
	closest := p.calls[best].call
	uce.Closest = &closest
	uce.OtherTool = !sameTool
	uce.Diffs = bestDiffs
	if len(bestDiffs) == 0 {
		for i := range p.calls {
			if p.calls[i].call.Tool == closest.Tool && bytes.Equal(p.calls[i].args, p.calls[best].args) {
				uce.Used++
			}
		}
	}
	return uce
}

// Report lists the recorded calls never made and the calls nothing answered.
func (p *Player) Report() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{Unmet: []UnmetCall{}, Unexpected: append([]UnexpectedCall{}, p.unexpected...), Faults: append([]InjectedFault(nil), p.injected...)}
	for i, rc := range p.calls {
		if p.used[i] {
			continue
		}
		r.Unmet = append(r.Unmet, UnmetCall{
			TraceID:   p.traceID,
			Seq:       rc.call.Seq,
			Tool:      rc.call.Tool,
			ArgsHash:  rc.call.ArgsHash,
			Arguments: string(rc.args),
		})
	}
	return r
}

// Report is what a replay left over: recorded calls never made (Unmet) and
// calls the fixture did not hold (Unexpected), each in the order they were
// recorded or made.
type Report struct {
	Unmet      []UnmetCall      `json:"unmet"`
	Unexpected []UnexpectedCall `json:"unexpected"`
	// Faults are the faults injected, in the order they answered: not
	// problems, a record of what the agent was put through.
	Faults []InjectedFault `json:"faults,omitempty"`
}

// UnmetCall is a recorded call the replay never made.
type UnmetCall struct {
	TraceID   string `json:"trace_id"`
	Seq       int    `json:"seq"`
	Tool      string `json:"tool"`
	ArgsHash  string `json:"args_hash"`
	Arguments string `json:"arguments"` // canonical JSON, or text as recorded; empty when not captured
}

// UnexpectedCall is a call the fixture did not hold.
type UnexpectedCall struct {
	TraceID   string `json:"trace_id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"` // as sent, compacted when JSON
	ArgsHash  string `json:"args_hash"`
	Message   string `json:"message"` // the UnexpectedCallError text
}

// Err is nil when every recorded call was made and nothing unexpected was
// called; otherwise an error listing each problem on its own line.
func (r Report) Err() error {
	if len(r.Unmet) == 0 && len(r.Unexpected) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replay: %d recorded call(s) never made, %d unexpected call(s)", len(r.Unmet), len(r.Unexpected))
	for _, u := range r.Unmet {
		fmt.Fprintf(&b, "\n  never made: #%d %s(args %s)", u.Seq, u.Tool, u.Arguments)
		if u.TraceID != "" {
			fmt.Fprintf(&b, " in trace %s", u.TraceID)
		}
	}
	for _, u := range r.Unexpected {
		fmt.Fprintf(&b, "\n  %s", u.Message)
	}
	return errors.New(b.String())
}

// mergeReports concatenates reports in order.
func mergeReports(reports ...Report) Report {
	out := Report{Unmet: []UnmetCall{}, Unexpected: []UnexpectedCall{}}
	for _, r := range reports {
		out.Unmet = append(out.Unmet, r.Unmet...)
		out.Unexpected = append(out.Unexpected, r.Unexpected...)
		out.Faults = append(out.Faults, r.Faults...)
	}
	return out
}

// argsText turns Call's args into the JSON (or raw) text that is hashed.
func argsText(args any) ([]byte, error) {
	switch a := args.(type) {
	case string:
		return []byte(a), nil
	case []byte:
		return a, nil
	case json.RawMessage:
		return a, nil
	default:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(a); err != nil {
			return nil, fmt.Errorf("encode arguments: %w", err)
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
}

// displayArgs shows arguments as sent: compacted when JSON (key order kept).
func displayArgs(raw []byte) string {
	var b bytes.Buffer
	if json.Valid(raw) && json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// diffArgs compares recorded and got arguments key by key when both are JSON
// objects, else as a whole.
func diffArgs(recorded []byte, recordedOK bool, got []byte, gotOK bool) []ArgDiff {
	recObj, rIsObj := objectOf(recorded, recordedOK)
	gotObj, gIsObj := objectOf(got, gotOK)
	if !rIsObj || !gIsObj {
		if bytes.Equal(recorded, got) {
			return nil
		}
		return []ArgDiff{{Recorded: shorten(showValue(recorded)), Got: shorten(showValue(got))}}
	}
	keys := make([]string, 0, len(recObj)+len(gotObj))
	for k := range recObj {
		keys = append(keys, k)
	}
	for k := range gotObj {
		if _, ok := recObj[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var diffs []ArgDiff
	for _, k := range keys {
		r, rok := recObj[k]
		g, gok := gotObj[k]
		if rok && gok && bytes.Equal(r, g) {
			continue
		}
		d := ArgDiff{Key: k, Recorded: "(absent)", Got: "(absent)"}
		if rok {
			d.Recorded = shorten(string(r))
		}
		if gok {
			d.Got = shorten(string(g))
		}
		diffs = append(diffs, d)
	}
	return diffs
}

// objectOf splits canonical JSON object text into canonical values by key.
func objectOf(b []byte, isJSON bool) (map[string][]byte, bool) {
	if !isJSON || len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, false
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		canon, err := canonical.JSON(v)
		if err != nil {
			return nil, false
		}
		out[k] = canon
	}
	return out, true
}

func showValue(b []byte) string {
	if len(b) == 0 {
		return "(none)"
	}
	return string(b)
}

// shorten keeps diff messages readable when values are large.
func shorten(s string) string {
	const limit = 120
	if len(s) <= limit {
		return s
	}
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	return string(r[:limit]) + "…"
}

func encodeText(s string) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

package safety

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// SignalKind names what a safety signal found; its values are stable (the
// API, the alert rules and the UI carry them).
type SignalKind string

// The signal kinds this package raises (stable names).
const (
	// KindDuplicateSideEffect: a non_idempotent or irreversible tool
	// succeeded twice in a run for the same step — the same step id, or the
	// same canonical arguments: the double charge.
	KindDuplicateSideEffect SignalKind = "duplicate_side_effect"
	// KindUnsafeRetry: a non_idempotent or irreversible step was retried
	// after an ambiguous outcome, when the first call may have taken effect.
	KindUnsafeRetry SignalKind = "unsafe_retry"
	// KindRetryStorm: a retry started sooner after the attempt it retried
	// ended than the minimum backoff: no backoff, or none to speak of.
	KindRetryStorm SignalKind = "retry_storm"
	// KindRunawayLoop: the same tool called with the same arguments, ending
	// in error, more times in one run than the limit; or a run making more
	// tool calls than the step limit.
	KindRunawayLoop SignalKind = "runaway_loop"
	// KindUnknownTool: a tool call whose name was not among the tools
	// offered to the model that requested it, or not in the configured
	// registry: a hallucinated tool.
	KindUnknownTool SignalKind = "unknown_tool"
	// KindInvalidArguments: a tool call whose arguments do not validate
	// against the JSON schema the model was offered for the tool (unknown
	// fields included).
	KindInvalidArguments SignalKind = "invalid_arguments"
	// KindUncheckedArguments: a tool call whose arguments could not be
	// checked against the offered schema within the validation limits
	// (a schema too large or too complex, or the run's validation time
	// ran out): not a fault of the call, but a schema worth a look.
	KindUncheckedArguments SignalKind = "unchecked_arguments"
	// KindUngatedAction: an irreversible tool ran with no approval before it.
	KindUngatedAction SignalKind = "ungated_action"
	// KindBudgetExceeded: a run over a configured cap on iterations,
	// tokens, active time or spend, or one that ended with a typed partial
	// result.
	KindBudgetExceeded SignalKind = "budget_exceeded"
)

// Kinds are the signal kinds Review raises, in the order the docs list them
// and the UI shows them (ui/static/lib/vocab.js lists them again, each
// with its description, and a test in ui holds the two equal); this is
// its one list.
func Kinds() []SignalKind {
	return []SignalKind{KindDuplicateSideEffect, KindUnsafeRetry, KindUnknownTool, KindInvalidArguments, KindUngatedAction,
		KindRetryStorm, KindRunawayLoop, KindBudgetExceeded, KindUncheckedArguments}
}

// KindNames are Kinds as strings, for messages and help texts.
func KindNames() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, string(k))
	}
	return out
}

// ParseSignalKind reads a signal kind filter: "" (any) or one of Kinds.
func ParseSignalKind(s string) (SignalKind, error) {
	if s == "" || slices.Contains(Kinds(), SignalKind(s)) {
		return SignalKind(s), nil
	}
	return "", fmt.Errorf("kind %q: want one of %s", s, strings.Join(KindNames(), ", "))
}

// AtOnce reports whether a signal of the kind is serious enough that one
// is an incident (the default alert rules fire on any): a side effect
// performed twice, one risked twice, an irreversible action nobody
// approved. The others are judged by their rate.
func AtOnce(kind SignalKind) bool {
	return kind == KindDuplicateSideEffect || kind == KindUnsafeRetry || kind == KindUngatedAction
}

// Limits are the thresholds of the signals that have one.
type Limits struct {
	// MinBackoff is the shortest gap between a failed attempt's end and its
	// retry's start that is not a retry storm (default 100 ms).
	MinBackoff time.Duration
	// MaxRepeats is the most calls of one tool with the same arguments
	// ending in error a run may make before it is a runaway loop (default 5).
	MaxRepeats int
	// MaxSteps is the most tool calls a run may make before it is a
	// runaway loop whatever they are (default 200).
	MaxSteps int
	// Lockstep is the window within which retries of one tool by different
	// branches (retrying different attempts) are in lockstep: a retry
	// storm, backoff without jitter (default 20 ms).
	Lockstep time.Duration
}

// DefaultLimits are the limits unless configured.
func DefaultLimits() Limits {
	return Limits{MinBackoff: 100 * time.Millisecond, MaxRepeats: 5, MaxSteps: 200, Lockstep: 20 * time.Millisecond}
}

// withDefaults fills zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MinBackoff <= 0 {
		l.MinBackoff = d.MinBackoff
	}
	if l.MaxRepeats <= 0 {
		l.MaxRepeats = d.MaxRepeats
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.Lockstep <= 0 {
		l.Lockstep = d.Lockstep
	}
	return l
}

// Step is one tool call of a run, as the signals read it.
type Step struct {
	SpanID, ParentSpanID string
	Tool                 string
	Effect               Effect
	Status               Status
	Retry                bool // classified as a retry (attribution.ClassifyRetries)
	CallID, StepID       string
	ArgsHash             string
	StartNs, EndNs       uint64
	// Args are the call's arguments as recorded (JSON), "" when the span
	// carried none or they were truncated, redacted or hashed: not checked.
	Args string
}

// Signal is one finding about a run: its kind, the span it points at (the
// later of the spans involved), the spans involved, the tool and a
// one-line reason.
type Signal struct {
	Kind    SignalKind `json:"kind"`
	SpanID  string     `json:"span_id"`
	SpanIDs []string   `json:"span_ids"`
	Tool    string     `json:"tool"`
	Reason  string     `json:"reason"`
}

// stepSignals reviews one run's tool steps, sorted by start, for the
// signals that read the steps alone:
//
//   - duplicate_side_effect: two steps of a side-effecting tool ended ok
//     with the same step id, or (without step ids) the same arguments
//     hash. Idempotent and read tools may repeat freely.
//   - unsafe_retry: a side-effecting step classified as a retry whose
//     previous attempt — the latest earlier call of the tool with the same
//     call id, else the same step id, else the latest under the same
//     parent — ended ambiguous.
//   - retry_storm: a step classified as a retry that started less than
//     l.MinBackoff after that previous attempt ended.
//   - runaway_loop: more than l.MaxRepeats steps of one tool with the same
//     arguments hash ended not ok; raised once, on the first step past the
//     limit.
//   - runaway_loop also: the run's tool step past l.MaxSteps.
//   - retry_storm also: retries of one tool of different attempts (other
//     branches, other calls) starting within l.Lockstep of each other —
//     one signal per such burst, on its last retry.
func stepSignals(sorted []Step, l Limits) []Signal {
	var out []Signal
	// Duplicates: the first ok step of each identity, then each later one.
	firstOK := map[string]*Step{}
	for i := range sorted {
		s := &sorted[i]
		if !s.Effect.SideEffecting() || s.Status != StatusOK {
			continue
		}
		key, by := "", ""
		switch {
		case s.StepID != "":
			key, by = "step\x00"+s.Tool+"\x00"+s.StepID, "step id "+s.StepID
		case s.ArgsHash != "":
			key, by = "args\x00"+s.Tool+"\x00"+s.ArgsHash, "the same arguments"
		default:
			continue
		}
		if first, ok := firstOK[key]; ok {
			out = append(out, Signal{Kind: KindDuplicateSideEffect, SpanID: s.SpanID, SpanIDs: []string{first.SpanID, s.SpanID}, Tool: s.Tool,
				Reason: fmt.Sprintf("%s tool %s succeeded twice with %s: the side effect happened twice", s.Effect, s.Tool, by)})
			continue
		}
		firstOK[key] = s
	}
	// Runaway loops: the same failing call again and again.
	failing := map[string]int{}
	for i := range sorted {
		s := &sorted[i]
		if s.Status == StatusOK || s.ArgsHash == "" {
			continue
		}
		k := s.Tool + "\x00" + s.ArgsHash
		failing[k]++
		if failing[k] == l.MaxRepeats+1 {
			out = append(out, Signal{Kind: KindRunawayLoop, SpanID: s.SpanID, SpanIDs: []string{s.SpanID}, Tool: s.Tool,
				Reason: fmt.Sprintf("tool %s failed with the same arguments %d times in one run, more than the limit of %d", s.Tool, l.MaxRepeats+1, l.MaxRepeats)})
		}
	}
	if len(sorted) > l.MaxSteps {
		s := &sorted[l.MaxSteps]
		out = append(out, Signal{Kind: KindRunawayLoop, SpanID: s.SpanID, SpanIDs: []string{s.SpanID}, Tool: s.Tool,
			Reason: fmt.Sprintf("the run made %d tool calls, more than the limit of %d", len(sorted), l.MaxSteps)})
	}
	// Retries: what the retried attempt's outcome was, and how soon after it.
	// The retried attempt is the latest earlier call of the tool with the
	// same call id, else the same step id, else under the same parent: the
	// latest of each is kept as the steps go by.
	prevOf := map[string]string{} // retry span → the attempt it retried
	type key struct{ tool, id string }
	lastByCall, lastByStep, lastByParent := map[key]int{}, map[key]int{}, map[key]int{}
	for i := range sorted {
		s := &sorted[i]
		var prev *Step
		if s.Retry {
			// The same call id, else the same step id, else the latest
			// call of the tool under the same parent: a model re-issuing a
			// call after a timeout gives it a new call id.
			j, ok := lastByCall[key{s.Tool, s.CallID}]
			ok = ok && s.CallID != ""
			if !ok && s.StepID != "" {
				j, ok = lastByStep[key{s.Tool, s.StepID}]
			}
			if !ok {
				j, ok = lastByParent[key{s.Tool, s.ParentSpanID}]
			}
			if ok {
				prev = &sorted[j]
			}
		}
		lastByCall[key{s.Tool, s.CallID}], lastByStep[key{s.Tool, s.StepID}], lastByParent[key{s.Tool, s.ParentSpanID}] = i, i, i
		if !s.Retry {
			continue
		}
		if prev != nil {
			prevOf[s.SpanID] = prev.SpanID
		}
		if prev != nil && prev.EndNs > 0 && s.StartNs < prev.EndNs+uint64(l.MinBackoff) {
			gap := time.Duration(0)
			if s.StartNs > prev.EndNs {
				gap = time.Duration(s.StartNs - prev.EndNs)
			}
			out = append(out, Signal{Kind: KindRetryStorm, SpanID: s.SpanID, SpanIDs: []string{prev.SpanID, s.SpanID}, Tool: s.Tool,
				Reason: fmt.Sprintf("tool %s was retried %s after the attempt before it ended, under the %s minimum backoff", s.Tool, gap, l.MinBackoff)})
		}
		if prev != nil && prev.Status == StatusAmbiguous && s.Effect.SideEffecting() {
			out = append(out, Signal{Kind: KindUnsafeRetry, SpanID: s.SpanID, SpanIDs: []string{prev.SpanID, s.SpanID}, Tool: s.Tool,
				Reason: fmt.Sprintf("%s tool %s was retried after an ambiguous outcome: the first call may have taken effect", s.Effect, s.Tool)})
		}
	}
	return append(out, lockstep(sorted, prevOf, l)...)
}

// origin is the first attempt of the retry chain a span belongs to: its
// retried attempts followed back to one that retried nothing.
func origin(span string, prevOf map[string]string) string {
	for range len(prevOf) + 1 {
		p, ok := prevOf[span]
		if !ok {
			return span
		}
		span = p
	}
	return span
}

// lockstep finds bursts of retries of one tool from different retry chains
// (other branches or calls, not one chain retrying fast) that start within
// l.Lockstep of the burst's first: parallel branches backing off by the
// same fixed delay.
func lockstep(sorted []Step, prevOf map[string]string, l Limits) []Signal {
	var out []Signal
	byTool := map[string][]*Step{}
	var tools []string
	for i := range sorted {
		if s := &sorted[i]; s.Retry {
			if byTool[s.Tool] == nil {
				tools = append(tools, s.Tool)
			}
			byTool[s.Tool] = append(byTool[s.Tool], s)
		}
	}
	for _, tool := range tools {
		retries := byTool[tool]
		for i := 0; i < len(retries); {
			j, chains := i, map[string]bool{}
			for ; j < len(retries) && retries[j].StartNs-retries[i].StartNs <= uint64(l.Lockstep); j++ {
				chains[origin(retries[j].SpanID, prevOf)] = true
			}
			if burst := retries[i:j]; len(burst) > 1 && len(chains) > 1 {
				ids := make([]string, len(burst))
				for k, s := range burst {
					ids[k] = s.SpanID
				}
				last := burst[len(burst)-1]
				out = append(out, Signal{Kind: KindRetryStorm, SpanID: last.SpanID, SpanIDs: ids, Tool: tool,
					Reason: fmt.Sprintf("%d retries of tool %s started within %s of each other: backoff without jitter, in lockstep",
						len(burst), tool, time.Duration(last.StartNs-burst[0].StartNs))})
			}
			i = j
		}
	}
	return out
}

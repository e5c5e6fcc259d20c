package safety

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The signal kinds this package raises (stable names).
const (
	// KindDuplicateSideEffect: a non_idempotent or irreversible tool
	// succeeded twice in a run for the same step — the same step id, or the
	// same canonical arguments: the double charge.
	KindDuplicateSideEffect = "duplicate_side_effect"
	// KindUnsafeRetry: a non_idempotent or irreversible step was retried
	// after an ambiguous outcome, when the first call may have taken effect.
	KindUnsafeRetry = "unsafe_retry"
	// KindRetryStorm: a retry started sooner after the attempt it retried
	// ended than the minimum backoff: no backoff, or none to speak of.
	KindRetryStorm = "retry_storm"
	// KindRunawayLoop: the same tool called with the same arguments, ending
	// in error, more times in one run than the limit.
	KindRunawayLoop = "runaway_loop"
)

// Kinds are the signal kinds Signals raises, in the order the docs list them.
func Kinds() []string {
	return []string{KindDuplicateSideEffect, KindUnsafeRetry, KindRetryStorm, KindRunawayLoop}
}

// Limits are the thresholds of the signals that have one.
type Limits struct {
	// MinBackoff is the shortest gap between a failed attempt's end and its
	// retry's start that is not a retry storm (default 100 ms).
	MinBackoff time.Duration
	// MaxRepeats is the most calls of one tool with the same arguments
	// ending in error a run may make before it is a runaway loop (default 5).
	MaxRepeats int
}

// DefaultLimits are the limits unless configured.
func DefaultLimits() Limits { return Limits{MinBackoff: 100 * time.Millisecond, MaxRepeats: 5} }

// withDefaults fills zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MinBackoff <= 0 {
		l.MinBackoff = d.MinBackoff
	}
	if l.MaxRepeats <= 0 {
		l.MaxRepeats = d.MaxRepeats
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
}

// Signal is one finding about a run: its kind, the span it points at (the
// later of the spans involved), the spans involved, the tool and a
// one-line reason.
type Signal struct {
	Kind    string   `json:"kind"`
	SpanID  string   `json:"span_id"`
	SpanIDs []string `json:"span_ids"`
	Tool    string   `json:"tool"`
	Reason  string   `json:"reason"`
}

// Signals reviews one run's tool steps (any order) and returns its
// signals, in the order of the spans they point at.
//
//   - duplicate_side_effect: two steps of a side-effecting tool ended ok
//     with the same step id, or (without step ids) the same arguments
//     hash. Idempotent and read tools may repeat freely.
//   - unsafe_retry: a side-effecting step classified as a retry whose
//     previous attempt — the latest earlier call of the tool with the same
//     call id, else the same step id, else under the same parent — ended
//     ambiguous.
//   - retry_storm: a step classified as a retry that started less than
//     l.MinBackoff after that previous attempt ended.
//   - runaway_loop: more than l.MaxRepeats steps of one tool with the same
//     arguments hash ended not ok; raised once, on the first step past the
//     limit.
func Signals(steps []Step, l Limits) []Signal {
	l = l.withDefaults()
	sorted := slices.Clone(steps)
	slices.SortFunc(sorted, func(a, b Step) int {
		return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), cmp.Compare(a.SpanID, b.SpanID))
	})
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
	// Retries: what the retried attempt's outcome was, and how soon after it.
	for i := range sorted {
		s := &sorted[i]
		if !s.Retry {
			continue
		}
		var prev *Step
		for j := i - 1; j >= 0 && prev == nil; j-- {
			p := &sorted[j]
			switch {
			case p.Tool != s.Tool:
			case s.CallID != "" && p.CallID == s.CallID, s.StepID != "" && p.StepID == s.StepID,
				s.CallID == "" && s.StepID == "" && p.ParentSpanID == s.ParentSpanID:
				prev = p
			}
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
	order := map[string]int{}
	for i, s := range sorted {
		order[s.SpanID] = i
	}
	slices.SortStableFunc(out, func(a, b Signal) int { return cmp.Compare(order[a.SpanID], order[b.SpanID]) })
	return out
}

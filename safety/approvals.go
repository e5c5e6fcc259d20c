package safety

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The attributes an approval is recorded with, on a span of its own (the
// span's start is when approval was asked for, its end when it was
// decided) or on an event named ApprovalEvent (its time is the decision;
// ApprovalWaitAttribute says how long it waited).
const (
	ApprovalDecisionAttribute = "tally.approval.decision" // approved, rejected, timeout, pending
	ApprovalByAttribute       = "tally.approval.by"       // who decided
	ApprovalToolAttribute     = "tally.approval.tool"     // the tool it approves; any irreversible tool when absent
	ApprovalWaitAttribute     = "tally.approval.wait_ms"  // on an event: how long it waited, ms
	ApprovalEvent             = "tally.approval"
)

// The approval decisions.
const (
	DecisionApproved = "approved"
	DecisionRejected = "rejected"
	DecisionTimeout  = "timeout"
	DecisionPending  = "pending"
)

// ParseDecision reads a decision (approve/approved/yes, reject/rejected/
// denied/no, timeout/expired, pending); ok false for anything else.
func ParseDecision(s string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "approved", "approve", "yes", "granted", "allow", "allowed":
		return DecisionApproved, true
	case "rejected", "reject", "denied", "deny", "no":
		return DecisionRejected, true
	case "timeout", "timed_out", "expired":
		return DecisionTimeout, true
	case "pending", "waiting":
		return DecisionPending, true
	}
	return "", false
}

// Approval is one request for a human's approval and its decision.
type Approval struct {
	SpanID   string `json:"span_id"`
	Decision string `json:"decision"`
	By       string `json:"by,omitempty"`
	Tool     string `json:"tool,omitempty"`
	// RequestedNs and DecidedNs bound the wait (DecidedNs is 0 while
	// pending).
	RequestedNs uint64 `json:"-"`
	DecidedNs   uint64 `json:"-"`
}

// gateSignals raises ungated_action for each irreversible step that ran
// (any status but denied or escalated: those did not act) without an
// approved approval decided before it started, naming its tool or none
// (one naming the tool is used first). Each approval gates one action:
// approving one refund does not approve the next.
func gateSignals(steps []Step, approvals []Approval) []Signal {
	approvals = slices.Clone(approvals)
	slices.SortFunc(approvals, func(a, b Approval) int {
		return cmp.Or(cmp.Compare(a.DecidedNs, b.DecidedNs), cmp.Compare(a.SpanID, b.SpanID))
	})
	used := make([]bool, len(approvals))
	var out []Signal
	for i := range steps {
		s := &steps[i]
		if s.Effect != EffectIrreversible || s.Status == StatusDenied || s.Status == StatusEscalated {
			continue
		}
		// An approval naming the tool first, then one naming none: a
		// wildcard is not spent while a specific approval fits.
		gated := false
		for _, specific := range []bool{true, false} {
			for j := range approvals {
				a := &approvals[j]
				if used[j] || (a.Tool != "") != specific || (specific && a.Tool != s.Tool) {
					continue
				}
				if a.Decision == DecisionApproved && a.DecidedNs > 0 && a.DecidedNs <= s.StartNs && a.RequestedNs <= s.StartNs {
					used[j], gated = true, true
					break
				}
			}
			if gated {
				break
			}
		}
		if gated {
			continue
		}
		// The latest refusal decided before the step, for the reason.
		var refused *Approval
		for j := range approvals {
			a := &approvals[j]
			if a.Decision != DecisionApproved && (a.Tool == "" || a.Tool == s.Tool) && a.RequestedNs <= s.StartNs &&
				(a.DecidedNs == 0 || a.DecidedNs <= s.StartNs) {
				refused = a
			}
		}
		reason := fmt.Sprintf("irreversible tool %s ran with no approval before it", s.Tool)
		ids := []string{s.SpanID}
		if refused != nil {
			who := ""
			if refused.By != "" {
				who = " by " + refused.By
			}
			reason = fmt.Sprintf("irreversible tool %s ran although its approval was %s%s", s.Tool, refused.Decision, who)
			ids = []string{refused.SpanID, s.SpanID}
		}
		out = append(out, Signal{Kind: KindUngatedAction, SpanID: s.SpanID, SpanIDs: ids, Tool: s.Tool, Reason: reason})
	}
	return out
}

// WaitNs is the time a run spent waiting for humans: the union of its
// approvals' waits, clipped to [start, end] (a pending approval waits
// until end).
func WaitNs(approvals []Approval, start, end uint64) uint64 {
	type span struct{ lo, hi uint64 }
	var spans []span
	for _, a := range approvals {
		lo, hi := max(a.RequestedNs, start), a.DecidedNs
		if hi == 0 || hi > end {
			hi = end
		}
		if hi > lo {
			spans = append(spans, span{lo, hi})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var total, reach uint64
	for _, s := range spans {
		lo := max(s.lo, reach)
		if s.hi > lo {
			total += s.hi - lo
		}
		reach = max(reach, s.hi)
	}
	return total
}

// ActiveTime is a run's wall clock less its waits for humans.
func ActiveTime(approvals []Approval, start, end uint64) time.Duration {
	active, _ := ActiveAndWait(approvals, start, end)
	return active
}

// ActiveAndWait is ActiveTime and WaitNs of a run, the waits merged once.
func ActiveAndWait(approvals []Approval, start, end uint64) (active time.Duration, waitNs uint64) {
	waitNs = WaitNs(approvals, start, end)
	if end <= start {
		return 0, waitNs
	}
	return time.Duration(end - start - waitNs), waitNs
}

package safety

import (
	"fmt"
	"testing"
	"time"
)

// TestPolicy: the declared class wins; a project's patterns before the
// ones for all projects; the first match decides; unknown otherwise.
func TestPolicy(t *testing.T) {
	p, err := ParsePolicy([]string{"payments:charge_*=irreversible", "charge_*=non_idempotent", "get_*=read", "get_secret=irreversible"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		project, tool, declared string
		want                    Effect
	}{
		{"payments", "charge_card", "", EffectIrreversible},
		{"shop", "charge_card", "", EffectNonIdempotent},
		{"shop", "get_secret", "", EffectRead}, // the first match decides
		{"shop", "send_email", "", EffectUnknown},
		{"shop", "send_email", "idempotent", EffectIdempotent},
		{"shop", "get_user", "bogus", EffectRead},
	} {
		if got := p.Effect(c.project, c.tool, c.declared); got != c.want {
			t.Errorf("Effect(%s, %s, %q) = %s, want %s", c.project, c.tool, c.declared, got, c.want)
		}
	}
	for _, bad := range []string{"charge", "charge=maybe", "=read", "[=read"} {
		if _, err := ParsePolicy([]string{bad}); err == nil {
			t.Errorf("ParsePolicy(%q): no error", bad)
		}
	}
	var none *Policy
	if none.Effect("p", "x", "") != EffectUnknown {
		t.Error("a nil policy knows a tool")
	}
}

// TestStepStatus: table of what spans say and the status it means.
func TestStepStatus(t *testing.T) {
	for _, c := range []struct {
		f    StepFacts
		want Status
	}{
		{StepFacts{}, StatusOK},
		{StepFacts{Error: true, ErrorType: "timeout"}, StatusAmbiguous},
		{StepFacts{Error: true, Message: "context deadline exceeded"}, StatusAmbiguous},
		{StepFacts{Error: true, HTTPStatus: "502"}, StatusAmbiguous},
		{StepFacts{Error: true, HTTPStatus: "429"}, StatusRetryable},
		{StepFacts{Error: true, ErrorType: "RateLimitError"}, StatusRetryable},
		{StepFacts{Error: true, HTTPStatus: "403"}, StatusDenied},
		{StepFacts{Error: true, ErrorType: "guardrail_violation"}, StatusDenied},
		{StepFacts{Error: true, ErrorType: "ValueError", Message: "bad card number"}, StatusError},
		{StepFacts{Error: true, HTTPStatus: "400"}, StatusError},
		{StepFacts{Declared: "escalated"}, StatusEscalated},
		{StepFacts{Error: true, ErrorType: "timeout", Declared: "denied"}, StatusDenied},
		{StepFacts{GuardrailTriggered: true}, StatusDenied},
		{StepFacts{Deferral: "ApprovalRequired"}, StatusEscalated},
		{StepFacts{Deferral: "CallDeferred"}, StatusOK}, // deferred to another executor, not a human
		{StepFacts{Error: true, Message: "Tool execution was not approved."}, StatusDenied},
		{StepFacts{Error: true, ErrorType: "ToolInputGuardrailTripwireTriggered"}, StatusDenied},
	} {
		if got := StepStatus(c.f); got != c.want {
			t.Errorf("StepStatus(%+v) = %s, want %s", c.f, got, c.want)
		}
	}
}

// TestSignals: runs that must raise a signal and runs that must not.
func TestSignals(t *testing.T) {
	step := func(id, tool string, e Effect, st Status, start uint64) Step {
		return Step{SpanID: id, ParentSpanID: "agent", Tool: tool, Effect: e, Status: st, StartNs: start}
	}
	for _, c := range []struct {
		name  string
		steps []Step
		want  []string // kind@span
	}{
		{"a charge succeeding twice for one step", []Step{
			func() Step { s := step("a", "charge", EffectNonIdempotent, StatusOK, 1); s.StepID = "pay-1"; return s }(),
			func() Step { s := step("b", "charge", EffectNonIdempotent, StatusOK, 2); s.StepID = "pay-1"; return s }(),
		}, []string{"duplicate_side_effect@b"}},
		{"the same arguments twice, no step ids", []Step{
			func() Step { s := step("a", "send", EffectNonIdempotent, StatusOK, 1); s.ArgsHash = "h"; return s }(),
			func() Step { s := step("b", "send", EffectNonIdempotent, StatusOK, 2); s.ArgsHash = "h"; return s }(),
		}, []string{"duplicate_side_effect@b"}},
		{"an idempotent write with the same key twice is fine", []Step{
			func() Step { s := step("a", "upsert", EffectIdempotent, StatusOK, 1); s.StepID = "k"; return s }(),
			func() Step { s := step("b", "upsert", EffectIdempotent, StatusOK, 2); s.StepID = "k"; return s }(),
		}, nil},
		{"two charges for two steps are fine", []Step{
			func() Step { s := step("a", "charge", EffectNonIdempotent, StatusOK, 1); s.StepID = "pay-1"; return s }(),
			func() Step { s := step("b", "charge", EffectNonIdempotent, StatusOK, 2); s.StepID = "pay-2"; return s }(),
		}, nil},
		{"a charge retried after a timeout", []Step{
			step("a", "charge", EffectNonIdempotent, StatusAmbiguous, 1),
			func() Step { s := step("b", "charge", EffectNonIdempotent, StatusOK, 2); s.Retry = true; return s }(),
		}, []string{"unsafe_retry@b"}},
		{"a read retried after a timeout is fine", []Step{
			step("a", "search", EffectRead, StatusAmbiguous, 1),
			func() Step { s := step("b", "search", EffectRead, StatusOK, 2); s.Retry = true; return s }(),
		}, nil},
		{"a charge retried after a clear error is fine", []Step{
			step("a", "charge", EffectNonIdempotent, StatusError, 1),
			func() Step { s := step("b", "charge", EffectNonIdempotent, StatusOK, 2); s.Retry = true; return s }(),
		}, nil},
		{"retry matched by call id across parents", []Step{
			func() Step {
				s := step("a", "charge", EffectNonIdempotent, StatusAmbiguous, 1)
				s.CallID = "c1"
				s.ParentSpanID = "x"
				return s
			}(),
			step("z", "charge", EffectNonIdempotent, StatusOK, 2),
			func() Step {
				s := step("b", "charge", EffectNonIdempotent, StatusOK, 3)
				s.CallID, s.ParentSpanID, s.Retry = "c1", "y", true
				return s
			}(),
		}, []string{"unsafe_retry@b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, s := range Review(Run{Steps: c.steps}, Config{}) {
				got = append(got, string(s.Kind)+"@"+s.SpanID)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("signals %v, want %v", got, c.want)
			}
		})
	}
}

// TestRetryStormAndRunawayLoop: retries under the minimum backoff, and the
// same failing call past the repeat limit — and the runs that must not
// raise them. Times in ms (×1e6 ns); limits 100 ms and 3 repeats.
func TestRetryStormAndRunawayLoop(t *testing.T) {
	ms := uint64(1_000_000)
	call := func(id string, start, end uint64, st Status, retry bool) Step {
		return Step{SpanID: id, ParentSpanID: "agent", Tool: "fetch", Effect: EffectRead, Status: st, Retry: retry,
			CallID: "c", ArgsHash: "h", StartNs: start * ms, EndNs: end * ms}
	}
	l := Limits{MinBackoff: 100 * time.Millisecond, MaxRepeats: 3}
	for _, c := range []struct {
		name  string
		steps []Step
		want  []string
	}{
		// a ends at 50, b starts at 60: 10 ms of backoff.
		{"retried 10 ms after the failure", []Step{call("a", 0, 50, StatusAmbiguous, false), call("b", 60, 90, StatusOK, true)}, []string{"retry_storm@b"}},
		// 100 ms exactly is enough.
		{"retried after 100 ms", []Step{call("a", 0, 50, StatusAmbiguous, false), call("b", 150, 190, StatusOK, true)}, nil},
		{"not a retry", []Step{call("a", 0, 50, StatusOK, false), func() Step { s := call("b", 60, 90, StatusOK, false); s.CallID = "d"; return s }()}, nil},
		// Five failures of the same call (limit 3): one signal, on the fourth; spaced out, so no storm.
		{"the same failing call five times", []Step{call("a", 0, 10, StatusError, false), call("b", 1000, 1010, StatusError, true),
			call("c", 2000, 2010, StatusError, true), call("d", 3000, 3010, StatusError, true), call("e", 4000, 4010, StatusError, true)},
			[]string{"runaway_loop@d"}},
		{"three failures are within the limit", []Step{call("a", 0, 10, StatusError, false), call("b", 1000, 1010, StatusError, true),
			call("c", 2000, 2010, StatusError, true), call("d", 3000, 3010, StatusOK, true)}, nil},
		{"a fourth failure is past it", []Step{call("a", 0, 10, StatusError, false), call("b", 1000, 1010, StatusError, true),
			call("c", 2000, 2010, StatusError, true), call("d", 3000, 3010, StatusError, true)}, []string{"runaway_loop@d"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, s := range Review(Run{Steps: c.steps}, Config{Limits: l}) {
				got = append(got, string(s.Kind)+"@"+s.SpanID)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("signals %v, want %v", got, c.want)
			}
		})
	}
	if d := DefaultLimits(); d.MinBackoff != 100*time.Millisecond || d.MaxRepeats != 5 || d.MaxSteps != 200 || d.Lockstep != 20*time.Millisecond {
		t.Errorf("default limits %+v", d)
	}
}

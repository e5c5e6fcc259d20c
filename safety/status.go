package safety

import (
	"slices"
	"strconv"
	"strings"
)

// Status is how a tool step ended, as the playbooks log it.
type Status string

// The terminal statuses. An ambiguous outcome (a timeout, a 5xx, a reset
// connection, a cancelled call) is unknown, not failed: the call may have
// taken effect.
const (
	StatusOK        Status = "ok"
	StatusRetryable Status = "retryable" // refused before acting: 429, rate limits, 503 with Retry-After…
	StatusAmbiguous Status = "ambiguous"
	StatusDenied    Status = "denied"    // a guardrail or policy refused it
	StatusEscalated Status = "escalated" // handed to a human
	StatusError     Status = "error"
)

// Statuses are the terminal statuses in the order tables show them (the
// API's, the CLI's, the UI's: ui/static/lib/vocab.js lists them again, and
// a test in ui holds the two equal): ok first, then the outcomes from the
// least to the most troubling.
func Statuses() []Status {
	return []Status{StatusOK, StatusRetryable, StatusAmbiguous, StatusDenied, StatusEscalated, StatusError}
}

// ParseStatus reads a status name, case and surrounding space aside; ok is
// false when s names none.
func ParseStatus(s string) (st Status, ok bool) {
	st = Status(strings.ToLower(strings.TrimSpace(s)))
	if !slices.Contains(Statuses(), st) {
		return "", false
	}
	return st, true
}

// StatusAttribute is the span attribute a tool span may declare its
// terminal status with; it wins over what the span's status and error say.
const StatusAttribute = "tally.step.status"

// StepFacts is what a tool span says about how it ended.
type StepFacts struct {
	Error      bool   // the span's status is error
	ErrorType  string // error.type
	Message    string // the status message
	HTTPStatus string // http.response.status_code
	Declared   string // StatusAttribute
	// Deferral is pydantic-ai's pydantic_ai.tool.deferral.name:
	// "ApprovalRequired" hands the call to a human.
	Deferral string
	// GuardrailTriggered: a guardrail on the step tripped (a triggered
	// guardrail span under it, or gen_ai.guardrail.triggered on it).
	GuardrailTriggered bool
}

// ambiguousWords and retryableWords are matched against error.type and the
// status message, lowercased.
var (
	ambiguousWords = []string{"timeout", "timed out", "deadline", "cancel", "connection reset", "econnreset",
		"broken pipe", "eof", "unavailable", "gateway", "internal server error"}
	retryableWords = []string{"rate limit", "rate_limit", "ratelimit", "too many requests", "throttl", "quota"}
	// "not approved" and "rejected by user" are the OpenAI Agents SDK's
	// rejection texts (tool.py DEFAULT_APPROVAL_REJECTION_MESSAGE,
	// run_internal/tool_execution.py).
	deniedWords = []string{"denied", "forbidden", "guardrail", "policy", "not allowed", "blocked", "not approved", "rejected by user",
		"tripwire"}
)

// StepStatus decides a tool step's terminal status: the declared one when
// it is a status name; else denied when a guardrail on it tripped;
// escalated when pydantic-ai deferred it for approval; else ok without an
// error; else by the HTTP status
// (429 retryable, 401/403 denied, 5xx and 408 ambiguous), then by words in
// error.type and the message (rate limits retryable, timeouts and resets
// ambiguous, denials denied); else error.
func StepStatus(f StepFacts) Status {
	if s, ok := ParseStatus(f.Declared); ok {
		return s
	}
	switch {
	case f.GuardrailTriggered:
		return StatusDenied
	case f.Deferral == "ApprovalRequired":
		return StatusEscalated
	case !f.Error:
		return StatusOK
	}
	if code, err := strconv.Atoi(strings.TrimSpace(f.HTTPStatus)); err == nil {
		switch {
		case code == 429:
			return StatusRetryable
		case code == 401 || code == 403:
			return StatusDenied
		case code >= 500 || code == 408:
			return StatusAmbiguous
		}
	}
	text := strings.ToLower(f.ErrorType + " " + f.Message)
	for _, group := range []struct {
		words  []string
		status Status
	}{{retryableWords, StatusRetryable}, {ambiguousWords, StatusAmbiguous}, {deniedWords, StatusDenied}} {
		for _, w := range group.words {
			if strings.Contains(text, w) {
				return group.status
			}
		}
	}
	return StatusError
}

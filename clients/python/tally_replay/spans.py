"""Span helpers for what tally's safety review reads (docs/api.md, "The
safety review and its signals"): a tool span's effect class, its
idempotency key, an approval or a denial, and a run's task, user and
outcome — set on the current OpenTelemetry span when the OpenTelemetry API
is installed. Without it (or without a recording span) each helper does
nothing and returns False; there is no hard dependency.

Attribute names are tally's (safety/effects.go, safety/approvals.go,
safety/status.go, query/outcomes.go, docs/instrumentations.md).
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "EFFECTS",
    "current_span",
    "set_tool_effect",
    "set_idempotency_key",
    "record_approval",
    "approve",
    "deny",
    "set_step_status",
    "set_run",
    "record_outcome",
]

EFFECT_ATTRIBUTE = "tally.tool.effect"
# Not read by tally yet: kept beside the effect class so the review (and a
# reader of the trace) can tell a retried non-idempotent call that reused
# its key from one that did not.
IDEMPOTENCY_KEY_ATTRIBUTE = "tally.tool.idempotency_key"
STEP_STATUS_ATTRIBUTE = "tally.step.status"
APPROVAL_EVENT = "tally.approval"
APPROVAL_DECISION = "tally.approval.decision"
APPROVAL_BY = "tally.approval.by"
APPROVAL_TOOL = "tally.approval.tool"
APPROVAL_WAIT_MS = "tally.approval.wait_ms"
TASK_ATTRIBUTE = "task.name"
USER_ATTRIBUTE = "user.id"
EVALUATION_EVENT = "gen_ai.evaluation.result"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE = "gen_ai.evaluation.score.value"
EVALUATION_LABEL = "gen_ai.evaluation.score.label"
EVALUATION_EXPLANATION = "gen_ai.evaluation.explanation"
EVALUATION_PASSED = "gen_ai.evaluation.passed"

EFFECTS = ("read", "idempotent", "non_idempotent", "irreversible", "unknown")
STEP_STATUSES = ("ok", "retryable", "ambiguous", "denied", "escalated", "error")
DECISIONS = ("approved", "rejected", "timeout", "pending")
_DECISION_ALIASES = {
    "approve": "approved", "yes": "approved", "granted": "approved", "allow": "approved", "allowed": "approved",
    "reject": "rejected", "denied": "rejected", "deny": "rejected", "no": "rejected",
    "timed_out": "timeout", "expired": "timeout",
}


def current_span(span: Any = None) -> Any:
    """span if given, else OpenTelemetry's current span when the API is
    installed and that span records; else None."""
    if span is not None:
        return span
    try:
        from opentelemetry import trace  # type: ignore[import-not-found]
    except ImportError:
        return None
    s = trace.get_current_span()
    is_recording = getattr(s, "is_recording", None)
    if s is None or (callable(is_recording) and not is_recording()):
        return None
    return s


def _set(span: Any, attrs: dict) -> bool:
    s = current_span(span)
    if s is None:
        return False
    for k, v in attrs.items():
        if v is not None:
            s.set_attribute(k, v)
    return True


def set_tool_effect(effect: str, span: Any = None) -> bool:
    """Mark a tool span's effect class: read, idempotent, non_idempotent,
    irreversible or unknown (tally.tool.effect)."""
    e = effect.strip().lower()
    if e not in EFFECTS:
        raise ValueError("tool effect %r: want one of %s" % (effect, ", ".join(EFFECTS)))
    return _set(span, {EFFECT_ATTRIBUTE: e})


def set_idempotency_key(key: str, span: Any = None) -> bool:
    """Record the idempotency key a tool call sent
    (tally.tool.idempotency_key)."""
    if not key:
        raise ValueError("idempotency key: empty")
    return _set(span, {IDEMPOTENCY_KEY_ATTRIBUTE: str(key)})


def set_step_status(status: str, span: Any = None) -> bool:
    """Say how a step ended when the error does not (tally.step.status): ok,
    retryable, ambiguous, denied, escalated or error."""
    s = status.strip().lower()
    if s not in STEP_STATUSES:
        raise ValueError("step status %r: want one of %s" % (status, ", ".join(STEP_STATUSES)))
    return _set(span, {STEP_STATUS_ATTRIBUTE: s})


def record_approval(
    decision: str,
    by: str,
    tool: Optional[str] = None,
    wait_ms: Optional[float] = None,
    span: Any = None,
    as_event: bool = True,
) -> bool:
    """Record a human-in-the-loop decision: an event named tally.approval on
    the span with tally.approval.decision (approved, rejected, timeout,
    pending; approve/deny/expired… are accepted), tally.approval.by,
    tally.approval.tool (the tool it approves; any irreversible tool when
    None) and tally.approval.wait_ms. With as_event=False the attributes go
    on the span itself: a span of its own that lasted while approval was
    pending (start asked, end decided)."""
    d = decision.strip().lower()
    d = _DECISION_ALIASES.get(d, d)
    if d not in DECISIONS:
        raise ValueError("approval decision %r: want one of %s" % (decision, ", ".join(DECISIONS)))
    attrs = {APPROVAL_DECISION: d, APPROVAL_BY: by, APPROVAL_TOOL: tool}
    if as_event:
        s = current_span(span)
        if s is None:
            return False
        if wait_ms is not None:
            attrs[APPROVAL_WAIT_MS] = float(wait_ms)
        s.add_event(APPROVAL_EVENT, {k: v for k, v in attrs.items() if v is not None})
        return True
    return _set(span, attrs)


def approve(by: str, tool: Optional[str] = None, wait_ms: Optional[float] = None, span: Any = None) -> bool:
    """record_approval("approved", …)."""
    return record_approval("approved", by, tool, wait_ms, span)


def deny(by: str, tool: Optional[str] = None, wait_ms: Optional[float] = None, span: Any = None) -> bool:
    """record_approval("rejected", …): a denial."""
    return record_approval("rejected", by, tool, wait_ms, span)


def set_run(task: Optional[str] = None, user: Optional[str] = None, span: Any = None) -> bool:
    """Name the run's task (task.name, on any span of the run) and user
    (user.id)."""
    return _set(span, {TASK_ATTRIBUTE: task, USER_ATTRIBUTE: user})


def record_outcome(
    name: str = "evaluation",
    passed: Optional[bool] = None,
    score: Optional[float] = None,
    label: Optional[str] = None,
    explanation: Optional[str] = None,
    span: Any = None,
) -> bool:
    """Record a run's outcome: an event gen_ai.evaluation.result on the span
    with gen_ai.evaluation.name, .score.value, .score.label, .explanation and
    tally's gen_ai.evaluation.passed (read as the run's outcomes)."""
    s = current_span(span)
    if s is None:
        return False
    attrs = {
        EVALUATION_NAME: name,
        EVALUATION_PASSED: passed,
        EVALUATION_SCORE: float(score) if score is not None else None,
        EVALUATION_LABEL: label,
        EVALUATION_EXPLANATION: explanation,
    }
    s.add_event(EVALUATION_EVENT, {k: v for k, v in attrs.items() if v is not None})
    return True

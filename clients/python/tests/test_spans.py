"""Span helpers: tally's attribute names on the current OpenTelemetry span,
and nothing (no error, no dependency) without the OpenTelemetry API."""

import sys
import types

import pytest

from tally_replay import spans


class FakeSpan:
    def __init__(self, recording=True):
        self.attributes = {}
        self.events = []
        self.recording = recording

    def set_attribute(self, k, v):
        self.attributes[k] = v

    def add_event(self, name, attributes=None):
        self.events.append((name, dict(attributes or {})))

    def is_recording(self):
        return self.recording


@pytest.fixture
def otel(monkeypatch):
    """A stand-in opentelemetry.trace whose current span is a FakeSpan."""
    span = FakeSpan()
    trace = types.ModuleType("opentelemetry.trace")
    trace.get_current_span = lambda: span
    pkg = types.ModuleType("opentelemetry")
    pkg.trace = trace
    monkeypatch.setitem(sys.modules, "opentelemetry", pkg)
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", trace)
    return span


def test_tool_span_attributes(otel):
    assert spans.set_tool_effect("Irreversible")
    assert spans.set_idempotency_key("refund-42")
    assert spans.set_step_status("ambiguous")
    assert otel.attributes == {
        "tally.tool.effect": "irreversible",
        "tally.tool.idempotency_key": "refund-42",
        "tally.step.status": "ambiguous",
    }
    with pytest.raises(ValueError):
        spans.set_tool_effect("dangerous")
    with pytest.raises(ValueError):
        spans.set_step_status("meh")


def test_approvals(otel):
    assert spans.approve("alice@example.com", tool="issue_refund", wait_ms=1200)
    assert spans.deny("bob")
    assert spans.record_approval("expired", "system")
    assert otel.events == [
        ("tally.approval", {"tally.approval.decision": "approved", "tally.approval.by": "alice@example.com",
                            "tally.approval.tool": "issue_refund", "tally.approval.wait_ms": 1200.0}),
        ("tally.approval", {"tally.approval.decision": "rejected", "tally.approval.by": "bob"}),
        ("tally.approval", {"tally.approval.decision": "timeout", "tally.approval.by": "system"}),
    ]
    span = FakeSpan()
    spans.record_approval("approve", "carol", tool="merge", span=span, as_event=False)
    assert span.attributes == {"tally.approval.decision": "approved", "tally.approval.by": "carol",
                               "tally.approval.tool": "merge"}
    with pytest.raises(ValueError):
        spans.record_approval("maybe", "x")


def test_run_task_user_and_outcome(otel):
    assert spans.set_run(task="answer_question", user="user-0008")
    assert otel.attributes == {"task.name": "answer_question", "user.id": "user-0008"}
    assert spans.record_outcome("correctness", passed=True, score=0.9, label="pass", explanation="cites docs")
    assert otel.events == [("gen_ai.evaluation.result", {
        "gen_ai.evaluation.name": "correctness", "gen_ai.evaluation.passed": True,
        "gen_ai.evaluation.score.value": 0.9, "gen_ai.evaluation.score.label": "pass",
        "gen_ai.evaluation.explanation": "cites docs"})]


def test_not_recording_span_is_left_alone(otel):
    otel.recording = False
    assert spans.set_tool_effect("read") is False
    assert otel.attributes == {}


def test_without_opentelemetry_nothing_happens(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import fails
    assert spans.set_tool_effect("read") is False
    assert spans.approve("alice") is False
    assert spans.record_outcome("x", passed=False) is False
    explicit = FakeSpan()
    assert spans.set_run(task="t", span=explicit) and explicit.attributes == {"task.name": "t"}

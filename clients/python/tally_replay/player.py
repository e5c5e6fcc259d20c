"""The Player: answers an agent's tool calls from a fixture, with the Go
player's semantics (replay/player.go, replay/fault.go; shared vectors in
replay/testdata/vectors/)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from .canonical import args_hash, args_text, canonical_json, compact, encode_canonical, encode_string, is_json, parse_json
from .faults import INJECTION, TRUNCATED, Fault, FaultRule, _go_quote, fault_error, parse_fault_rule
from .fixture import Call, Fixture, load

__all__ = [
    "Player",
    "Report",
    "ReplayError",
    "RecordedToolError",
    "UnexpectedCallError",
    "NotRecordedError",
    "ResultNotCapturedError",
    "ArgDiff",
]


class ReplayError(Exception):
    """Base of the errors a Player raises (injected faults excepted: those are
    FaultError, and a timeout is also a TimeoutError)."""


class RecordedToolError(ReplayError):
    """The error a recorded call ended with, raised in place of a result:
    error_type and message as recorded; result when one was recorded
    beside the error (its JSON text in result_json)."""

    def __init__(self, seq: int, tool: str, error_type: str, message: str, result_json: Optional[str] = None):
        self.seq = seq
        self.tool = tool
        self.error_type = error_type
        self.message = message
        self.result_json = result_json
        self.result = json.loads(result_json) if result_json is not None else None
        super().__init__("replay: recorded error from call #%d %s: %s: %s" % (seq, tool, error_type, message))


class NotRecordedError(ReplayError, LookupError):
    """A call the fixture does not hold (non-strict player): the agent may
    fall back to the real tool."""


class ResultNotCapturedError(ReplayError):
    """The call matched a recorded call whose result was not captured."""


class ArgDiff:
    """One top-level argument key that differs (key "" when the arguments
    are compared whole); values are canonical JSON, "(absent)" when missing."""

    def __init__(self, key: str, recorded: str, got: str):
        self.key = key
        self.recorded = recorded
        self.got = got

    def __repr__(self) -> str:
        return "ArgDiff(%r, recorded=%r, got=%r)" % (self.key, self.recorded, self.got)


class UnexpectedCallError(ReplayError):
    """A strict player's answer to a call the fixture does not hold: names the
    closest recorded call (closest, a Call or None) and the differing
    arguments (diffs)."""

    def __init__(self, tool: str, arguments: str, args_hash_: str, closest: Optional[Call], other_tool: bool,
                 diffs: List[ArgDiff], used: int):
        self.tool = tool
        self.arguments = arguments
        self.args_hash = args_hash_
        self.closest = closest
        self.other_tool = other_tool
        self.diffs = diffs
        self.used = used
        super().__init__(self._message())

    def _message(self) -> str:
        b = ["unexpected call %s(args %s): " % (self.tool, self.arguments)]
        if self.closest is None:
            b.append("the fixture records no calls")
            return "".join(b)
        if self.other_tool:
            b.append("no recorded call of tool %s; " % _go_quote(self.tool))
        b.append("closest recorded call #%d %s " % (self.closest.seq, self.closest.tool))
        if not self.diffs:
            if self.other_tool:
                b.append("has the same arguments")
            else:
                b.append("has the same arguments but its %d recorded answer(s) were already used" % self.used)
            return "".join(b)
        b.append("differs ")
        for i, d in enumerate(self.diffs):
            if i > 0:
                b.append("; ")
            if d.key == "":
                b.append("in arguments: recorded %s, got %s" % (d.recorded, d.got))
            else:
                if i == 0:
                    b.append("at ")
                b.append("%s: recorded %s, got %s" % (_go_quote(d.key), d.recorded, d.got))
        return "".join(b)


class Report:
    """What a replay left over: unmet (recorded calls never made),
    unexpected (calls nothing answered), faults (the faults injected, in
    order: not problems). Each a list of dicts, as tally's GET /report."""

    def __init__(self, unmet: List[dict], unexpected: List[dict], faults: List[dict]):
        self.unmet = unmet
        self.unexpected = unexpected
        self.faults = faults

    @property
    def ok(self) -> bool:
        return not self.unmet and not self.unexpected

    def __bool__(self) -> bool:  # truthy when there is something to report
        return not self.ok

    def to_dict(self) -> dict:
        return {"unmet": self.unmet, "unexpected": self.unexpected, "faults": self.faults}

    def text(self) -> str:
        """"" when ok; else each problem on its own line (Go's Report.Err)."""
        if self.ok:
            return ""
        b = ["replay: %d recorded call(s) never made, %d unexpected call(s)" % (len(self.unmet), len(self.unexpected))]
        for u in self.unmet:
            line = "  never made: #%d %s(args %s)" % (u["seq"], u["tool"], u["arguments"])
            if u["trace_id"]:
                line += " in trace %s" % u["trace_id"]
            b.append(line)
        for u in self.unexpected:
            b.append("  %s" % u["message"])
        return "\n".join(b)

    def raise_for_problems(self) -> None:
        if not self.ok:
            raise AssertionError(self.text())

    def __str__(self) -> str:
        return self.text() or "replay: every recorded call was made, nothing unexpected"


class _Recorded:
    __slots__ = ("call", "args", "args_ok", "any_args", "result", "has_res")

    def __init__(self, call: Call):
        self.call = call
        self.args: Optional[str] = None  # canonical JSON, or the text as recorded
        self.args_ok = False
        if call.has_arguments:
            self.args, self.args_ok = call.arguments_json, True
        elif call.arguments_text != "":
            self.args = call.arguments_text
            try:
                self.args, self.args_ok = canonical_json(call.arguments_text), True
            except ValueError:
                pass
        self.any_args = False
        self.result: Optional[str] = None  # compact JSON text
        self.has_res = False
        if call.has_result:
            self.result, self.has_res = call.result_json, True
        elif call.result_text != "":
            self.result, self.has_res = encode_string(call.result_text), True


FixtureLike = Union[Fixture, str, "os.PathLike[str]"]


class Player:
    """Answers tool calls from one fixture; thread-safe; call() for sync
    code, acall() for async code.

    A call matches by (tool, args_hash of its canonical arguments). Identical
    calls get their recorded answers in recorded order. A recorded call
    without arguments and args_hash (capture was off) matches any call of its
    tool once calls with matching arguments are used up. strict=True raises
    UnexpectedCallError for a call the fixture does not hold, naming the
    closest recorded call; otherwise NotRecordedError. faults: rules (the
    ``--fault`` syntax or FaultRule) over the fixture's own faults, a later
    rule winning.
    """

    def __init__(self, fixture: FixtureLike, strict: bool = False, faults: Iterable[Union[str, FaultRule]] = ()):
        if not isinstance(fixture, Fixture):
            fixture = load(fixture)
        self.fixture = fixture
        self.trace_id = fixture.trace_id
        self.strict = strict
        self._rules = [parse_fault_rule(r) for r in faults]
        self._lock = threading.Lock()
        calls = sorted(fixture.calls, key=lambda c: c.seq)  # stable
        self._calls: List[_Recorded] = []
        self._by_key: Dict[Tuple[str, str], List[int]] = {}
        self._any_args: Dict[str, List[int]] = {}
        for c in calls:
            rc = _Recorded(c)
            h = c.args_hash
            if h == "" and rc.args is not None:
                h = args_hash(rc.args)
            rc.any_args = h == ""
            i = len(self._calls)
            self._calls.append(rc)
            if rc.any_args:
                self._any_args.setdefault(c.tool, []).append(i)
            else:
                self._by_key.setdefault((c.tool, h), []).append(i)
        n = len(self._calls)
        self._used = [False] * n
        self._unexpected: List[dict] = []
        self._injected: List[dict] = []
        self._faults: List[Optional[Fault]] = [None] * n
        self._fault_left = [0] * n
        for i, rc in enumerate(self._calls):
            f = rc.call.fault
            for r in self._rules:
                if r.selects(rc.call.seq, rc.call.tool):
                    f = r.fault
            if f is not None:
                self._faults[i] = f.copy()
                self._fault_left[i] = max(f.attempts, 1)

    # -- answering -------------------------------------------------------

    def call(self, tool: str, args: Any = None) -> Any:
        """Answer a call: the recorded result as a Python value (a result
        recorded as text comes back as str). args may be JSON text (str or
        bytes; non-JSON text is matched as is) or any JSON-serializable value
        (None is null). Raises RecordedToolError, FaultError (FaultTimeout is
        a TimeoutError), UnexpectedCallError (strict) or NotRecordedError,
        ResultNotCapturedError."""
        return json.loads(self.call_raw(tool, args))

    async def acall(self, tool: str, args: Any = None) -> Any:
        """call() for async code."""
        return self.call(tool, args)

    def call_raw(self, tool: str, args: Any = None) -> str:
        """call(), answering with the result's compact JSON text (byte for
        byte what the Go player answers)."""
        raw = args_text(args)
        h = args_hash(raw)
        with self._lock:
            i = self._take(self._by_key.get((tool, h), ()))
            if i is None:
                i = self._take(self._any_args.get(tool, ()))
            if i is None:
                uce = self._explain(tool, raw, h)
                self._unexpected.append({
                    "trace_id": self.trace_id,
                    "tool": tool,
                    "arguments": uce.arguments,
                    "args_hash": h,
                    "message": str(uce),
                })
                if self.strict:
                    raise uce
                raise NotRecordedError("replay: call not recorded: %s(args %s)" % (tool, uce.arguments))
            rc = self._calls[i]
            f = self._faults[i]
            if f is not None and self._fault_left[i] > 0:
                self._used[i] = False  # the recording answers once the fault's attempts are spent
                f.validate()
                self._fault_left[i] -= 1
                self._injected.append({"trace_id": self.trace_id, "seq": rc.call.seq, "tool": rc.call.tool, "kind": f.kind})
                return _answer_fault(rc, f)
            if rc.call.error is not None:
                raise RecordedToolError(rc.call.seq, rc.call.tool, rc.call.error["type"], rc.call.error["message"],
                                        rc.result)
            if not rc.has_res:
                raise ResultNotCapturedError(
                    "replay: recorded result was not captured: call #%d %s" % (rc.call.seq, rc.call.tool))
            return rc.result  # type: ignore[return-value]

    async def acall_raw(self, tool: str, args: Any = None) -> str:
        return self.call_raw(tool, args)

    def tool(self, name: str):
        """A plain function answering calls of tool name: f(**kwargs), or
        f(args) with one positional argument (a dict or JSON text)."""

        def replayed(*a: Any, **kw: Any) -> Any:
            if a and kw:
                raise TypeError("replayed tool %s: pass arguments either as one value or as keywords" % name)
            if len(a) > 1:
                raise TypeError("replayed tool %s: takes one positional argument" % name)
            return self.call(name, a[0] if a else kw)

        replayed.__name__ = name
        return replayed

    def _take(self, queue: Sequence[int]) -> Optional[int]:
        for i in queue:
            if not self._used[i]:
                self._used[i] = True
                return i
        return None

    def _explain(self, tool: str, raw: str, h: str) -> UnexpectedCallError:
        got, got_ok = raw, False
        try:
            got, got_ok = canonical_json(raw), True
        except ValueError:
            pass
        shown = _display_args(raw)
        same_tool = any(rc.call.tool == tool for rc in self._calls)
        best, best_score, best_diffs = -1, 0, []  # type: int, int, List[ArgDiff]
        for i, rc in enumerate(self._calls):
            if same_tool and rc.call.tool != tool:
                continue
            diffs = _diff_args(rc.args, rc.args_ok, got, got_ok)
            score = len(diffs) * 2 + (1 if self._used[i] else 0)
            if best < 0 or score < best_score:
                best, best_score, best_diffs = i, score, diffs
        if best < 0:
            return UnexpectedCallError(tool, shown, h, None, False, [], 0)
        closest = self._calls[best].call
        used = 0
        if not best_diffs:
            for rc in self._calls:
                if rc.call.tool == closest.tool and rc.args == self._calls[best].args:
                    used += 1
        return UnexpectedCallError(tool, shown, h, closest, not same_tool, best_diffs, used)

    # -- reporting -------------------------------------------------------

    def report(self) -> Report:
        """The recorded calls never made and the calls nothing answered."""
        with self._lock:
            unmet = [
                {
                    "trace_id": self.trace_id,
                    "seq": rc.call.seq,
                    "tool": rc.call.tool,
                    "args_hash": rc.call.args_hash,
                    "arguments": rc.args if rc.args is not None else "",
                }
                for i, rc in enumerate(self._calls)
                if not self._used[i]
            ]
            return Report(unmet, list(self._unexpected), list(self._injected))


def _display_args(raw: str) -> str:
    """Arguments as sent: compacted when JSON (key order kept)."""
    return compact(raw) if is_json(raw) else raw


def _object_of(b: Optional[str], ok: bool) -> Optional[Dict[str, str]]:
    if not ok or not b or b[0] != "{":
        return None
    v = parse_json(b)
    return {k: encode_canonical(x) for k, x in v.items()}


def _diff_args(recorded: Optional[str], recorded_ok: bool, got: str, got_ok: bool) -> List[ArgDiff]:
    rec = _object_of(recorded, recorded_ok)
    gt = _object_of(got, got_ok)
    if rec is None or gt is None:
        if (recorded or "") == got:
            return []
        return [ArgDiff("", _shorten(_show_value(recorded)), _shorten(_show_value(got)))]
    keys = sorted(set(rec) | set(gt), key=lambda k: k.encode("utf-8", "surrogatepass"))
    diffs = []
    for k in keys:
        r, g = rec.get(k), gt.get(k)
        if r is not None and g is not None and r == g:
            continue
        diffs.append(ArgDiff(k, _shorten(r) if r is not None else "(absent)", _shorten(g) if g is not None else "(absent)"))
    return diffs


def _show_value(b: Optional[str]) -> str:
    return b if b else "(none)"


def _shorten(s: str) -> str:
    limit = 120
    if len(s.encode("utf-8", "surrogatepass")) <= limit or len(s) <= limit:
        return s
    return s[:limit] + "…"


_GO_SPACE = set("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                "\u2028\u2029\u202f\u205f\u3000")


def _go_trim_space(s: str) -> str:
    i, j = 0, len(s)
    while i < j and s[i] in _GO_SPACE:
        i += 1
    while j > i and s[j - 1] in _GO_SPACE:
        j -= 1
    return s[i:j]


def _result_text(rc: _Recorded) -> str:
    """A recorded result as text: a JSON string's content, other JSON as
    written, "" when none was captured."""
    if not rc.has_res or rc.result is None:
        return ""
    v = parse_json(rc.result)
    if isinstance(v, str) and not hasattr(v, "value"):
        return v
    return rc.result


def _answer_fault(rc: _Recorded, f: Fault) -> str:
    err = fault_error(rc.call.seq, rc.call.tool, f)
    if err is not None:
        raise err
    text = _result_text(rc)
    if f.kind == TRUNCATED:
        b = text.encode("utf-8", "surrogatepass")
        keep = len(b) // 2
        if f.bytes > 0:
            keep = min(f.bytes, len(b))
        # Go escapes each stray byte of a cut character as \ufffd:
        # surrogateescape maps each to a lone surrogate, which
        # encode_string writes as \ufffd.
        return encode_string(b[:keep].decode("utf-8", "surrogateescape"))
    assert f.kind == INJECTION
    return encode_string(_go_trim_space(text + "\n\n" + f.text))

"""Loading tally.replay/v1 fixtures (replay/FORMAT.md), validated against the
format's JSON Schema (fixture.schema.json, shipped with this package: a copy
of replay/fixture.schema.json) with errors that name the field."""

from __future__ import annotations

import json
import os
import re
from typing import Any, List, Optional, Union

from .canonical import JSONNumber, compact, encode_canonical, parse_json_spans
from .faults import Fault

__all__ = ["FORMAT_V1", "Fixture", "Call", "FixtureError", "load", "parse", "schema"]

FORMAT_V1 = "tally.replay/v1"

_SCHEMA: Optional[dict] = None


def schema() -> dict:
    """The fixture format's JSON Schema (draft 2020-12)."""
    global _SCHEMA
    if _SCHEMA is None:
        with open(os.path.join(os.path.dirname(__file__), "fixture.schema.json"), encoding="utf-8") as f:
            _SCHEMA = json.load(f)
    return _SCHEMA


class FixtureError(ValueError):
    """A fixture that cannot be read. field is the JSON path of the offending
    field (e.g. "calls[2].seq"), "" for the document as a whole."""

    def __init__(self, message: str, field: str = "", path: str = ""):
        self.field = field
        self.path = path
        self.reason = message
        where = "%s: " % path if path else ""
        at = "%s: " % field if field else ""
        super().__init__("%sreplay: parse fixture: %s%s" % (where, at, message))


def plain(v: Any) -> Any:
    """A parsed value with JSONNumbers turned into int/float."""
    if isinstance(v, JSONNumber):
        return v.value()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


class Call:
    """One recorded tool call (see FORMAT.md, calls[])."""

    def __init__(self, d: dict, raw: Optional[dict] = None):
        # raw: {key: text} of d's members as written in the file.
        raw = raw or {}
        self.seq: int = d["seq"].value()
        self.span_id: str = d["span_id"]
        self.parent_span_id: str = d.get("parent_span_id", "")
        self.started_at: str = d["started_at"]
        self.tool: str = d["tool"]
        self.tool_call_id: str = d.get("tool_call_id", "")
        self.has_arguments = "arguments" in d
        # Canonical JSON text of the arguments / result (None when absent).
        self.arguments_json: Optional[str] = encode_canonical(d["arguments"]) if "arguments" in d else None
        self.arguments: Any = plain(d.get("arguments"))
        self.arguments_text: str = d.get("arguments_text", "")
        self.args_hash: str = d["args_hash"]
        self.has_result = "result" in d
        # The result as written, compacted (what Go's player answers with):
        # exported fixtures hold it in canonical form already.
        self.result_json: Optional[str] = None
        if "result" in d:
            self.result_json = compact(raw["result"]) if "result" in raw else encode_canonical(d["result"])
        self.result: Any = plain(d.get("result"))
        self.result_text: str = d.get("result_text", "")
        self.error: Optional[dict] = dict(d["error"]) if "error" in d else None
        self.status: str = d["status"]
        self.attempt: int = d["attempt"].value()
        self.duration_ms: float = d["duration_ms"].value()
        self.missing: List[str] = list(d.get("missing", []))
        self.truncated: List[str] = list(d.get("truncated", []))
        self.fault: Optional[Fault] = None
        if "fault" in d:
            f = plain(d["fault"])
            self.fault = Fault(
                f["kind"],
                f.get("attempts", 0),
                f.get("retry_after_seconds", 0),
                f.get("status", 0),
                f.get("bytes", 0),
                f.get("text", ""),
            )

    def __repr__(self) -> str:
        return "Call(#%d %s)" % (self.seq, self.tool)


class Fixture:
    """One recorded run: run (dict), calls (list of Call, as in the file),
    inferences (list of dicts), missing (dict), data (the whole document as
    plain Python values)."""

    def __init__(self, doc: dict, spans: Optional[dict] = None, src: str = ""):
        self.data: dict = plain(doc)
        self.format: str = doc["format"]
        self.run: dict = self.data["run"]
        self.trace_id: str = self.run["trace_id"]
        self.calls: List[Call] = [Call(c, _raw_members(c, spans, src)) for c in doc["calls"]]
        self.inferences: List[dict] = self.data.get("inferences", [])
        self.missing: dict = self.data["missing"]

    def __repr__(self) -> str:
        return "Fixture(trace %s, %d calls)" % (self.trace_id, len(self.calls))


def load(path: Union[str, "os.PathLike[str]"]) -> Fixture:
    """Read and validate the fixture file at path. Raises FixtureError (a
    ValueError) naming the field, or OSError."""
    with open(path, "rb") as f:
        b = f.read()
    try:
        return parse(b)
    except FixtureError as e:
        raise FixtureError(e.reason, e.field, os.fspath(path)) from None


def parse(data: Union[str, bytes, dict]) -> Fixture:
    """Parse and validate a fixture from its JSON text (or an already decoded
    dict). Rejects a document whose format is not tally.replay/v1, unknown
    fields, and anything else the JSON Schema rejects."""
    if isinstance(data, dict):
        data = json.dumps(data, ensure_ascii=False)
    try:
        doc, spans, src = parse_json_spans(data)
    except ValueError:
        raise FixtureError("not valid JSON") from None
    if not isinstance(doc, dict):
        raise FixtureError("not a tally replay fixture (not a JSON object)")
    if "format" not in doc:
        raise FixtureError('not a tally replay fixture (no "format" field)')
    if doc["format"] != FORMAT_V1 or isinstance(doc["format"], JSONNumber):
        raise FixtureError(
            "unsupported format %s: this build reads %s" % (json.dumps(plain(doc["format"])), json.dumps(FORMAT_V1)),
            "format",
        )
    _Validator(schema()).check(doc, schema(), "")
    for i, c in enumerate(doc["calls"]):
        if "fault" in c:
            try:
                Call(c).fault.validate()  # type: ignore[union-attr]
            except ValueError as e:
                raise FixtureError(str(e), "calls[%d].fault" % i) from None
    return Fixture(doc, spans, src)


def _raw_members(obj: dict, spans: Optional[dict], src: str) -> dict:
    if not spans or id(obj) not in spans:
        return {}
    return {k: src[a:b] for k, (a, b) in spans[id(obj)].items()}


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if v is True or v is False:
        return "boolean"
    if isinstance(v, JSONNumber):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return type(v).__name__


def _show(v: Any) -> str:
    s = encode_canonical(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _is_type(v: Any, t: str) -> bool:
    n = _type_name(v)
    if t == "integer":
        # Go decodes integers from integer literals only (no fraction or
        # exponent), so a fixture Go rejects is rejected here too.
        return n == "number" and re.fullmatch(r"-?(0|[1-9][0-9]*)", v) is not None
    return n == t


class _Validator:
    """The JSON Schema keywords fixture.schema.json uses: type, const, enum,
    required, properties, additionalProperties, items, $ref, minimum,
    maximum, minLength, pattern, uniqueItems."""

    def __init__(self, root: dict):
        self.root = root

    def fail(self, field: str, msg: str) -> None:
        raise FixtureError(msg, field)

    def check(self, v: Any, s: dict, field: str) -> None:
        if "$ref" in s:
            ref = s["$ref"]
            assert ref.startswith("#/$defs/")
            self.check(v, self.root["$defs"][ref[len("#/$defs/") :]], field)
        if "const" in s and (v != s["const"] or isinstance(v, JSONNumber)):
            self.fail(field, "must be %s, got %s" % (json.dumps(s["const"]), _show(v)))
        if "enum" in s:
            if isinstance(v, JSONNumber) or v not in s["enum"]:
                self.fail(field, "must be one of %s, got %s" % (", ".join(json.dumps(e) for e in s["enum"]), _show(v)))
        t = s.get("type")
        if t is not None and not _is_type(v, t):
            self.fail(field, "must be %s %s, got %s" % ("an" if t[0] in "aeiou" else "a", t, _show(v)))
        if isinstance(v, JSONNumber):
            if "minimum" in s and float(v) < s["minimum"]:
                self.fail(field, "must be ≥ %s, got %s" % (s["minimum"], v))
            if "maximum" in s and float(v) > s["maximum"]:
                self.fail(field, "must be ≤ %s, got %s" % (s["maximum"], v))
        elif isinstance(v, str):
            if "minLength" in s and len(v) < s["minLength"]:
                self.fail(field, "must not be empty" if s["minLength"] == 1 else "is too short")
            if "pattern" in s and re.search(s["pattern"], v) is None:
                self.fail(field, "%s does not match %s" % (json.dumps(v, ensure_ascii=False), s["pattern"]))
        elif isinstance(v, dict):
            props = s.get("properties", {})
            for k in s.get("required", []):
                if k not in v:
                    self.fail(_join(field, k), "is required")
            if s.get("additionalProperties") is False:
                for k in v:
                    if k not in props:
                        self.fail(_join(field, k), "unknown field (allowed: %s)" % ", ".join(sorted(props)))
            for k, sub in props.items():
                if k in v:
                    self.check(v[k], sub, _join(field, k))
        elif isinstance(v, list):
            if "items" in s:
                for i, x in enumerate(v):
                    self.check(x, s["items"], "%s[%d]" % (field, i))
            if s.get("uniqueItems"):
                seen = set()
                for i, x in enumerate(v):
                    key = encode_canonical(x)
                    if key in seen:
                        self.fail("%s[%d]" % (field, i), "duplicate item %s" % _show(x))
                    seen.add(key)


def _join(field: str, key: str) -> str:
    return key if not field else field + "." + key

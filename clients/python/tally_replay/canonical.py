"""Canonical JSON and argument hashes, byte for byte as tally's Go package
support/canonical computes them (replay/testdata/vectors/canonical.json holds
the shared vectors).

The canonical form of a JSON text: object keys sorted by the bytes of their
UTF-8 text at every level (the last of duplicate keys wins), arrays in order,
no whitespace, numbers kept as their literal text (``1.0`` and ``1`` stay
distinct), strings re-encoded as Go's encoding/json does without HTML
escaping (U+2028 and U+2029 escaped, lone surrogates and invalid UTF-8 as
U+FFFD).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import sys
from typing import Any, List, Optional, Tuple, Union

__all__ = [
    "JSONNumber",
    "canonical_json",
    "args_hash",
    "args_text",
    "parse_json",
    "encode_canonical",
    "encode_string",
    "compact",
    "is_json",
]

_MAX_DEPTH = 10000  # encoding/json's nesting limit


def _per_byte_replace(err: UnicodeDecodeError) -> Tuple[str, int]:
    # Go replaces each invalid byte with U+FFFD; Python's "replace" would
    # replace a maximal invalid subsequence with one.
    return "\ufffd" * (err.end - err.start), err.end


codecs.register_error("tally_per_byte_replace", _per_byte_replace)


def decode_utf8(b: bytes) -> str:
    """Decode UTF-8 the way Go reads it: each invalid byte becomes U+FFFD."""
    return b.decode("utf-8", "tally_per_byte_replace")


def _to_bytes(text: Union[str, bytes, bytearray]) -> bytes:
    if isinstance(text, (bytes, bytearray)):
        return bytes(text)
    return text.encode("utf-8", "surrogatepass")


class JSONNumber(str):
    """A JSON number kept as its literal text (a str subclass)."""

    __slots__ = ()

    def value(self) -> Union[int, float]:
        if any(c in self for c in ".eE"):
            return float(self)
        return int(self)


class _Invalid(Exception):
    pass


_HEX = "0123456789abcdefABCDEF"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class _Parser:
    """A strict JSON parser (json.Valid's grammar) returning Python values:
    dict (last duplicate wins), list, str, True/False/None and JSONNumber."""

    def __init__(self, src: str, spans: Optional[dict] = None):
        self.s = src
        self.i = 0
        self.depth = 0
        # spans, when given, maps id(object) -> {key: (start, end)}: where
        # each member's value is in src.
        self.spans = spans

    def ws(self) -> None:
        s, i, n = self.s, self.i, len(self.s)
        while i < n and s[i] in " \t\n\r":
            i += 1
        self.i = i

    def parse_document(self) -> Any:
        v = self.value()
        self.ws()
        if self.i != len(self.s):
            raise _Invalid()
        return v

    def value(self) -> Any:
        self.ws()
        if self.i >= len(self.s):
            raise _Invalid()
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self.string()
        if c == "t":
            return self.lit("true", True)
        if c == "f":
            return self.lit("false", False)
        if c == "n":
            return self.lit("null", None)
        if c == "-" or "0" <= c <= "9":
            return self.number()
        raise _Invalid()

    def lit(self, word: str, v: Any) -> Any:
        if not self.s.startswith(word, self.i):
            raise _Invalid()
        self.i += len(word)
        return v

    def number(self) -> JSONNumber:
        s, start = self.s, self.i
        i, n = self.i, len(s)
        if i < n and s[i] == "-":
            i += 1
        if i < n and s[i] == "0":
            i += 1
        elif i < n and "1" <= s[i] <= "9":
            while i < n and "0" <= s[i] <= "9":
                i += 1
        else:
            raise _Invalid()
        if i < n and s[i] == ".":
            i += 1
            j = i
            while i < n and "0" <= s[i] <= "9":
                i += 1
            if i == j:
                raise _Invalid()
        if i < n and s[i] in "eE":
            i += 1
            if i < n and s[i] in "+-":
                i += 1
            j = i
            while i < n and "0" <= s[i] <= "9":
                i += 1
            if i == j:
                raise _Invalid()
        self.i = i
        return JSONNumber(s[start:i])

    def open(self) -> None:
        self.i += 1
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Invalid()

    def arr(self) -> list:
        self.open()
        out: list = []
        self.ws()
        if self.i < len(self.s) and self.s[self.i] == "]":
            self.i += 1
            self.depth -= 1
            return out
        while True:
            out.append(self.value())
            self.ws()
            c = self.s[self.i] if self.i < len(self.s) else ""
            if c == "]":
                self.i += 1
                self.depth -= 1
                return out
            if c != ",":
                raise _Invalid()
            self.i += 1

    def obj(self) -> dict:
        self.open()
        out: dict = {}
        self.ws()
        if self.i < len(self.s) and self.s[self.i] == "}":
            self.i += 1
            self.depth -= 1
            return out
        while True:
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] != '"':
                raise _Invalid()
            k = self.string()
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] != ":":
                raise _Invalid()
            self.i += 1
            self.ws()
            start = self.i
            v = self.value()
            out.pop(k, None)  # a later duplicate wins (and moves last)
            out[k] = v
            if self.spans is not None:
                self.spans.setdefault(id(out), {})[k] = (start, self.i)
            self.ws()
            c = self.s[self.i] if self.i < len(self.s) else ""
            if c == "}":
                self.i += 1
                self.depth -= 1
                return out
            if c != ",":
                raise _Invalid()
            self.i += 1

    def string(self) -> str:
        s, n = self.s, len(self.s)
        i = self.i + 1
        parts: List[str] = []
        start = i
        while True:
            if i >= n:
                raise _Invalid()
            c = s[i]
            if c == '"':
                parts.append(s[start:i])
                self.i = i + 1
                return "".join(parts)
            if c < " ":
                raise _Invalid()
            if c == "\\":
                parts.append(s[start:i])
                if i + 1 >= n:
                    raise _Invalid()
                e = s[i + 1]
                if e in _ESCAPES:
                    parts.append(_ESCAPES[e])
                    i += 2
                elif e == "u":
                    r = self.hex4(i + 2)
                    i += 6
                    if 0xD800 <= r <= 0xDFFF:
                        # A high surrogate followed by an escaped low one
                        # is a pair; anything else is U+FFFD, as in Go.
                        if r < 0xDC00 and i + 6 <= n and s[i] == "\\" and s[i + 1] == "u":
                            try:
                                r2 = self.hex4(i + 2)
                            except _Invalid:
                                r2 = -1
                            if 0xDC00 <= r2 <= 0xDFFF:
                                parts.append(chr(0x10000 + ((r - 0xD800) << 10) + (r2 - 0xDC00)))
                                i += 6
                                start = i
                                continue
                        parts.append("\ufffd")
                    else:
                        parts.append(chr(r))
                else:
                    raise _Invalid()
                start = i
                continue
            if "\ud800" <= c <= "\udfff":
                # A lone surrogate in a Python str (not valid UTF-8 for Go).
                parts.append(s[start:i])
                parts.append("\ufffd" * len(c.encode("utf-8", "surrogatepass")))
                i += 1
                start = i
                continue
            i += 1

    def hex4(self, at: int) -> int:
        h = self.s[at : at + 4]
        if len(h) != 4 or any(c not in _HEX for c in h):
            raise _Invalid()
        return int(h, 16)


def _parse(text: Union[str, bytes, bytearray]) -> Any:
    src = decode_utf8(text) if isinstance(text, (bytes, bytearray)) else text
    p = _Parser(src)
    try:
        return p.parse_document()
    except RecursionError:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 4 * _MAX_DEPTH + 1000))
        try:
            return _Parser(src).parse_document()
        finally:
            sys.setrecursionlimit(old)


def parse_json(text: Union[str, bytes, bytearray]) -> Any:
    """Parse JSON text strictly; numbers come back as JSONNumber (their
    literal text). Raises ValueError when text is not exactly one JSON value."""
    try:
        return _parse(text)
    except _Invalid:
        raise ValueError("canonical: decode JSON: invalid JSON") from None


def parse_json_spans(text: Union[str, bytes, bytearray]) -> Tuple[Any, dict, str]:
    """parse_json, also returning where each object member's value is in the
    decoded source: (value, {id(object): {key: (start, end)}}, source)."""
    src = decode_utf8(text) if isinstance(text, (bytes, bytearray)) else text
    spans: dict = {}
    try:
        return _Parser(src, spans).parse_document(), spans, src
    except _Invalid:
        raise ValueError("canonical: decode JSON: invalid JSON") from None
    except RecursionError:
        raise ValueError("canonical: decode JSON: nested too deeply for this parser") from None


def is_json(text: Union[str, bytes, bytearray]) -> bool:
    try:
        _parse(text)
        return True
    except _Invalid:
        return False


def encode_string(s: str) -> str:
    """A JSON string escaped exactly as Go's encoding/json escapes it with HTML
    escaping off."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            if ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\t":
                out.append("\\t")
            elif ch == "\b":
                out.append("\\b")
            elif ch == "\f":
                out.append("\\f")
            else:
                out.append("\\u00%02x" % o)
        elif o == 0x2028 or o == 0x2029:
            out.append("\\u%04x" % o)
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _key_bytes(k: str) -> bytes:
    return k.encode("utf-8", "surrogatepass")


def encode_canonical(v: Any) -> str:
    """The canonical text of a parsed value (JSONNumber keeps its literal;
    plain int/float/bool are encoded as Python's json module does)."""
    parts: List[str] = []
    _enc(v, parts)
    return "".join(parts)


def _enc(v: Any, out: List[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, JSONNumber):
        out.append(str.__str__(v))
    elif isinstance(v, str):
        out.append(encode_string(v))
    elif isinstance(v, (int, float)):
        out.append(json.dumps(v, allow_nan=False))
    elif isinstance(v, dict):
        out.append("{")
        first = True
        for k in sorted(v, key=_key_bytes):
            if not first:
                out.append(",")
            first = False
            out.append(encode_string(k))
            out.append(":")
            _enc(v[k], out)
        out.append("}")
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            _enc(x, out)
        out.append("]")
    else:
        raise TypeError("canonical: cannot encode %r" % type(v).__name__)


def canonical_json(text: Union[str, bytes, bytearray]) -> str:
    """The canonical form of one JSON text. Raises ValueError when text is not
    exactly one valid JSON value (surrounding whitespace is allowed)."""
    try:
        v = _parse(text)
    except _Invalid:
        raise ValueError("canonical: decode JSON: invalid JSON") from None
    return encode_canonical(v)


def args_hash(text: Union[str, bytes, bytearray]) -> str:
    """Lower-case hex SHA-256 of text's canonical form, or of text's own bytes
    when it is not JSON: the args_hash fixtures and ingest store."""
    try:
        data = encode_canonical(_parse(text)).encode("utf-8")
    except _Invalid:
        data = _to_bytes(text)
    return hashlib.sha256(data).hexdigest()


def args_text(args: Any) -> str:
    """The text a call's arguments are matched by: str/bytes are JSON text
    as given (non-JSON text is matched as is); any other value is encoded
    as JSON (None is null)."""
    if isinstance(args, str):
        return args
    if isinstance(args, (bytes, bytearray)):
        return decode_utf8(bytes(args))
    if isinstance(args, JSONNumber):
        return str.__str__(args)
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_default)


def _default(o: Any) -> Any:
    # pydantic models, dataclasses and the like
    for attr in ("model_dump", "dict"):
        f = getattr(o, attr, None)
        if callable(f):
            try:
                return f()
            except TypeError:
                pass
    import dataclasses

    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    raise TypeError("arguments: %r is not JSON serializable" % type(o).__name__)


def compact(text: str) -> str:
    """Go's json.Compact of valid JSON text: insignificant whitespace removed,
    everything else (key order, escapes) kept."""
    out: List[str] = []
    in_str = False
    esc = False
    start = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in " \t\n\r":
            out.append(text[start:i])
            start = i + 1
        i += 1
    out.append(text[start:])
    return "".join(out)

"""Fetch fixtures from a running tally into testdata/ (standard library
only): GET /api/v1/runs/{id}/fixture, runs selected by id, 8-character
prefix, conversation, or task and since (GET /api/v1/runs)."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Iterable, List, Optional, Union

from .fixture import parse

__all__ = ["pull", "PullError"]

_TRACE_ID = re.compile(r"^[0-9a-f]{8,32}$")


class PullError(RuntimeError):
    """A pull that failed: the server's answer or what was wrong."""


def _get(server: str, key: Optional[str], path: str, query: Optional[dict], timeout: float) -> bytes:
    url = server.rstrip("/") + path
    if query:
        url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v not in (None, "")})
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if key:
        req.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")
        try:
            msg = json.loads(body).get("error", body)
        except (ValueError, AttributeError):
            msg = body
        raise PullError("GET %s: %d: %s" % (url, e.code, msg)) from None
    except urllib.error.URLError as e:
        raise PullError("GET %s: %s (is tally running there?)" % (url, e.reason)) from None


def pull(
    server: Optional[str] = None,
    key: Optional[str] = None,
    *,
    run: Union[str, Iterable[str], None] = None,
    conversation: Optional[str] = None,
    task: Optional[str] = None,
    since: Optional[str] = None,
    until: Optional[str] = None,
    agent: Optional[str] = None,
    out: Union[str, "os.PathLike[str]"] = "testdata",
    inferences: bool = False,
    limit: int = 100,
    timeout: float = 30.0,
) -> List[str]:
    """Download run fixtures into out (created when missing), one file
    <trace_id>.fixture.json per run, the server's deterministic bytes;
    returns their paths, oldest run first.

    server defaults to $TALLY_SERVER, else http://127.0.0.1:4318 (as the
    tally CLI's); key to $TALLY_KEY: an API key with read scope. Runs: run (a trace id, an
    8+ character prefix, or several), plus the runs matching conversation,
    task, since, until and agent (since/until: RFC 3339 or a duration such
    as 7d), at most limit of them.
    """
    server = server or os.environ.get("TALLY_SERVER") or "http://127.0.0.1:4318"
    key = key if key is not None else os.environ.get("TALLY_KEY")
    ids: List[str] = []
    runs = [run] if isinstance(run, str) else list(run or [])
    for r in runs:
        r = r.strip().lower()
        if not _TRACE_ID.match(r):
            raise PullError("run %r: want a trace id (32 hex characters) or a prefix of 8 or more" % r)
        ids.append(r)
    filters = {"conversation": conversation, "task": task, "since": since, "until": until, "agent": agent}
    if any(filters.values()):
        matched: List[str] = []
        q = dict(filters)
        while len(matched) < limit:
            q["limit"] = str(min(limit - len(matched), 1000))
            page: Any = json.loads(_get(server, key, "/api/v1/runs", q, timeout))
            for r in page.get("runs") or []:
                tid = str(r.get("trace_id", ""))
                if not re.match(r"^[0-9a-f]{32}$", tid):
                    raise PullError("select runs: the server answered trace id %r" % tid)
                matched.append(tid)
            cursor = page.get("next_cursor")
            if not cursor:
                break
            q["cursor"] = cursor
        matched.reverse()  # the API lists newest first
        ids.extend(matched)
    if not ids:
        raise PullError("nothing to pull: give run=, or select runs with conversation=, task=, since=, agent=")
    os.makedirs(out, exist_ok=True)
    paths: List[str] = []
    seen = set()
    for tid in ids:
        raw = _get(server, key, "/api/v1/runs/%s/fixture" % tid, {"inferences": "true"} if inferences else None, timeout)
        fx = parse(raw)  # validate before writing
        full = fx.trace_id
        if not re.match(r"^[0-9a-f]{32}$", full):
            raise PullError("run %s: the fixture names trace id %r" % (tid, full))
        if full in seen:
            continue
        seen.add(full)
        path = os.path.join(os.fspath(out), full + ".fixture.json")
        with open(path, "wb") as f:
            f.write(raw)
        paths.append(path)
    return paths

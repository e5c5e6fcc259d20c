"""The shared vectors (replay/testdata/vectors, written by Go's
replay/vectors_test.go): canonical JSON, matching, fault rules and replay
answers must agree with Go byte for byte."""

import pytest

from _paths import TESTDATA, vectors
import os

import tally_replay
from tally_replay import FaultError, canonical_json, args_hash, parse_fault_rule
from tally_replay.canonical import compact

CANONICAL = vectors("canonical.json")
MATCH = vectors("match.json")
FAULTS = vectors("faults.json")
PLAYS = FAULTS["play"] + vectors("replay.json")


@pytest.mark.parametrize("v", CANONICAL, ids=[v["name"] for v in CANONICAL])
def test_canonical(v):
    if v["canonical"] is None:
        with pytest.raises(ValueError):
            canonical_json(v["input"])
    else:
        assert canonical_json(v["input"]) == v["canonical"]
        assert canonical_json(v["input"].encode("utf-8")) == v["canonical"]
    assert args_hash(v["input"]) == v["hash"]


@pytest.mark.parametrize("v", MATCH, ids=[v["name"] for v in MATCH])
def test_match(v):
    rec = v["recorded"]
    call = {"seq": 1, "span_id": "s", "started_at": "2025-03-01T10:00:00Z", "tool": rec["tool"], "status": "ok",
            "attempt": 0, "duration_ms": 0, "result": {"ok": True}, "args_hash": ""}
    if rec["arguments"] is None:
        call["missing"] = ["arguments"]
    else:
        call["args_hash"] = args_hash(rec["arguments"])
        try:
            call["arguments"] = "<ARGS>"
            canon = canonical_json(rec["arguments"])
        except ValueError:
            del call["arguments"]
            call["arguments_text"] = rec["arguments"]
            canon = None
    import json

    doc = json.dumps({"format": "tally.replay/v1", "run": {k: "" for k in (
        "trace_id", "conversation_id", "agent", "task", "service", "started_at", "source_version")},
        "calls": [call], "missing": {"arguments": [], "results": []}})
    if rec["arguments"] is not None and canon is not None:
        doc = doc.replace('"<ARGS>"', canon)
    player = tally_replay.Player(tally_replay.parse(doc))
    try:
        player.call(v["call"]["tool"], v["call"]["arguments"])
        matched = True
    except tally_replay.NotRecordedError:
        matched = False
    assert matched == v["match"]


@pytest.mark.parametrize("v", FAULTS["parse"], ids=[v["spec"] or "(empty)" for v in FAULTS["parse"]])
def test_fault_rule_parse(v):
    if v["ok"]:
        assert parse_fault_rule(v["spec"]).to_dict() == v["rule"]
    else:
        with pytest.raises(ValueError) as e:
            parse_fault_rule(v["spec"])
        assert str(e.value) == v["error"]


def outcome(player, call):
    try:
        return {"kind": "result", "result": player.call_raw(call["tool"], call["arguments"])}
    except tally_replay.RecordedToolError as e:
        o = {"kind": "recorded_error", "seq": e.seq, "tool": e.tool, "error_type": e.error_type,
             "error_message": e.message, "message": str(e)}
        if e.result_json is not None:
            o["result"] = e.result_json
        return o
    except FaultError as e:
        o = {"kind": "fault", "seq": e.seq, "tool": e.tool, "fault": e.kind, "status": e.status, "message": str(e)}
        if e.retry_after:
            o["retry_after_seconds"] = e.retry_after
        return o
    except tally_replay.UnexpectedCallError as e:
        return {"kind": "unexpected", "tool": e.tool, "message": str(e)}
    except tally_replay.NotRecordedError as e:
        return {"kind": "not_recorded", "message": str(e)}
    except tally_replay.ResultNotCapturedError as e:
        return {"kind": "not_captured", "message": str(e)}


@pytest.mark.parametrize("v", PLAYS, ids=[v["name"] for v in PLAYS])
def test_play(v):
    player = tally_replay.Player(os.path.join(TESTDATA, v["fixture"]), strict=v["strict"], faults=v["rules"])
    got = [outcome(player, c) for c in v["calls"]]
    assert got == v["outcomes"]
    assert player.report().to_dict() == v["report"]


@pytest.mark.parametrize("v", PLAYS, ids=[v["name"] for v in PLAYS])
def test_play_async(v):
    import asyncio

    player = tally_replay.Player(os.path.join(TESTDATA, v["fixture"]), strict=v["strict"], faults=v["rules"])

    async def run():
        out = []
        for c in v["calls"]:
            try:
                out.append(("ok", await player.acall_raw(c["tool"], c["arguments"])))
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        return out

    got = asyncio.run(run())
    want = [("ok", o["result"]) if o["kind"] == "result" else o["message"] for o in v["outcomes"]]
    assert [g if g[0] == "ok" else g[1] for g in got] == want


def test_compact_keeps_order_and_escapes():
    assert compact(' { "b" : "a b\\" c" , "a" : [ 1 , 2 ] } ') == '{"b":"a b\\" c","a":[1,2]}'

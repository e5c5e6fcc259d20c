"""Fixture loading and validation against the format's JSON Schema."""

import json
import os

import pytest

from _paths import REPO, TESTDATA, fixture_paths

import tally_replay
from tally_replay import FixtureError, load, parse
from tally_replay.fixture import schema


def test_schema_copy_matches_the_format():
    with open(os.path.join(REPO, "replay", "fixture.schema.json"), encoding="utf-8") as f:
        assert schema() == json.load(f), "tally_replay/fixture.schema.json drifted from replay/fixture.schema.json"


def test_every_testdata_fixture_loads():
    paths = fixture_paths()
    assert len(paths) >= 3
    for p in paths:
        f = load(p)
        assert f.format == "tally.replay/v1"
        assert [c.seq for c in f.calls] == sorted(c.seq for c in f.calls)


def test_loaded_fields():
    f = load(os.path.join(TESTDATA, "expected_fixture.json"))
    c = f.calls[0]
    assert (c.seq, c.tool, c.tool_call_id) == (1, "search", "call_1")
    assert c.arguments == {"limit": 10, "q": "hotels in Lisbon"}
    assert c.arguments_json == '{"limit":10,"q":"hotels in Lisbon"}'
    assert f.calls[1].error == {"type": "timeout", "message": "upstream timed out after 5s"}
    assert f.run["trace_id"] == f.trace_id


def valid_doc():
    with open(os.path.join(TESTDATA, "expected_fixture.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("edit,field,reason", [
    (lambda d: d.pop("format"), "", 'no "format" field'),
    (lambda d: d.__setitem__("format", "tally.replay/v2"), "format", 'unsupported format "tally.replay/v2"'),
    (lambda d: d.__setitem__("extra", 1), "extra", "unknown field"),
    (lambda d: d["calls"][1].__setitem__("arguemnts", {}), "calls[1].arguemnts", "unknown field"),
    (lambda d: d["calls"][0].__setitem__("seq", 0), "calls[0].seq", "must be ≥ 1"),
    (lambda d: d["calls"][0].__setitem__("seq", "1"), "calls[0].seq", "must be an integer"),
    (lambda d: d["calls"][0].__setitem__("seq", 1.5), "calls[0].seq", "must be an integer"),
    (lambda d: d["calls"][2].__setitem__("tool", ""), "calls[2].tool", "must not be empty"),
    (lambda d: d["calls"][2].pop("tool"), "calls[2].tool", "is required"),
    (lambda d: d["calls"][0].__setitem__("status", "fine"), "calls[0].status", "must be one of"),
    (lambda d: d["calls"][0].__setitem__("args_hash", "abc"), "calls[0].args_hash", "does not match"),
    (lambda d: d["calls"][0].__setitem__("started_at", "yesterday"), "calls[0].started_at", "does not match"),
    (lambda d: d["calls"][0].__setitem__("duration_ms", -1), "calls[0].duration_ms", "must be ≥ 0"),
    (lambda d: d["calls"][0].__setitem__("missing", ["result", "result"]), "calls[0].missing[1]", "duplicate"),
    (lambda d: d["calls"][0].__setitem__("fault", {"kind": "explode"}), "calls[0].fault.kind", "must be one of"),
    (lambda d: d["calls"][0].__setitem__("fault", {"kind": "server_error", "status": 404}), "calls[0].fault.status",
     "must be ≥ 500"),
    (lambda d: d["run"].pop("task"), "run.task", "is required"),
    (lambda d: d["missing"].__setitem__("results", [0]), "missing.results[0]", "must be ≥ 1"),
    (lambda d: d.__setitem__("calls", {}), "calls", "must be an array"),
])
def test_errors_name_the_field(edit, field, reason):
    d = valid_doc()
    edit(d)
    with pytest.raises(FixtureError) as e:
        parse(json.dumps(d))
    assert e.value.field == field
    assert reason in str(e.value)
    if field:
        assert ("%s: " % field) in str(e.value)


def test_load_names_the_file(tmp_path):
    p = tmp_path / "bad.fixture.json"
    p.write_text("{}")
    with pytest.raises(FixtureError) as e:
        load(str(p))
    assert str(e.value).startswith(str(p) + ": ")
    p.write_text("{not json")
    with pytest.raises(FixtureError, match="not valid JSON"):
        load(str(p))


def test_parse_accepts_a_dict_and_keeps_number_literals():
    d = valid_doc()
    f = tally_replay.parse(d)
    assert len(f.calls) == len(d["calls"])
    f = parse('{"format":"tally.replay/v1","run":{"trace_id":"t","conversation_id":"","agent":"","task":"",'
              '"service":"","started_at":"","source_version":""},"missing":{"arguments":[],"results":[]},'
              '"calls":[{"seq":1,"span_id":"s","started_at":"2025-01-01T00:00:00Z","tool":"calc","status":"ok",'
              '"attempt":0,"duration_ms":1,"args_hash":"","arguments":{"x":1.0,"y":1e21},"result":2.50}]}')
    assert f.calls[0].arguments_json == '{"x":1.0,"y":1e21}'
    assert f.calls[0].result_json == "2.50"


def test_result_is_answered_as_written_compacted_like_go():
    # Go's player answers json.Compact of the recorded result: key order and
    # escapes as written (exported fixtures are canonical already).
    f = parse('{"format":"tally.replay/v1","run":{"trace_id":"t","conversation_id":"","agent":"","task":"",'
              '"service":"","started_at":"","source_version":""},"missing":{"arguments":[],"results":[]},'
              '"calls":[{"seq":1,"span_id":"s","started_at":"2025-01-01T00:00:00Z","tool":"calc","status":"ok",'
              '"attempt":0,"duration_ms":1,"args_hash":"","arguments":{"b":1, "a":"\\u00e9"},'
              '"result": { "z" : 1.0 , "a" : "\\u00e9\\/" }}]}')
    c = f.calls[0]
    assert c.result_json == '{"z":1.0,"a":"\\u00e9\\/"}'
    assert c.arguments_json == '{"a":"é","b":1}'  # arguments are matched canonically
    assert tally_replay.Player(f).call_raw("calc", {"a": "é", "b": 1}) == c.result_json

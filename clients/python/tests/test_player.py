"""Player behaviour beyond the shared vectors: the Python API."""

import asyncio
import os

import pytest

from _paths import TESTDATA

import tally_replay
from tally_replay import (
    FaultRateLimit,
    FaultTimeout,
    NotRecordedError,
    Player,
    RecordedToolError,
    UnexpectedCallError,
)

EXPECTED = os.path.join(TESTDATA, "expected_fixture.json")


def test_trip_replays_with_values_and_text():
    p = Player(EXPECTED, strict=True)
    # dict arguments in any key order, as the agent builds them
    assert p.call("search", {"q": "hotels in Lisbon", "limit": 10})["hits"][0]["name"] == "Casa Azul"
    with pytest.raises(RecordedToolError) as e:
        p.call("get_weather", {"city": "Lisbon"})
    assert (e.value.seq, e.value.error_type, e.value.message) == (2, "timeout", "upstream timed out after 5s")
    assert p.call("get_weather", '{"city": "Lisbon"}')["sky"] == "clear"  # JSON text works too
    assert p.report().unmet and not p.report().unexpected


def test_strict_unexpected_names_closest_and_differing_argument():
    p = Player(EXPECTED, strict=True)
    with pytest.raises(UnexpectedCallError) as e:
        p.call("search", {"q": "hotels in Lisbon", "limit": 5})
    err = e.value
    assert err.closest.seq == 1 and [d.key for d in err.diffs] == ["limit"]
    assert 'differs at "limit": recorded 10, got 5' in str(err)
    r = p.report()
    assert len(r.unexpected) == 1 and "closest recorded call #1 search" in r.text()


def test_lenient_not_recorded_is_a_lookup_error():
    p = Player(EXPECTED)
    with pytest.raises(LookupError):
        p.call("nope", {})
    with pytest.raises(NotRecordedError):
        p.call("search", {})


def test_timeout_fault_is_a_timeout_error_then_recording_answers():
    p = Player(EXPECTED, faults=["seq=1:timeout"])
    args = {"q": "hotels in Lisbon", "limit": 10}
    with pytest.raises(TimeoutError) as e:
        p.call("search", args)
    assert isinstance(e.value, FaultTimeout) and e.value.status == 504
    assert p.call("search", args)["hits"]
    assert p.report().faults == [{"trace_id": p.trace_id, "seq": 1, "tool": "search", "kind": "timeout"}]


def test_async_timeout_fault_is_caught_as_asyncio_timeout():
    p = Player(EXPECTED, faults=[tally_replay.parse_fault_rule("tool=search:rate_limit,retry_after_seconds=7")])

    async def agent():
        try:
            await p.acall("search", {"q": "hotels in Lisbon", "limit": 10})
        except FaultRateLimit as e:
            assert e.retry_after == 7 and e.status == 429
        return await p.acall("search", {"q": "hotels in Lisbon", "limit": 10})

    assert asyncio.run(agent())["hits"]
    p2 = Player(EXPECTED, faults=["seq=1:timeout"])

    async def timed():
        with pytest.raises(asyncio.TimeoutError):
            await p2.acall("search", {"q": "hotels in Lisbon", "limit": 10})

    asyncio.run(timed())


def test_tool_function_and_report_text():
    p = Player(EXPECTED, strict=True)
    search = p.tool("search")
    assert search(q="hotels in Lisbon", limit=10)["hits"]
    r = p.report()
    assert not r.ok and bool(r)
    text = r.text()
    assert text.startswith("replay: 4 recorded call(s) never made, 0 unexpected call(s)")
    assert '  never made: #2 get_weather(args {"city":"Lisbon"}) in trace ' in text
    with pytest.raises(AssertionError):
        r.raise_for_problems()


def test_concurrent_identical_calls_get_each_recording_once():
    import threading

    p = Player(EXPECTED)
    results = []

    def call():
        try:
            results.append(p.call("get_weather", {"city": "Lisbon"}))
        except RecordedToolError as e:
            results.append(e.error_type)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(map(str, results)) == sorted(["timeout", str({"sky": "clear", "temp_c": 18.5})])

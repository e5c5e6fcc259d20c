"""The pytest plugin: the tally_replay fixture, the tally_fixture marker and
the teardown check."""

import os
import shutil

import pytest

from _paths import TESTDATA

CONFTEST = '''
import sys
sys.path.insert(0, {pkg!r})
try:
    from importlib.metadata import entry_points
    _eps = entry_points()
    _group = _eps.select(group="pytest11") if hasattr(_eps, "select") else _eps.get("pytest11", [])
    _installed = any(ep.name == "tally_replay" for ep in _group)
except ImportError:
    _installed = False
pytest_plugins = [] if _installed else ["tally_replay.pytest_plugin"]
'''


@pytest.fixture
def project(pytester):
    pkg = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    pytester.makeconftest(CONFTEST.format(pkg=pkg))
    td = pytester.mkdir("testdata")
    shutil.copy(os.path.join(TESTDATA, "expected_fixture.json"), str(td / "trip.fixture.json"))
    return pytester


TRIP = '''
import pytest
import tally_replay as tr

def plan(player, skip_booking=False, limit=10):
    player.call("search", {"q": "hotels in Lisbon", "limit": limit})
    try:
        player.call("get_weather", {"city": "Lisbon"})
    except tr.RecordedToolError:
        player.call("get_weather", {"city": "Lisbon"})
    if not skip_booking:
        player.call("book", {"hotel_id": "h1", "nights": 3})
    try:
        player.call("notify", {"to": "user@example.com"})
    except tr.ResultNotCapturedError:
        pass
'''


def test_clean_replay_passes(project):
    project.makepyfile(test_trip=TRIP + '''
@pytest.mark.tally_fixture("testdata/trip.fixture.json")
def test_trip(tally_replay):
    plan(tally_replay)
''')
    r = project.runpytest("-q")
    r.assert_outcomes(passed=1)


def test_unmet_call_fails_at_teardown(project):
    project.makepyfile(test_trip=TRIP + '''
@pytest.mark.tally_fixture("testdata/trip.fixture.json")
def test_trip(tally_replay):
    plan(tally_replay, skip_booking=True)
''')
    r = project.runpytest("-q")
    r.assert_outcomes(passed=1, errors=1)
    r.stdout.fnmatch_lines([
        "*replay: 1 recorded call(s) never made, 0 unexpected call(s)*",
        '*never made: #4 book(args {"hotel_id":"h1","nights":3}) in trace 4bf92f3577b34da6a3ce929d0e0e4736*',
        "*fixture *trip.fixture.json*",
    ])


def test_unexpected_call_fails_with_the_diff(project):
    project.makepyfile(test_trip=TRIP + '''
@pytest.mark.tally_fixture("testdata/trip.fixture.json")
def test_trip(tally_replay):
    try:
        plan(tally_replay, limit=5)
    except tr.UnexpectedCallError:
        pass  # swallowed by the agent: the teardown still catches it
''')
    r = project.runpytest("-q")
    r.assert_outcomes(passed=1, errors=1)
    r.stdout.fnmatch_lines([
        "*5 recorded call(s) never made, 1 unexpected call(s)*",
        '*unexpected call search(args {"q":"hotels in Lisbon","limit":5}): closest recorded call #1 search '
        'differs at "limit": recorded 10, got 5*',
    ])


def test_faults_marker_and_check_false(project):
    project.makepyfile(test_trip=TRIP + '''
@pytest.mark.tally_fixture("testdata/trip.fixture.json", faults=["seq=1:timeout"])
def test_timeout_then_retry(tally_replay):
    with pytest.raises(TimeoutError):
        tally_replay.call("search", {"q": "hotels in Lisbon", "limit": 10})
    plan(tally_replay)
    assert [f["kind"] for f in tally_replay.report().faults] == ["timeout"]

@pytest.mark.tally_fixture("testdata/trip.fixture.json", strict=False, check=False)
def test_lenient_unchecked(tally_replay):
    with pytest.raises(tr.NotRecordedError):
        tally_replay.call("nope", {})
''')
    r = project.runpytest("-q")
    r.assert_outcomes(passed=2)


def test_fixture_without_marker_says_how(project):
    project.makepyfile(test_x='''
def test_x(tally_replay):
    pass
''')
    r = project.runpytest("-q")
    r.assert_outcomes(errors=1)
    r.stdout.fnmatch_lines(["*mark the test @pytest.mark.tally_fixture*"])


def test_marker_is_registered(project):
    r = project.runpytest("--markers")
    r.stdout.fnmatch_lines(["@pytest.mark.tally_fixture(path, faults=*"])

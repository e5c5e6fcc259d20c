"""pytest plugin (registered through the pytest11 entry point
``tally_replay``): the tally_replay fixture and the tally_fixture marker.

    @pytest.mark.tally_fixture("testdata/checkout.fixture.json", faults=["seq=1:timeout"])
    def test_agent(tally_replay):
        agent = Agent(tools={"search": tally_replay.tool("search")})
        ...

The fixture is a strict Player (strict=False in the marker for a lenient
one). Its path is relative to the test file's directory (else to the
rootdir). At teardown the test fails when a recorded call was never made or
an unexpected call was made, listing each with the differing arguments;
check=False in the marker turns that off.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from .player import Player

MARKER = "tally_fixture"


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        MARKER + "(path, faults=[], strict=True, check=True): replay the tally.replay/v1 fixture at path "
        "(relative to the test file) through the tally_replay fixture; faults are `tally replay serve --fault` rules",
    )


def _resolve(request: Any, path: str) -> str:
    if os.path.isabs(path):
        return path
    candidates = [
        os.path.join(os.path.dirname(str(request.node.fspath)), path),
        os.path.join(str(request.config.rootdir), path),
        path,
    ]
    for c in candidates:
        if os.path.exists(c):
            return c
    return candidates[0]


@pytest.fixture
def tally_replay(request: Any) -> Any:
    """A Player for the test's @pytest.mark.tally_fixture; fails the test at
    teardown on unmet or unexpected calls."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is None or not marker.args:
        pytest.fail(
            'tally_replay needs a fixture: mark the test @pytest.mark.tally_fixture("testdata/x.fixture.json")',
            pytrace=False,
        )
    path = _resolve(request, os.fspath(marker.args[0]))
    faults = marker.kwargs.get("faults", ())
    if isinstance(faults, str):
        faults = [faults]
    player = Player(path, strict=marker.kwargs.get("strict", True), faults=faults)
    yield player
    if not marker.kwargs.get("check", True):
        return
    report = player.report()
    if not report.ok:
        pytest.fail("%s\n(fixture %s)" % (report.text(), path), pytrace=False)

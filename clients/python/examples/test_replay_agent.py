"""Replays a recorded run through examples/research_agent.py: clean, then
with a timeout on the first call, asserting the agent retried.

The fixture comes from $TALLY_FIXTURE (cmd/tally's TestReplayInPython
exports one from `tally demo`), else replay/testdata/demo_fixture.json.
Run: python3 -m pytest clients/python/examples
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import tally_replay  # noqa: E402
from research_agent import ResearchAgent, ScriptedModel  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.environ.get("TALLY_FIXTURE") or os.path.join(HERE, "..", "..", "..", "replay", "testdata",
                                                          "demo_fixture.json")


def recorded_requests(path):
    """The model's side of the run: every tool request it made, in order."""
    return [(c.tool, c.arguments) for c in tally_replay.load(path).calls]


def agent_for(player):
    tools = {name: player.tool(name) for name, _ in recorded_requests(FIXTURE)}
    return ResearchAgent(ScriptedModel(recorded_requests(FIXTURE)), tools)


@pytest.mark.tally_fixture(FIXTURE)
def test_replays_clean(tally_replay):
    agent = agent_for(tally_replay)
    observations = agent.run()
    assert agent.retries == []
    assert len(observations) == len(tally_replay.fixture.calls)
    # The teardown check fails the test on any unmet or unexpected call.


@pytest.mark.tally_fixture(FIXTURE, faults=["seq=1:timeout"])
def test_retries_a_timeout_on_the_first_call(tally_replay):
    agent = agent_for(tally_replay)
    agent.run()
    first = tally_replay.fixture.calls[0]
    # The first call timed out once, and the agent retried it.
    assert len(agent.retries) == 1, agent.retries
    tool, attempt, why = agent.retries[0]
    assert (tool, attempt) == (first.tool, 1) and why.startswith("timeout"), agent.retries
    assert [f["kind"] for f in tally_replay.report().faults] == ["timeout"]

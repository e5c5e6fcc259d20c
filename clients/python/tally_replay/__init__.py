"""tally-replay: replay tally.replay/v1 fixtures in Python tests.

    from tally_replay import Player
    player = Player("testdata/checkout.fixture.json", strict=True)
    result = player.call("search", {"q": "cats"})

See docs/replay.md ("Replay in Python") in the tally repository.
"""

from .canonical import args_hash, canonical_json
from .faults import (
    DEFAULT_INJECTION,
    FAULT_KINDS,
    Fault,
    FaultError,
    FaultRateLimit,
    FaultRule,
    FaultServerError,
    FaultTimeout,
    FaultUnknownTool,
    parse_fault_rule,
)
from .fixture import FORMAT_V1, Call, Fixture, FixtureError, load, parse
from .player import (
    ArgDiff,
    NotRecordedError,
    Player,
    RecordedToolError,
    ReplayError,
    Report,
    ResultNotCapturedError,
    UnexpectedCallError,
)
from .pull import PullError, pull

__version__ = "0.1.0"

__all__ = [
    "ArgDiff",
    "Call",
    "DEFAULT_INJECTION",
    "FAULT_KINDS",
    "FORMAT_V1",
    "Fault",
    "FaultError",
    "FaultRateLimit",
    "FaultRule",
    "FaultServerError",
    "FaultTimeout",
    "FaultUnknownTool",
    "Fixture",
    "FixtureError",
    "NotRecordedError",
    "Player",
    "PullError",
    "RecordedToolError",
    "ReplayError",
    "Report",
    "ResultNotCapturedError",
    "UnexpectedCallError",
    "args_hash",
    "canonical_json",
    "load",
    "parse",
    "parse_fault_rule",
    "pull",
]

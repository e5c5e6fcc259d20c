"""A small agent loop, the kind a team tests with a replayed run.

The agent asks its model for the next tool request, runs the tool, and hands
the result (or the tool's error message) back to the model, until the model
stops. Its own retry policy: a call that fails in transport — a timeout, a
429, a 5xx — is retried up to max_attempts times with backoff; an error the
tool itself answered goes back to the model, which decides.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

ToolRequest = Tuple[str, Dict[str, Any]]


class ScriptedModel:
    """Stands in for the model: returns the recorded tool requests in order
    (the model's side of the run, replayed), then None."""

    def __init__(self, requests: List[ToolRequest]):
        self.requests = list(requests)
        self.observations: List[Tuple[str, Any]] = []

    def next_request(self) -> Optional[ToolRequest]:
        return self.requests.pop(0) if self.requests else None

    def observe(self, tool: str, outcome: Any) -> None:
        self.observations.append((tool, outcome))


class TransientError(Exception):
    """A failure worth retrying: what the tools' HTTP client raises."""


class ResearchAgent:
    def __init__(self, model: ScriptedModel, tools: Dict[str, Callable[..., Any]], max_attempts: int = 3,
                 backoff: float = 0.0, sleep: Callable[[float], None] = time.sleep):
        self.model = model
        self.tools = tools
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.sleep = sleep
        self.retries: List[Tuple[str, int, str]] = []  # (tool, attempt that failed, why)

    def run(self) -> List[Tuple[str, Any]]:
        while True:
            req = self.model.next_request()
            if req is None:
                return self.model.observations
            tool, args = req
            self.model.observe(tool, self._call_with_retry(tool, args))

    def _call_with_retry(self, tool: str, args: Dict[str, Any]) -> Any:
        for attempt in range(1, self.max_attempts + 1):
            try:
                return self.tools[tool](**args)
            except TimeoutError as e:  # a replayed timeout fault is a TimeoutError too
                why = "timeout: %s" % e
            except TransientError as e:
                why = str(e)
            except Exception as e:  # noqa: BLE001 - the tool answered an error: the model sees it
                if _transient(e) and attempt < self.max_attempts:
                    why = str(e)
                else:
                    return {"error": str(e)}
            if attempt == self.max_attempts:
                return {"error": "gave up after %d attempts: %s" % (attempt, why)}
            self.retries.append((tool, attempt, why))
            self.sleep(self.backoff * attempt)
        raise AssertionError("unreachable")


def _transient(e: Exception) -> bool:
    status = getattr(e, "status", None)
    return status == 429 or (isinstance(status, int) and 500 <= status <= 599)

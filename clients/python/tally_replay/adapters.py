"""Route a framework's tools to a Player without changing the agent: each
adapter returns a copy of the tool object whose execution the player
answers, keeping everything the framework reads (name, description, schema,
type). Duck-typed: no framework is imported.

- OpenAI Agents SDK (openai-agents): FunctionTool (src/agents/tool.py) is a
  dataclass whose on_invoke_tool(ctx, input_json) coroutine the runner
  awaits with the model's arguments as a JSON string.
- pydantic-ai: Tool (pydantic_ai/tools.py) holds function_schema, a
  FunctionSchema (pydantic_ai/_function_schema.py) whose
  ``async call(args_dict, ctx)`` FunctionToolset.call_tool awaits
  (pydantic_ai/toolsets/function.py).
- LangChain: BaseTool (langchain_core/tools/base.py) runs
  ``self._run(*args, **kwargs)`` (``run_manager=`` when _run accepts it)
  from invoke()/run(), and ``self._arun`` from ainvoke()/arun(); string input
  becomes one positional argument, dict input keyword arguments.

on_error: None (default) lets the player's errors (RecordedToolError,
FaultError, UnexpectedCallError…) propagate as the tool's exception; a
callable f(exc) makes the tool return f(exc) instead, the way a framework's
error handler turns a tool failure into a message for the model.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterable, List, Optional

from .player import Player

__all__ = ["openai_agents_tool", "pydantic_ai_tool", "langchain_tool", "replay_tools"]

OnError = Optional[Callable[[BaseException], Any]]


def _answer(player: Player, name: str, args: Any, on_error: OnError) -> Any:
    try:
        return player.call(name, args)
    except Exception as e:  # noqa: BLE001 - handed to on_error
        if on_error is None:
            raise
        return on_error(e)


def openai_agents_tool(tool: Any, player: Player, on_error: OnError = None) -> Any:
    """A copy of an OpenAI Agents SDK FunctionTool answered by player: the
    model's arguments JSON string is matched as sent."""
    if not hasattr(tool, "on_invoke_tool") or not hasattr(tool, "name"):
        raise TypeError("openai_agents_tool: %r is not an OpenAI Agents FunctionTool (no on_invoke_tool)" % (tool,))
    name = tool.name
    replayed = copy.copy(tool)

    async def on_invoke_tool(ctx: Any, input_json: str) -> Any:
        return _answer(player, name, input_json if input_json else "{}", on_error)

    on_invoke_tool.__tally_replay__ = True  # type: ignore[attr-defined]
    replayed.on_invoke_tool = on_invoke_tool
    return replayed


class _ReplayedFunctionSchema:
    """Stands in for pydantic-ai's FunctionSchema: everything delegated but
    call(), which the player answers."""

    def __init__(self, inner: Any, name: str, player: Player, on_error: OnError):
        self._inner = inner
        self._name = name
        self._player = player
        self._on_error = on_error
        self.is_async = True

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    async def call(self, args_dict: Any, ctx: Any) -> Any:
        return _answer(self._player, self._name, args_dict, self._on_error)


def pydantic_ai_tool(tool: Any, player: Player, on_error: OnError = None) -> Any:
    """A copy of a pydantic-ai Tool answered by player: the validated
    arguments dict is matched."""
    if not hasattr(tool, "function_schema") or not hasattr(tool, "name"):
        raise TypeError("pydantic_ai_tool: %r is not a pydantic-ai Tool (no function_schema)" % (tool,))
    replayed = copy.copy(tool)
    replayed.function_schema = _ReplayedFunctionSchema(tool.function_schema, tool.name, player, on_error)
    return replayed


def langchain_tool(tool: Any, player: Player, on_error: OnError = None) -> Any:
    """A copy of a LangChain BaseTool answered by player: a string input is
    matched as text, a dict input as its (validated) arguments."""
    if not hasattr(tool, "_run") or not hasattr(tool, "invoke") or not hasattr(tool, "name"):
        raise TypeError("langchain_tool: %r is not a LangChain BaseTool (no _run/invoke)" % (tool,))
    name = tool.name
    replayed = copy.copy(tool)

    def args_of(args: tuple, kwargs: dict) -> Any:
        kwargs = {k: v for k, v in kwargs.items() if k not in ("run_manager", "callbacks", "config")}
        if args and not kwargs and len(args) == 1:
            return args[0]
        if args:
            raise TypeError("replayed tool %s: positional arguments %r with keywords %r" % (name, args, kwargs))
        return kwargs

    def _run(*args: Any, run_manager: Any = None, **kwargs: Any) -> Any:
        return _answer(player, name, args_of(args, kwargs), on_error)

    async def _arun(*args: Any, run_manager: Any = None, **kwargs: Any) -> Any:
        return _answer(player, name, args_of(args, kwargs), on_error)

    # object.__setattr__: BaseTool is a pydantic model, whose __setattr__
    # would refuse a name that is not a field.
    object.__setattr__(replayed, "_run", _run)
    object.__setattr__(replayed, "_arun", _arun)
    return replayed


def replay_tools(tools: Iterable[Any], player: Player, on_error: OnError = None) -> List[Any]:
    """Each tool routed to player by the adapter its shape calls for."""
    out = []
    for t in tools:
        if hasattr(t, "on_invoke_tool"):
            out.append(openai_agents_tool(t, player, on_error))
        elif hasattr(t, "function_schema"):
            out.append(pydantic_ai_tool(t, player, on_error))
        elif hasattr(t, "_run") and hasattr(t, "invoke"):
            out.append(langchain_tool(t, player, on_error))
        else:
            raise TypeError("replay_tools: %r is not a tool of a framework tally_replay knows" % (t,))
    return out

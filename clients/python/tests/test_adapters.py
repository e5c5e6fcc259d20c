"""The framework adapters, against minimal stand-ins written from each
framework's source (none is installable here). Each stand-in keeps exactly
the attributes and the call path the framework uses to run a tool:

- OpenAI Agents SDK, openai/openai-agents-python src/agents/tool.py:
  ``@dataclass class FunctionTool`` (name, description, params_json_schema,
  on_invoke_tool: Callable[[ToolContext, str], Awaitable[Any]],
  strict_json_schema, is_enabled, …); the runner awaits
  ``tool.on_invoke_tool(tool_context, arguments_json_string)``.
- pydantic-ai, pydantic/pydantic-ai pydantic_ai_slim/pydantic_ai/_function_schema.py:
  ``@dataclass class FunctionSchema`` (function, description, validator,
  json_schema, takes_ctx, is_async, single_arg_name, …) with
  ``async def call(self, args_dict, ctx)``; toolsets/function.py:
  ``FunctionToolset.get_tools`` builds ``call_func=tool.function_schema.call``
  and ``call_tool`` awaits ``tool.call_func(tool_args, ctx)``.
- LangChain, langchain-ai/langchain libs/core/langchain_core/tools/base.py:
  ``BaseTool.run`` does ``tool_args, tool_kwargs = self._to_args_and_kwargs(tool_input, tool_call_id)``,
  adds ``run_manager`` when ``signature(self._run).parameters.get("run_manager")``,
  then ``self._run(*tool_args, **tool_kwargs)``; a string input is one
  positional argument, a dict keyword arguments; ``invoke`` with a ToolCall
  (``{"type": "tool_call", "args", "id", "name"}``) answers a ToolMessage;
  ``ainvoke``/``arun`` await ``self._arun``. BaseTool is a pydantic model.
"""

import asyncio
import dataclasses
import json
import os
from inspect import signature
from typing import Any, Awaitable, Callable, Optional

import pytest

from _paths import TESTDATA

from tally_replay import Player, RecordedToolError, UnexpectedCallError
from tally_replay.adapters import langchain_tool, openai_agents_tool, pydantic_ai_tool, replay_tools

EXPECTED = os.path.join(TESTDATA, "expected_fixture.json")
SEARCH = {"q": "hotels in Lisbon", "limit": 10}


def real_tool_must_not_run(*a, **kw):
    raise AssertionError("the real tool ran during a replay")


# -- OpenAI Agents SDK stand-in ---------------------------------------------


@dataclasses.dataclass
class ToolContext:  # src/agents/tool_context.py: tool_name, tool_call_id, tool_arguments
    tool_name: str
    tool_call_id: str
    tool_arguments: str


@dataclasses.dataclass
class FunctionTool:
    name: str
    description: str
    params_json_schema: dict
    on_invoke_tool: Callable[[ToolContext, str], Awaitable[Any]]
    strict_json_schema: bool = True
    is_enabled: bool = True


def function_tool(fn, name):
    async def on_invoke_tool(ctx, input_json):
        return fn(**json.loads(input_json))

    return FunctionTool(name=name, description="", params_json_schema={"type": "object"}, on_invoke_tool=on_invoke_tool)


async def agents_runner_invoke(tool, arguments_json, call_id="call_1"):
    """What the SDK's tool execution does with a model's function call."""
    return await tool.on_invoke_tool(ToolContext(tool.name, call_id, arguments_json), arguments_json)


def test_openai_agents_tool():
    player = Player(EXPECTED, strict=True)
    search = function_tool(real_tool_must_not_run, "search")
    weather = function_tool(real_tool_must_not_run, "get_weather")
    r_search, r_weather = openai_agents_tool(search, player), openai_agents_tool(weather, player)
    assert isinstance(r_search, FunctionTool) and r_search.name == "search" and r_search is not search
    assert search.on_invoke_tool is not r_search.on_invoke_tool  # the original is untouched

    async def run():
        hits = await agents_runner_invoke(r_search, '{"limit": 10, "q": "hotels in Lisbon"}')
        with pytest.raises(RecordedToolError):
            await agents_runner_invoke(r_weather, '{"city":"Lisbon"}')
        weather_now = await agents_runner_invoke(r_weather, '{"city":"Lisbon"}')
        return hits, weather_now

    hits, weather_now = asyncio.run(run())
    assert hits["hits"][1]["name"] == "Hotel Sol" and weather_now["sky"] == "clear"


def test_openai_agents_on_error_answers_the_model():
    player = Player(EXPECTED, strict=True)
    weather = openai_agents_tool(function_tool(real_tool_must_not_run, "get_weather"), player,
                                 on_error=lambda e: "An error occurred while running the tool: %s" % e)
    out = asyncio.run(agents_runner_invoke(weather, '{"city":"Lisbon"}'))
    assert out.startswith("An error occurred while running the tool: replay: recorded error from call #2")


# -- pydantic-ai stand-in ----------------------------------------------------


@dataclasses.dataclass
class FunctionSchema:
    function: Callable[..., Any]
    description: Optional[str]
    validator: Any
    json_schema: dict
    takes_ctx: bool
    is_async: bool
    single_arg_name: Optional[str] = None

    async def call(self, args_dict, ctx):
        args = [ctx] if self.takes_ctx else []
        if self.is_async:
            return await self.function(*args, **args_dict)
        return self.function(*args, **args_dict)


class PydanticAITool:
    def __init__(self, function, name, takes_ctx=False):
        self.function = function
        self.name = name
        self.takes_ctx = takes_ctx
        self.function_schema = FunctionSchema(function, None, None, {"type": "object"}, takes_ctx, False)


@dataclasses.dataclass
class FunctionToolsetTool:
    call_func: Callable[[dict, Any], Awaitable[Any]]
    is_async: bool


class FunctionToolset:
    def __init__(self, tools):
        self.tools = {t.name: t for t in tools}

    def get_tools(self):
        return {n: FunctionToolsetTool(call_func=t.function_schema.call, is_async=t.function_schema.is_async)
                for n, t in self.tools.items()}

    async def call_tool(self, name, tool_args, ctx, tool):
        return await tool.call_func(tool_args, ctx)


def test_pydantic_ai_tool():
    player = Player(EXPECTED, strict=True)
    tools = [pydantic_ai_tool(PydanticAITool(real_tool_must_not_run, "search", takes_ctx=True), player),
             pydantic_ai_tool(PydanticAITool(real_tool_must_not_run, "book"), player)]
    toolset = FunctionToolset(tools)
    defs = toolset.get_tools()
    assert tools[0].function_schema.json_schema == {"type": "object"}  # delegated
    assert tools[0].function_schema.takes_ctx is True

    async def run():
        hits = await toolset.call_tool("search", dict(SEARCH), object(), defs["search"])
        booked = await toolset.call_tool("book", {"hotel_id": "h1", "nights": 3}, object(), defs["book"])
        with pytest.raises(UnexpectedCallError, match='differs at "nights": recorded 3, got 4'):
            await toolset.call_tool("book", {"hotel_id": "h1", "nights": 4}, object(), defs["book"])
        return hits, booked

    hits, booked = asyncio.run(run())
    assert hits["hits"][0]["id"] == "h1" and booked == player.fixture.calls[3].result_text


# -- LangChain stand-in ------------------------------------------------------


class BaseTool:
    """pydantic-model-like: setting a non-field attribute is refused."""

    _fields = ("name", "description", "args_schema", "func")

    def __init__(self, **kw):
        for k, v in kw.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, k, v):
        if k not in self._fields:
            raise ValueError('"%s" object has no field "%s"' % (type(self).__name__, k))
        object.__setattr__(self, k, v)

    def _to_args_and_kwargs(self, tool_input):
        if isinstance(tool_input, str):
            return (tool_input,), {}
        return (), dict(tool_input)

    def run(self, tool_input, tool_call_id=None):
        tool_args, tool_kwargs = self._to_args_and_kwargs(tool_input)
        if signature(self._run).parameters.get("run_manager"):
            tool_kwargs = {**tool_kwargs, "run_manager": object()}
        response = self._run(*tool_args, **tool_kwargs)
        if tool_call_id is not None:
            return {"type": "tool", "content": response, "tool_call_id": tool_call_id, "name": self.name}
        return response

    async def arun(self, tool_input, tool_call_id=None):
        tool_args, tool_kwargs = self._to_args_and_kwargs(tool_input)
        if signature(self._arun).parameters.get("run_manager"):
            tool_kwargs = {**tool_kwargs, "run_manager": object()}
        return await self._arun(*tool_args, **tool_kwargs)

    def invoke(self, input, config=None, **kwargs):
        if isinstance(input, dict) and input.get("type") == "tool_call":
            return self.run(input["args"], tool_call_id=input["id"])
        return self.run(input)

    async def ainvoke(self, input, config=None, **kwargs):
        return await self.arun(input)


class StructuredTool(BaseTool):
    def _run(self, *args, run_manager=None, **kwargs):
        return self.func(*args, **kwargs)

    async def _arun(self, *args, run_manager=None, **kwargs):
        return self.func(*args, **kwargs)


def test_langchain_tool():
    player = Player(EXPECTED, strict=True)
    search = langchain_tool(StructuredTool(name="search", description="", args_schema=None, func=real_tool_must_not_run),
                            player)
    weather = langchain_tool(StructuredTool(name="get_weather", description="", args_schema=None,
                                            func=real_tool_must_not_run), player)
    assert isinstance(search, StructuredTool) and search.name == "search"
    msg = search.invoke({"type": "tool_call", "name": "search", "args": dict(SEARCH), "id": "call_1"})
    assert msg["tool_call_id"] == "call_1" and msg["content"]["hits"]
    with pytest.raises(RecordedToolError):
        weather.invoke({"city": "Lisbon"})
    assert asyncio.run(weather.ainvoke({"city": "Lisbon"}))["sky"] == "clear"


def test_langchain_string_input_is_matched_as_text():
    player = Player(EXPECTED, strict=True)
    tool = langchain_tool(StructuredTool(name="search", description="", args_schema=None, func=real_tool_must_not_run),
                          player)
    assert tool.invoke('{"q":"hotels in Lisbon","limit":10}')["hits"]


def test_replay_tools_picks_the_adapter():
    player = Player(EXPECTED)
    out = replay_tools([function_tool(real_tool_must_not_run, "search"),
                        PydanticAITool(real_tool_must_not_run, "book"),
                        StructuredTool(name="get_weather", description="", args_schema=None,
                                       func=real_tool_must_not_run)], player)
    assert [type(t).__name__ for t in out] == ["FunctionTool", "PydanticAITool", "StructuredTool"]
    with pytest.raises(TypeError):
        replay_tools([object()], player)

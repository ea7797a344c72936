"""The test doubles: ScriptedModel fails loudly, FunctionModel computes steps, MemoryStore behaves like a store."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import anyio
import pytest

from tether.errors import ProviderServerError
from tether.llm import ModelRequest, StepFinish, StepStart, TextDelta, ToolCallEvent, ToolInputStart
from tether.testing import (
    FunctionModel,
    MemoryStore,
    Reasoning,
    ScriptedModel,
    ScriptError,
    Step,
    incomplete_call,
    invalid_call,
    tool_call,
)


async def collect(stream: Any) -> list[Any]:
    return [event async for event in stream]


@pytest.mark.anyio
async def test_scripted_model_plays_steps_then_fails_on_an_unexpected_one() -> None:
    model = ScriptedModel(["hello", [tool_call("echo", {"x": 1}, id="c1")]])
    first = await collect(model.stream(ModelRequest()))
    assert isinstance(first[0], StepStart) and isinstance(first[-1], StepFinish)
    assert [e.text for e in first if isinstance(e, TextDelta)] == ["hello"]
    assert first[-1].reason == "stop"
    second = await collect(model.stream(ModelRequest()))
    assert [type(e) for e in second[1:3]] == [ToolInputStart, ToolCallEvent]
    assert second[-1].reason == "tool-calls"
    with pytest.raises(ScriptError, match="unexpected step 3"):
        model.stream(ModelRequest())
    assert len(model.requests) == 2


def test_scripted_model_fails_on_leftover_steps() -> None:
    with pytest.raises(ScriptError, match="never played"), ScriptedModel(["one"]):
        pass


@pytest.mark.anyio
async def test_scripted_errors_are_raised_mid_stream() -> None:
    model = ScriptedModel([Step("partial", ProviderServerError("down"))])
    seen: list[Any] = []
    with pytest.raises(ProviderServerError):
        async for event in model.stream(ModelRequest()):
            seen.append(event)
    assert any(isinstance(e, TextDelta) for e in seen)


def test_call_helpers_mark_invalid_and_incomplete_calls() -> None:
    assert invalid_call("t", "{").invalid and invalid_call("t", "{").input == "{"
    assert incomplete_call("t").incomplete
    assert tool_call("t").input == {}


@pytest.mark.anyio
async def test_function_model_computes_each_step_from_the_request() -> None:
    async def respond(request: ModelRequest) -> Any:
        return Step(Reasoning("thinking"), f"{len(request.messages)} messages", finish="length")

    model = FunctionModel(respond)
    events = await collect(model.stream(ModelRequest()))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["0 messages"]
    assert events[-1].reason == "length" and model.requests == [ModelRequest()]


@pytest.mark.anyio
async def test_memory_store_runs_a_session() -> None:
    from pathlib import Path

    from tether.bus import Bus
    from tether.session import Sessions, ToolPart
    from tether.tools import Tool, ToolRegistry, ToolResponse

    class Agent:
        name = "build"
        rules = ()
        steps = None
        prompt = None
        options = MappingProxyType({})

    class Loc:
        tools = ToolRegistry()
        root = Path(".")
        directory = Path(".")

    Loc.tools.register(
        {"echo": Tool(description="e", input=dict, execute=lambda i, c: ToolResponse(content="ok"))}
    )
    store = MemoryStore()
    sessions = Sessions(store=store, bus=Bus(), agents={"build": Agent()})
    session = await sessions.create(Loc())
    with anyio.fail_after(5):
        await session.prompt("go", model=ScriptedModel([[tool_call("echo")], "done"]))
    parts = [p for m in await store.load_messages(session.id) for p in m.parts if isinstance(p, ToolPart)]
    assert [p.state for p in parts] == ["completed"]
    assert await store.recover() == 0
    assert [s.id for s in await store.list_sessions()] == [session.id]

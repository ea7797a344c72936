"""The runner against a real SQLite store and scripted models."""

from __future__ import annotations

import ast
import contextlib
import functools
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

import tether.session
from tether.errors import (
    DeclinedError,
    ProviderBadRequestError,
    ProviderServerError,
    StoreError,
    ToolFailure,
    UsageError,
)
from tether.llm import AssistantMessage, ModelRequest, TextDelta, ToolInputStart, ToolMessage
from tether.permissions import (
    PermissionAsked,
    PermissionRequest,
    PermissionService,
    ResolvedRules,
    Rule,
    Ruleset,
    SavedApprovals,
)
from tether.records import DurableEvent
from tether.session import (
    AssistantInfo,
    PartDelta,
    PartUpdated,
    Session,
    Sessions,
    TextPart,
    ToolPart,
    ToolProgress,
    TurnResult,
)
from tether.session.internal import ABORTED_ERROR, INCOMPLETE_CALL_ERROR, MAX_STEPS_PROMPT
from tether.store import SessionStore, StoredMessage
from tether.testing import (
    FunctionModel,
    Reasoning,
    ScriptedModel,
    ScriptError,
    Step,
    incomplete_call,
    invalid_call,
    tool_call,
)
from tether.tools import File, Text, Tool, ToolContext, ToolResponse
from tether.tools.internal import FINAL_STEP_ERROR

from .conftest import Agent, Harness


class Echo(BaseModel):
    text: str


def echo_tool() -> Tool[Any, Any]:
    return Tool(description="Echo text back", input=Echo, execute=lambda i, c: ToolResponse(content=i.text))


def tool_parts(messages: Sequence[StoredMessage]) -> list[ToolPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolPart)]


def results(request: ModelRequest) -> list[tuple[str, str, bool]]:
    last = request.messages[-1]
    assert isinstance(last, ToolMessage)
    return [(r.call_id, "".join(getattr(c, "text", "") for c in r.content), r.is_error) for r in last.results]


@pytest.mark.anyio
async def test_parallel_calls_finishing_out_of_order_keep_the_models_order(harness: Harness) -> None:
    second_done = anyio.Event()

    async def slow(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await second_done.wait()
        return ToolResponse(content="slow:" + i.text)

    async def fast(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        second_done.set()
        return ToolResponse(content="fast:" + i.text)

    harness.tools.register(
        {
            "slow": Tool(description="slow", input=Echo, execute=slow),
            "fast": Tool(description="fast", input=Echo, execute=fast),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [[tool_call("slow", {"text": "a"}, id="c1"), tool_call("fast", {"text": "b"}, id="c2")], "done"]
    )
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.stop == "done" and result.tool_calls == 2 and result.text == "done"
    assert results(model.requests[1]) == [("c1", "slow:a", False), ("c2", "fast:b", False)]
    parts = tool_parts(await session.messages())
    assert [(p.call_id, p.state) for p in parts] == [("c1", "completed"), ("c2", "completed")]
    assert parts[0].ended is not None and parts[0].started is not None


@pytest.mark.anyio
async def test_a_failing_sibling_does_not_affect_the_other_call(harness: Harness) -> None:
    def broken(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        raise ToolFailure("no such file: " + i.text)

    def defect(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        raise RuntimeError("boom")

    harness.tools.register(
        {
            "echo": echo_tool(),
            "broken": Tool(description="broken", input=Echo, execute=broken),
            "defect": Tool(description="defect", input=Echo, execute=defect),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [
            [
                tool_call("broken", {"text": "x"}, id="c1"),
                tool_call("echo", {"text": "ok"}, id="c2"),
                tool_call("defect", {"text": "y"}, id="c3"),
            ],
            "done",
        ]
    )
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.stop == "done"
    got = results(model.requests[1])
    assert got[0] == ("c1", "no such file: x", True)
    assert got[1] == ("c2", "ok", False)
    assert got[2] == ("c3", "Tool execution failed: boom", True)
    kinds = [p.error_kind for p in tool_parts(await session.messages())]
    assert kinds == ["tool", None, "defect"]


@pytest.mark.anyio
async def test_unknown_and_stale_calls_fail_without_running_anything(harness: Harness) -> None:
    ran: list[str] = []

    def make(label: str) -> Tool[Any, Any]:
        def run(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
            ran.append(label)
            return ToolResponse(content=label)

        return Tool(description=label, input=Echo, execute=run)

    registration = harness.tools.register({"echo": make("original")})

    def step(request: ModelRequest) -> Any:
        if len(request.messages) == 1:
            # The registration is replaced after the step materialized its catalog: the call is stale.
            registration.close()
            harness.tools.register({"echo": make("replacement")})
            return [tool_call("echo", {"text": "x"}, id="c1"), tool_call("nope", {}, id="c2")]
        return "done"

    session = await harness.sessions.create(harness.loc)
    model = FunctionModel(step)
    with anyio.fail_after(5):
        await session.prompt("go", model=model)
    assert results(model.requests[1]) == [
        ("c1", "Stale tool call: echo", True),
        ("c2", "Unknown tool: nope", True),
    ]
    assert ran == []


@pytest.mark.anyio
@pytest.mark.parametrize("agents", [{"build": Agent(steps=2)}])
async def test_final_step_keeps_definitions_disables_tools_and_stops(harness: Harness) -> None:
    harness.tools.register({"echo": echo_tool()})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [
            [tool_call("echo", {"text": "1"})],
            [tool_call("echo", {"text": "2"}, id="late")],
        ]
    )
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.stop == "max_steps" and result.steps == 2
    first, final = model.requests
    assert first.tool_choice == "auto" and final.tool_choice == "none"
    assert [d.name for d in final.tools] == ["echo"]
    last = final.messages[-1]
    assert last.role == "assistant" and getattr(last.content[0], "text", "") == MAX_STEPS_PROMPT
    late = tool_parts(await session.messages())[-1]
    assert (late.call_id, late.state, late.error, late.error_kind) == (
        "late",
        "error",
        FINAL_STEP_ERROR,
        "final_step",
    )


class Asker:
    """A permission service double: records requests and answers with ``answer``."""

    def __init__(self, answer: BaseException | None = None) -> None:
        self.answer = answer
        self.requests: list[Any] = []

    async def assert_(self, request: Any) -> None:
        self.requests.append(request)
        if self.answer is not None:
            raise self.answer


@pytest.mark.anyio
@pytest.mark.parametrize("permissions", [Asker()])
async def test_third_identical_call_in_a_row_asks_doom_loop(harness: Harness, permissions: Asker) -> None:
    harness.tools.register({"echo": echo_tool()})
    session = await harness.sessions.create(harness.loc)
    same = {"text": "again"}
    model = ScriptedModel(
        [
            [tool_call("echo", same)],
            [tool_call("echo", same)],
            [tool_call("echo", {"text": "different"})],
            [tool_call("echo", same)],
            [tool_call("echo", same)],
            [tool_call("echo", same, id="third")],
            "done",
        ]
    )
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.stop == "done"
    assert len(permissions.requests) == 1
    request = permissions.requests[0]
    assert request.action == "doom_loop" and list(request.resources) == ["echo"]
    assert request.source.call_id == "third"
    assert tool_parts(await session.messages())[-1].state == "completed"


@pytest.mark.anyio
@pytest.mark.parametrize("permissions", [Asker(DeclinedError("no"))])
async def test_declined_doom_loop_fails_the_call_and_stops(harness: Harness) -> None:
    harness.tools.register({"echo": echo_tool()})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("echo", {"text": "x"})] for _ in range(3)])
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.stop == "declined"
    last = tool_parts(await session.messages())[-1]
    assert last.state == "error" and last.error_kind == "declined"


@pytest.mark.anyio
async def test_declined_permission_fails_the_call_and_stops_after_the_step(harness: Harness) -> None:
    def ask(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        raise DeclinedError("rejected")

    harness.tools.register({"echo": echo_tool(), "ask": Tool(description="ask", input=Echo, execute=ask)})
    session = await harness.sessions.create(harness.loc)
    # One step only: a second request would fail the script.
    model = ScriptedModel([[tool_call("ask", {"text": "x"}), tool_call("echo", {"text": "sibling"})]])
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.stop == "declined" and result.steps == 1
    declined, sibling = tool_parts(await session.messages())
    assert declined.state == "error" and declined.error_kind == "declined"
    assert "rejected permission" in (declined.error or "")
    assert sibling.state == "completed"


@pytest.mark.anyio
async def test_session_cancel_mid_tool_marks_it_aborted_and_interrupted(harness: Harness) -> None:
    started = anyio.Event()
    echoed = anyio.Event()
    finished_cleanly = False

    async def quick(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        echoed.set()
        return ToolResponse(content=i.text)

    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        nonlocal finished_cleanly
        await echoed.wait()
        await anyio.lowlevel.checkpoint()
        started.set()
        await anyio.sleep_forever()
        finished_cleanly = True
        raise AssertionError("unreachable")

    harness.tools.register(
        {
            "hang": Tool(description="hang", input=Echo, execute=hang),
            "echo": Tool(description="e", input=Echo, execute=quick),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("echo", {"text": "done first"}), tool_call("hang", {"text": "x"})]])
    result = None
    with model, anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                nonlocal result
                result = await session.prompt("go", model=model)

            tg.start_soon(run)
            await started.wait()
            assert session.busy
            session.cancel()
    assert result is not None and result.stop == "cancelled"
    assert not session.busy and not finished_cleanly
    messages = await session.messages()
    done, hung = tool_parts(messages)
    assert done.state == "completed"
    assert (hung.state, hung.error, hung.interrupted, hung.error_kind) == (
        "error",
        ABORTED_ERROR,
        True,
        "aborted",
    )
    assistant = messages[-1].info
    assert isinstance(assistant, AssistantInfo) and assistant.error is not None
    assert assistant.error.kind == "aborted" and assistant.completed is not None

    # The session stays usable and the next step's history is consistent (every call has a result).
    follow = ScriptedModel(["ok"])
    with follow, anyio.fail_after(5):
        await session.prompt("again", model=follow)
    replayed = follow.requests[0].messages
    tool_message = replayed[2]
    assert isinstance(tool_message, ToolMessage)
    assert [(r.is_error, r.content) for r in tool_message.results] == [
        (False, (Text("done first"),)),
        (True, (Text(ABORTED_ERROR),)),
    ]


def hanging_tool(started: anyio.Event) -> Tool[Echo, Any]:
    """A tool that sets ``started`` and then waits until it is cancelled."""

    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return Tool(description="hang", input=Echo, execute=hang)


@pytest.mark.anyio
async def test_outer_cancel_scope_propagates_and_still_marks_parts(harness: Harness) -> None:
    started = anyio.Event()

    harness.tools.register({"hang": hanging_tool(started)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("hang", {"text": "x"})]])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(session.prompt, "go", model=model))
            await started.wait()
            tg.cancel_scope.cancel()
    await harness.store.flush()
    (part,) = tool_parts(await session.messages())
    assert part.state == "error" and part.interrupted and part.error == ABORTED_ERROR


@pytest.mark.anyio
async def test_invalid_and_incomplete_calls(harness: Harness) -> None:
    ran: list[str] = []

    def run(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        ran.append(i.text)
        return ToolResponse(content=i.text)

    harness.tools.register({"echo": Tool(description="echo", input=Echo, execute=run)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [
            [invalid_call("echo", '{"text": "unterminated', id="bad"), incomplete_call("echo", id="cut")],
            "done",
        ]
    )
    with model, anyio.fail_after(5):
        await session.prompt("go", model=model)
    bad, cut = results(model.requests[1])
    assert bad[2] and "not valid JSON" in bad[1] and '{"text": "unterminated' in bad[1]
    assert cut == ("cut", INCOMPLETE_CALL_ERROR, True)
    assert ran == []
    parts = tool_parts(await session.messages())
    assert parts[0].raw == '{"text": "unterminated' and parts[0].input is None


@pytest.mark.anyio
async def test_retryable_provider_error_is_retried(harness: Harness) -> None:
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([Step("partial", ProviderServerError("overloaded", status=503)), "recovered"])
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.text == "recovered" and result.steps == 1
    messages = await session.messages()
    failed = messages[1].info
    assert isinstance(failed, AssistantInfo) and failed.error is not None and failed.error.retryable


@pytest.mark.anyio
async def test_non_retryable_provider_error_is_recorded_and_raised(harness: Harness) -> None:
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([Step(ProviderBadRequestError("bad request", status=400))])
    with model, anyio.fail_after(5), pytest.raises(ProviderBadRequestError):
        await session.prompt("go", model=model)
    assert not session.busy
    info = (await session.messages())[-1].info
    assert isinstance(info, AssistantInfo)
    assert info.error is not None and info.error.kind == "provider" and info.error.message == "bad request"


@pytest.mark.anyio
async def test_events_reach_the_bus_and_text_is_coalesced_in_the_store(harness: Harness) -> None:
    seen: list[Any] = []
    harness.bus.subscribe("*", seen.append)

    async def report(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        ctx.progress({"tail": "working"})
        return ToolResponse(content="ok")

    harness.tools.register({"echo": Tool(description="echo", input=Echo, execute=report)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [
            [tool_call("echo", {"text": "x"})],
            Step(TextDelta(id="t", text="Hel"), TextDelta(id="t", text="lo")),
        ]
    )
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.text == "Hello"
    deltas = [e.delta for e in seen if isinstance(e, PartDelta)]
    assert deltas == ["Hel", "lo"]
    assert any(isinstance(e, ToolProgress) and e.update == {"tail": "working"} for e in seen)
    states = [e.part.state for e in seen if isinstance(e, PartUpdated) and isinstance(e.part, ToolPart)]
    assert states == ["pending", "running", "completed"]
    texts = [p for m in await session.messages() for p in m.parts if isinstance(p, TextPart)]
    assert [t.text for t in texts] == ["go", "Hello"]
    logged = await harness.store.events(session.id)
    assert not any(kind == "message.part.delta" for _, kind, _ in logged)


@pytest.mark.anyio
async def test_reopened_session_replays_history_with_images_and_errors(harness: Harness) -> None:
    image = File(mime="image/png", data="aGVsbG8=")

    def shot(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(content=[Text("screenshot"), image])

    def broken(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        raise ToolFailure("nope")

    harness.tools.register(
        {
            "shot": Tool(description="shot", input=Echo, execute=shot),
            "broken": Tool(description="b", input=Echo, execute=broken),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [[tool_call("shot", {"text": "x"}, id="s"), tool_call("broken", {"text": "y"}, id="b")], "done"]
    )
    with model, anyio.fail_after(5):
        await session.prompt("go", model=model)
    live_history = list(model.requests[1].messages)

    # A fresh service over the same store rebuilds the same history from the stored parts.
    from tether.session import Sessions

    async def locate(directory: str, project: str) -> Any:
        return harness.loc

    other = Sessions(store=harness.store, bus=harness.bus, agents=harness.agents, locate=locate)
    reopened = await other.get(session.id)
    follow = ScriptedModel(["again"])
    with follow, anyio.fail_after(5):
        await reopened.prompt("more", model=follow)
    replay = list(follow.requests[0].messages)
    assert replay[: len(live_history)] == live_history
    tool_message = live_history[2]
    assert isinstance(tool_message, ToolMessage)
    assert tool_message.results[0].content == (Text("screenshot"), image)
    assert tool_message.results[1].is_error and tool_message.results[1].content == (Text("nope"),)
    other.close()


@pytest.mark.anyio
async def test_concurrency_cap_limits_parallel_settles(harness: Harness) -> None:
    harness.sessions.concurrency = 2
    running = 0
    peak = 0

    async def work(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.lowlevel.checkpoint()
        await anyio.lowlevel.checkpoint()
        running -= 1
        return ToolResponse(content="ok")

    harness.tools.register({"work": Tool(description="work", input=Echo, execute=work)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("work", {"text": str(n)}) for n in range(6)], "done"])
    with model, anyio.fail_after(5):
        await session.prompt("go", model=model)
    assert peak == 2


@pytest.mark.anyio
async def test_busy_session_rejects_a_second_prompt(harness: Harness) -> None:
    from tether.errors import UsageError

    started = anyio.Event()

    harness.tools.register({"hang": hanging_tool(started)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("hang", {"text": "x"})]])
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(session.prompt, "go", model=model))
            await started.wait()
            with pytest.raises(UsageError, match="busy"):
                await session.prompt("again", model=model)
            session.cancel()


@pytest.mark.anyio
@pytest.mark.slow
@pytest.mark.parametrize("agents", [{"build": Agent(steps=20_000)}])  # above the default cap of 100 steps
async def test_ten_thousand_sequential_tool_calls(harness: Harness) -> None:
    harness.tools.register({"echo": echo_tool()})
    session = await harness.sessions.create(harness.loc)
    total = 10_000
    steps = 0

    def step(request: ModelRequest) -> Any:
        nonlocal steps
        steps += 1
        if steps <= total:
            return [tool_call("echo", {"text": str(steps)})]
        return "finished"

    model = FunctionModel(step)
    with anyio.fail_after(1800):  # a hang guard only: CPU-bound, so its time follows the machine's load
        result = await session.prompt("go", model=model)
    assert result.tool_calls == total and result.text == "finished"
    assert len(model.requests[-1].messages) == 1 + 2 * total
    parts = tool_parts(await session.messages())
    assert len(parts) == total and all(p.state == "completed" for p in parts)
    assert parts[-1].content == (Text(str(total)),)


@pytest.mark.anyio
async def test_an_unexpected_model_failure_is_raised_from_prompt_unwrapped(harness: Harness) -> None:
    session = await harness.sessions.create(harness.loc)
    with anyio.fail_after(5), pytest.raises(ScriptError, match="unexpected step 1"):
        await session.prompt("go", model=ScriptedModel([]))
    assert not session.busy


@pytest.mark.anyio
async def test_call_tasks_are_reused_across_steps_and_a_blocked_call_never_holds_up_a_sibling(
    harness: Harness,
) -> None:
    release = anyio.Event()
    order: list[str] = []

    async def slow(value: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        order.append(f"start {value.text}")
        await release.wait()
        return ToolResponse(content=value.text)

    async def quick(value: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        order.append(f"quick {value.text}")
        release.set()
        return ToolResponse(content=value.text)

    harness.tools.register(
        {
            "slow": Tool(description="s", input=Echo, execute=slow),
            "quick": Tool(description="q", input=Echo, execute=quick),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [
            [tool_call("quick", {"text": "a"})],
            [tool_call("slow", {"text": "b"}), tool_call("quick", {"text": "c"})],
            "done",
        ]
    )
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.tool_calls == 3
    assert order == ["quick a", "start b", "quick c"]


class FlakyStore:
    """A real store (SQLite or PostgreSQL) whose ``append`` raises ``StoreError`` once, for the first event ``fails`` matches."""

    def __init__(self, store: SessionStore, fails: Callable[[DurableEvent], bool]) -> None:
        self._store = store
        self._fails = fails
        self.raised = False

    def append(self, event: DurableEvent) -> None:
        if not self.raised and self._fails(event):
            self.raised = True
            raise StoreError("disk full")
        self._store.append(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def assistant_infos(messages: Sequence[StoredMessage]) -> list[AssistantInfo]:
    return [m.info for m in messages if isinstance(m.info, AssistantInfo)]


@pytest.mark.anyio
async def test_an_unexpected_stream_failure_lets_started_calls_finish_and_fails_the_unfinished_ones(
    harness: Harness,
) -> None:
    async def slow(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        for _ in range(5):  # still running when the stream fails
            await anyio.lowlevel.checkpoint()
        return ToolResponse(content="slow:" + i.text)

    harness.tools.register({"slow": Tool(description="s", input=Echo, execute=slow), "echo": echo_tool()})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [
            [
                tool_call("slow", {"text": "a"}, id="c1"),
                ToolInputStart(id="c2", name="echo"),
                RuntimeError("adapter bug"),
            ]
        ]
    )
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="adapter bug"):
        await session.prompt("go", model=model)
    await harness.store.flush()
    messages = await session.messages()
    finished, unfinished = tool_parts(messages)
    assert (finished.state, finished.content) == ("completed", (Text("slow:a"),))
    assert (unfinished.state, unfinished.error_kind) == ("error", "defect")
    assert unfinished.error == "Tool execution failed: adapter bug" and not unfinished.interrupted
    (assistant,) = assistant_infos(messages)
    assert assistant.completed is not None and assistant.error is not None
    assert (assistant.error.kind, assistant.error.message) == ("error", "adapter bug")

    # The history was updated: the next turn replays a result for every call.
    follow = ScriptedModel(["ok"])
    with follow, anyio.fail_after(5):
        await session.prompt("again", model=follow)
    replayed = follow.requests[0].messages[2]
    assert isinstance(replayed, ToolMessage)
    assert [(r.call_id, r.is_error) for r in replayed.results] == [("c1", False), ("c2", True)]


@pytest.mark.anyio
async def test_a_store_failure_while_settling_a_call_fails_that_call_and_never_cancels_a_sibling(
    harness: Harness,
) -> None:
    first_done = anyio.Event()

    async def first(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        first_done.set()
        return ToolResponse(content="first")

    async def sibling(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await first_done.wait()
        for _ in range(5):  # still running after the failed write
            await anyio.lowlevel.checkpoint()
        return ToolResponse(content="sibling")

    harness.tools.register(
        {
            "first": Tool(description="f", input=Echo, execute=first),
            "sibling": Tool(description="s", input=Echo, execute=sibling),
        }
    )

    def completed_c1(event: DurableEvent) -> bool:
        part = getattr(event, "part", None)
        return isinstance(part, ToolPart) and part.call_id == "c1" and part.state == "completed"

    store = FlakyStore(harness.store, completed_c1)
    sessions = Sessions(store=store, bus=harness.bus, agents=harness.agents)  # type: ignore[arg-type]
    session = await sessions.create(harness.loc)
    model = ScriptedModel(
        [[tool_call("sibling", {"text": "b"}, id="c2"), tool_call("first", {"text": "a"}, id="c1")]]
    )
    with anyio.fail_after(5), pytest.raises(StoreError, match="disk full"):
        await session.prompt("go", model=model)
    sessions.close()
    assert store.raised
    await harness.store.flush()
    messages = await harness.store.load_messages(session.id)
    sib, failed = tool_parts(messages)
    assert (sib.call_id, sib.state, sib.content) == ("c2", "completed", (Text("sibling"),))
    assert (failed.call_id, failed.state, failed.error_kind) == ("c1", "error", "defect")
    assert failed.error == "Tool execution failed: disk full"
    (assistant,) = assistant_infos(messages)
    assert assistant.completed is not None and assistant.error is not None
    assert (assistant.error.kind, assistant.error.message) == ("store", "disk full")


@contextlib.asynccontextmanager
async def permission_service(harness: Harness, tmp_path: Path) -> AsyncGenerator[PermissionService]:
    rules = Ruleset(
        source="session",
        rules=(Rule("read", "one-*", "allow"), Rule("read", "two-*", "deny"), Rule("read", "ask-*", "ask")),
    )
    resolved = ResolvedRules(project="p", rulesets=(rules,))
    async with (
        SavedApprovals(tmp_path / "approvals.db") as saved,
        PermissionService(bus=harness.bus, saved=saved, resolve=lambda _s, _a: resolved) as service,
    ):
        yield service


def reading_tool(service: PermissionService, live: int, all_live: anyio.Event) -> Tool[Echo, Any]:
    """A tool that asks ``read`` on its input text once ``live`` calls (of every session) have started."""
    started: list[str] = []

    async def read(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        started.append(ctx.call_id)
        if len(started) == live:
            all_live.set()
        await all_live.wait()
        await service.assert_(PermissionRequest.from_context(ctx, action="read", resources=(i.text,)))
        return ToolResponse(content=f"read {i.text}")

    return Tool(description="r", input=Echo, execute=read)


def decisions(part: ToolPart) -> list[tuple[str, list[str], str | None, str | None]]:
    """Each record on a part: its event, its resources, its effect (asks and rule decisions) and its reply."""
    return [
        (r["event"], r["resources"], r.get("decision", {}).get("effect"), r.get("reply"))
        for r in part.permissions
    ]


@pytest.mark.anyio
async def test_a_decision_is_recorded_on_its_own_sessions_part_when_parallel_calls_share_call_ids(
    harness: Harness, tmp_path: Path
) -> None:
    # Local servers number calls call_0, call_1... in every session: both sessions run call_0 and call_1 at once.
    async with permission_service(harness, tmp_path) as service:
        all_live = anyio.Event()
        harness.tools.register({"read": reading_tool(service, 4, all_live)})
        send, receive = anyio.create_memory_object_stream[PermissionAsked](4)
        harness.bus.subscribe(PermissionAsked, send.send_nowait)

        async def approve() -> None:
            asked = await receive.receive()
            await service.reply(asked.request.id, "once")

        first = await harness.sessions.create(harness.loc)
        second = await harness.sessions.create(harness.loc)
        calls = [("call_0", "one-0.txt"), ("call_1", "one-1.txt")]
        first_model = ScriptedModel([[tool_call("read", {"text": t}, id=c) for c, t in calls], "done"])
        calls = [("call_0", "two-0.txt"), ("call_1", "ask-1.txt")]
        second_model = ScriptedModel([[tool_call("read", {"text": t}, id=c) for c, t in calls], "done"])
        with first_model, second_model, send, receive, anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(approve)
                tg.start_soon(functools.partial(first.prompt, "go", model=first_model))
                tg.start_soon(functools.partial(second.prompt, "go", model=second_model))
    one_0, one_1 = tool_parts(await first.messages())
    two_0, ask_1 = tool_parts(await second.messages())
    assert decisions(one_0) == [("permission.decided", ["one-0.txt"], "allow", None)]
    assert decisions(one_1) == [("permission.decided", ["one-1.txt"], "allow", None)]
    assert decisions(two_0) == [("permission.decided", ["two-0.txt"], "deny", None)]
    assert two_0.error_kind == "blocked"
    assert decisions(ask_1) == [
        ("permission.asked", ["ask-1.txt"], "ask", None),
        ("permission.replied", ["ask-1.txt"], None, "once"),
    ]
    asked, replied = ask_1.permissions
    assert asked["id"] == replied["id"]
    (verdict,) = asked["decision"]["verdicts"]
    assert verdict["rule"] == {"action": "read", "resource": "ask-*", "effect": "ask"}
    assert verdict["source"] == "session"
    assert ask_1.state == "completed"


@pytest.mark.anyio
async def test_a_call_cancelled_while_it_asks_keeps_only_its_ask_record(
    harness: Harness, tmp_path: Path
) -> None:
    async with permission_service(harness, tmp_path) as service:
        all_live = anyio.Event()
        harness.tools.register({"read": reading_tool(service, 1, all_live)})
        session = await harness.sessions.create(harness.loc)
        harness.bus.subscribe(PermissionAsked, lambda _event: session.cancel())
        model = ScriptedModel([[tool_call("read", {"text": "ask-0.txt"})]])
        with model, anyio.fail_after(5):
            result = await session.prompt("go", model=model)
        assert result.stop == "cancelled" and service.pending() == []
    (part,) = tool_parts(await session.messages())
    assert decisions(part) == [("permission.asked", ["ask-0.txt"], "ask", None)]
    assert part.interrupted


def test_the_session_package_never_probes_an_object_with_getattr() -> None:
    # Permission decisions used to reach the session as untyped bus events read with getattr probes; they now arrive
    # typed, through the call's context. The one getattr left is the optional ``aclose`` of a model's stream.
    package = Path(tether.session.__file__).parent
    probes: list[tuple[str, str]] = []
    for module in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(), module.name)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
                probes.append((module.name, ast.unparse(node)))
    assert probes == [("_step.py", "getattr(stream, 'aclose', None)")]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("rule", "named"),
    [
        (("bash", "*", "Deny"), "bash"),
        (("read", "*", "block"), "block"),
        (("read", "*"), "read"),
        (("read", "*", "allow", "extra"), "extra"),
        (("read", 3, "allow"), "3"),
    ],
)
async def test_an_invalid_session_rule_is_a_usage_error_naming_it(
    harness: Harness, rule: Sequence[Any], named: str
) -> None:
    with pytest.raises(UsageError, match=f"Invalid session rule .*{named}"):
        await harness.sessions.create(harness.loc, rules=[("read", "*", "allow"), rule])
    assert await harness.sessions.list() == []


async def cancel_when(session: Session, started: anyio.Event, model: ScriptedModel) -> TurnResult:
    """Run a turn, cancel it once ``started`` is set, return its result."""
    result: TurnResult | None = None

    async def run() -> None:
        nonlocal result
        result = await session.prompt("go", model=model)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await started.wait()
        session.cancel()
    assert result is not None
    return result


@pytest.mark.anyio
async def test_a_cancelled_tool_finishes_its_cleanup_before_its_part_is_marked_interrupted(
    harness: Harness,
) -> None:
    started = anyio.Event()
    reaped = False
    reaped_when_marked: list[bool] = []

    async def shell(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        nonlocal reaped
        process = await anyio.open_process([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            started.set()
            await process.wait()
        finally:
            with anyio.CancelScope(shield=True):  # like bash: kill the child and reap it
                process.kill()
                await process.wait()
                await process.aclose()
                reaped = True
        return ToolResponse(content="unreachable")

    def on_part(event: PartUpdated) -> None:
        part = event.part
        if isinstance(part, ToolPart) and part.state == "error":
            reaped_when_marked.append(reaped)

    harness.tools.register({"shell": Tool(description="s", input=Echo, execute=shell)})
    session = await harness.sessions.create(harness.loc)
    with harness.bus.subscribe(PartUpdated, on_part), anyio.fail_after(5):
        result = await cancel_when(session, started, ScriptedModel([[tool_call("shell", {"text": "x"})]]))
    assert result.stop == "cancelled"
    assert reaped_when_marked == [True]
    (part,) = tool_parts(await session.messages())
    assert (part.state, part.error, part.interrupted) == ("error", ABORTED_ERROR, True)


@pytest.mark.anyio
async def test_a_tool_that_outlasts_the_cancel_grace_is_marked_interrupted_without_waiting_for_it(
    harness: Harness,
) -> None:
    started = anyio.Event()
    marked = anyio.Event()
    release = anyio.Event()

    async def stubborn(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        try:
            started.set()
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):  # ignores the grace: only the test ends this
                await release.wait()
        return ToolResponse(content="unreachable")

    def on_part(event: PartUpdated) -> None:
        if isinstance(event.part, ToolPart) and event.part.state == "error":
            marked.set()
            release.set()

    harness.tools.register({"stubborn": Tool(description="s", input=Echo, execute=stubborn)})
    sessions = Sessions(store=harness.store, bus=harness.bus, agents=harness.agents, cancel_grace=0.01)
    session = await sessions.create(harness.loc)
    with harness.bus.subscribe(PartUpdated, on_part), anyio.fail_after(5):
        result = await cancel_when(session, started, ScriptedModel([[tool_call("stubborn", {"text": "x"})]]))
    sessions.close()
    assert result.stop == "cancelled" and marked.is_set()
    (part,) = tool_parts(await harness.store.load_messages(session.id))
    assert (part.state, part.error, part.interrupted) == ("error", ABORTED_ERROR, True)


@pytest.mark.anyio
async def test_progress_from_a_worker_thread_reaches_subscribers_on_the_loop_thread(harness: Harness) -> None:
    loop_thread = threading.get_ident()
    tool_threads: list[int] = []
    subscriber_threads: list[int] = []
    got = anyio.Event()

    def work(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:  # sync: settle runs it in a worker thread
        tool_threads.append(threading.get_ident())
        ctx.progress({"line": i.text})
        return ToolResponse(content="ok")

    def on_any(event: Any) -> None:
        if isinstance(event, ToolProgress):
            subscriber_threads.append(threading.get_ident())
            got.set()

    harness.tools.register({"work": Tool(description="w", input=Echo, execute=work)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("work", {"text": "tick"})], "done"])
    with harness.bus.subscribe("*", on_any), model, anyio.fail_after(5):
        await session.prompt("go", model=model)
        await got.wait()
    assert tool_threads != [loop_thread]
    assert subscriber_threads == [loop_thread]


@pytest.mark.anyio
async def test_a_turn_without_an_agent_step_limit_stops_at_the_default_cap(harness: Harness) -> None:
    harness.tools.register({"echo": echo_tool()})
    session = await harness.sessions.create(harness.loc)
    model = FunctionModel(lambda request: [tool_call("echo", {"text": "again"})])  # never stops by itself
    with anyio.fail_after(60):
        result = await session.prompt("go", model=model)
    assert result.stop == "max_steps" and result.steps == 100


@pytest.mark.anyio
async def test_a_steps_text_blocks_are_joined_and_sent_back_in_stream_order(harness: Harness) -> None:
    # One pass over a step's parts gives the turn's calls and its text (``_runner``), another the history's messages
    # (``_history``): the step's bounds are skipped, empty text is neither joined nor sent, reasoning is sent.
    model = ScriptedModel(
        [
            Step(Reasoning("think"), "first", tool_call("missing", id="c1"), "", "second"),
            Step("a", "", "b"),
        ]
    )
    session = await harness.sessions.create(harness.loc)
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.text == "a\nb" and [call.call_id for call in result.calls] == ["c1"]
    sent = model.requests[1].messages[-2]
    assert isinstance(sent, AssistantMessage)
    assert [type(c).__name__ for c in sent.content] == [
        "ReasoningContent",
        "TextContent",
        "ToolCallContent",
        "TextContent",
    ]
    assert [getattr(c, "text", None) for c in sent.content] == ["think", "first", None, "second"]

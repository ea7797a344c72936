"""Tool deadlines on a shared timer (``Deadlines``): the same outcomes as a timer per call."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Generator
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tether.tools import (
    Completed,
    Failed,
    Tool,
    ToolCall,
    ToolContext,
    ToolFailure,
    ToolRegistry,
    ToolResponse,
)
from tether.tools.internal import Deadlines


class Q(BaseModel):
    q: str


def call(name: str, q: str = "x") -> ToolCall:
    return ToolCall(call_id=f"call_{name}_{q}", name=name, input={"q": q})


async def hang(inp: Q, ctx: ToolContext) -> ToolResponse[Any]:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def quick(inp: Q, ctx: ToolContext) -> ToolResponse[Any]:
    return ToolResponse(content="ok:" + inp.q)


@pytest.fixture
async def deadlines() -> AsyncIterator[Deadlines]:
    timer = Deadlines()
    async with anyio.create_task_group() as tg:
        tg.start_soon(timer.run)
        yield timer
        timer.close()


@pytest.mark.anyio
async def test_a_hanging_call_times_out_with_its_name(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext
) -> None:
    registry.register({"slow": Tool(description="slow", input=Q, execute=hang, timeout=0.05)})
    with anyio.fail_after(5):
        outcome = await registry.materialize().settle(call("slow"), ctx, deadlines=deadlines)
    assert isinstance(outcome, Failed) and outcome.kind == "timeout"
    assert outcome.error == 'Tool "slow" timed out after 0.05s'


@pytest.mark.anyio
async def test_a_shorter_deadline_after_a_longer_one_still_fires_on_time(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext
) -> None:
    # The watcher sleeps until the 100 s deadline; the 0.05 s one, registered later, must wake it earlier.
    registry.register(
        {
            "long": Tool(description="long", input=Q, execute=hang, timeout=100),
            "short": Tool(description="short", input=Q, execute=hang, timeout=0.05),
        }
    )
    step = registry.materialize()
    outcomes: dict[str, Any] = {}

    async def settle(name: str) -> None:
        outcomes[name] = await step.settle(call(name), ctx, deadlines=deadlines)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle, "long")
            await anyio.wait_all_tasks_blocked()
            await settle("short")
            assert "long" not in outcomes  # the sibling's deadline touched only its own call
            tg.cancel_scope.cancel()
    assert isinstance(outcomes["short"], Failed) and outcomes["short"].kind == "timeout"
    assert "long" not in outcomes  # cancelled: no outcome at all


@pytest.mark.anyio
async def test_calls_within_their_deadline_complete_and_leave_nothing_behind(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext
) -> None:
    registry.register({"quick": Tool(description="quick", input=Q, execute=quick, timeout=0.05)})
    step = registry.materialize()
    for i in range(1_000):
        outcome = await step.settle(call("quick", str(i)), ctx, deadlines=deadlines)
        assert isinstance(outcome, Completed)
    # Past every deadline: a settled call is never cancelled afterwards, nor is the task that ran it.
    await anyio.sleep(0.1)
    outcome = await step.settle(call("quick", "after"), ctx, deadlines=deadlines)
    assert isinstance(outcome, Completed) and outcome.content[0].text == "ok:after"  # type: ignore[union-attr]
    assert sum(len(queue) for queue in deadlines._queues.values()) <= 1  # settled calls are dropped


@pytest.mark.anyio
async def test_cancelling_the_caller_propagates_with_no_outcome(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext
) -> None:
    registry.register({"slow": Tool(description="slow", input=Q, execute=hang)})
    step = registry.materialize()
    outcomes: list[Any] = []

    async def settle() -> None:
        outcomes.append(await step.settle(call("slow"), ctx, deadlines=deadlines))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
    assert outcomes == []


@pytest.mark.anyio
async def test_a_sync_tool_past_its_deadline_times_out(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext
) -> None:
    gate = threading.Event()

    def blocking(inp: Q, ctx: ToolContext) -> str:
        gate.wait(5)
        return "late"

    registry.register({"sync": Tool(description="sync", input=Q, execute=blocking, timeout=0.05)})
    try:
        with anyio.fail_after(5):
            outcome = await registry.materialize().settle(call("sync"), ctx, deadlines=deadlines)
    finally:
        gate.set()  # the worker thread ends (it was abandoned, not killed)
    assert isinstance(outcome, Failed) and outcome.kind == "timeout"


# -- eager start: a coroutine runs until it first suspends before its deadline is armed ------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("shared", [True, False], ids=["shared timer", "own timer"])
async def test_a_call_that_never_suspends_puts_nothing_on_the_timer(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext, shared: bool
) -> None:
    registry.register({"quick": Tool(description="quick", input=Q, execute=quick, timeout=0.05)})
    step = registry.materialize()
    for i in range(100):
        outcome = await step.settle(call("quick", str(i)), ctx, deadlines=deadlines if shared else None)
        assert isinstance(outcome, Completed) and outcome.content[0].text == f"ok:{i}"  # type: ignore[union-attr]
    assert deadlines._queues == {}  # no call ever needed its deadline


@pytest.mark.anyio
@pytest.mark.parametrize("shared", [True, False], ids=["shared timer", "own timer"])
async def test_a_call_that_suspends_completes_and_leaves_the_timer(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext, shared: bool
) -> None:
    async def steps(inp: Q, ctx: ToolContext) -> str:
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        return "stepped:" + inp.q

    registry.register({"steps": Tool(description="steps", input=Q, execute=steps, timeout=30)})
    outcome = await registry.materialize().settle(call("steps"), ctx, deadlines=deadlines if shared else None)
    assert isinstance(outcome, Completed) and outcome.content[0].text == "stepped:x"  # type: ignore[union-attr]
    if shared:
        (queue,) = deadlines._queues.values()
        assert [entry.done for entry in queue] == [True]  # on the timer while it ran, done since


@pytest.mark.anyio
@pytest.mark.parametrize("shared", [True, False], ids=["shared timer", "own timer"])
async def test_a_call_that_fails_after_suspending_fails_alone_with_its_message(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext, shared: bool
) -> None:
    async def late_failure(inp: Q, ctx: ToolContext) -> str:
        await anyio.lowlevel.checkpoint()
        raise ToolFailure(f"no such thing: {inp.q}")

    registry.register({"late": Tool(description="late", input=Q, execute=late_failure, timeout=30)})
    outcome = await registry.materialize().settle(call("late"), ctx, deadlines=deadlines if shared else None)
    assert isinstance(outcome, Failed) and outcome.kind == "tool"
    assert outcome.error == "no such thing: x"


@pytest.mark.anyio
@pytest.mark.parametrize("shared", [True, False], ids=["shared timer", "own timer"])
async def test_the_deadline_counts_from_the_start_not_from_the_first_suspension(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext, shared: bool
) -> None:
    async def busy_then_hang(inp: Q, ctx: ToolContext) -> str:
        time.sleep(0.06)  # longer than the whole deadline, before the call first suspends
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    registry.register({"busy": Tool(description="busy", input=Q, execute=busy_then_hang, timeout=0.05)})
    with anyio.fail_after(5):
        outcome = await registry.materialize().settle(
            call("busy"), ctx, deadlines=deadlines if shared else None
        )
    assert isinstance(outcome, Failed) and outcome.kind == "timeout"
    assert outcome.error == 'Tool "busy" timed out after 0.05s'


@pytest.mark.anyio
async def test_a_cancelled_call_runs_its_shielded_cleanup_and_gives_no_outcome(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext
) -> None:
    cleaned: list[str] = []

    async def hang_then_clean(inp: Q, ctx: ToolContext) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()  # the cancellation went in; the cleanup still suspends
                cleaned.append(inp.q)
        raise AssertionError("unreachable")

    registry.register({"clean": Tool(description="clean", input=Q, execute=hang_then_clean, timeout=30)})
    step = registry.materialize()
    outcomes: list[Any] = []

    async def settle() -> None:
        outcomes.append(await step.settle(call("clean", "tmp"), ctx, deadlines=deadlines))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
    assert cleaned == ["tmp"]
    assert outcomes == []  # cancellation is not a result (law 3)


@pytest.mark.anyio
async def test_closing_a_suspended_settle_closes_the_tool_coroutine(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    closed: list[bool] = []

    async def yields(inp: Q, ctx: ToolContext) -> str:
        try:
            await asyncio.sleep(0)  # a bare suspension: the test drives the coroutine by hand
            return "never"
        finally:
            closed.append(True)

    registry.register({"yields": Tool(description="yields", input=Q, execute=yields, timeout=30)})
    settling = registry.materialize().settle(call("yields"), ctx)
    assert settling.send(None) is None  # suspended inside the tool, under its deadline
    settling.close()
    assert closed == [True]


@pytest.mark.anyio
async def test_an_awaitable_that_is_not_a_coroutine_still_runs_under_its_deadline(
    registry: ToolRegistry, deadlines: Deadlines, ctx: ToolContext
) -> None:
    class Hangs:
        def __await__(self) -> Generator[Any, Any, str]:
            yield from anyio.sleep_forever().__await__()
            return "unreachable"

    def hangs(inp: Q, ctx: ToolContext) -> Hangs:
        return Hangs()

    tool = Tool(description="hangs", input=Q, execute=hangs, timeout=0.05)
    object.__setattr__(tool, "_is_async", True)  # an async callable that returns another awaitable type
    registry.register({"hangs": tool})
    with anyio.fail_after(5):
        outcome = await registry.materialize().settle(call("hangs"), ctx, deadlines=deadlines)
    assert isinstance(outcome, Failed) and outcome.error == 'Tool "hangs" timed out after 0.05s'

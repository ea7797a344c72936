"""Tool deadlines on a shared timer (``Deadlines``): the same outcomes as a timer per call."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tether.tools import Completed, Failed, Tool, ToolCall, ToolContext, ToolRegistry, ToolResponse
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

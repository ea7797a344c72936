"""A tool may open its own cancel scopes and task groups before its first suspension (anyio's scope stack holds).

Regression guard for settle's deadline handling: whatever settle does to avoid a cancel scope per call, the tool's
own scopes must nest inside the call's scope. A tool that enters ``move_on_after`` / ``fail_after`` or a task group
and only then awaits is ordinary anyio code (httpx, subprocesses, MCP sessions all do it).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tether.tools import Completed, Failed, Tool, ToolCall, ToolContext, ToolRegistry, ToolResponse
from tether.tools.internal import Deadlines


class Q(BaseModel):
    q: str


async def scope_first(inp: Q, ctx: ToolContext) -> ToolResponse[Any]:
    with anyio.move_on_after(10):
        await anyio.sleep(0.001)
    return ToolResponse(content="scope:" + inp.q)


async def task_group_first(inp: Q, ctx: ToolContext) -> ToolResponse[Any]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.sleep, 0.001)
    return ToolResponse(content="group:" + inp.q)


async def hang_in_scope(inp: Q, ctx: ToolContext) -> ToolResponse[Any]:
    with anyio.CancelScope():
        await anyio.sleep_forever()
    raise AssertionError("unreachable")


@pytest.mark.anyio
@pytest.mark.parametrize("shared_timer", [False, True])
@pytest.mark.parametrize(("execute", "expected"), [(scope_first, "scope:x"), (task_group_first, "group:x")])
async def test_a_tool_that_opens_a_scope_before_its_first_await_completes(
    registry: ToolRegistry,
    ctx: ToolContext,
    deadlines: Deadlines,
    shared_timer: bool,
    execute: Any,
    expected: str,
) -> None:
    registry.register({"t": Tool(description="t", input=Q, execute=execute, timeout=5)})
    with anyio.fail_after(5):
        outcome = await registry.materialize().settle(
            ToolCall(call_id="call_t", name="t", input={"q": "x"}),
            ctx,
            deadlines=deadlines if shared_timer else None,
        )
    assert isinstance(outcome, Completed), outcome
    assert outcome.content[0].text == expected  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize("shared_timer", [False, True])
async def test_a_tool_hanging_inside_its_own_scope_still_times_out(
    registry: ToolRegistry, ctx: ToolContext, deadlines: Deadlines, shared_timer: bool
) -> None:
    registry.register({"t": Tool(description="t", input=Q, execute=hang_in_scope, timeout=0.05)})
    with anyio.fail_after(5):
        outcome = await registry.materialize().settle(
            ToolCall(call_id="call_t", name="t", input={"q": "x"}),
            ctx,
            deadlines=deadlines if shared_timer else None,
        )
    assert isinstance(outcome, Failed), outcome
    assert outcome.kind == "timeout"

"""The turn's call tasks: a waiting call never holds up the calls behind it, quick calls share tasks, and the
tools' deadlines run on the pool's shared timer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tether.session import ToolPart
from tether.session._dispatch import CallPool
from tether.testing import ScriptedModel, tool_call
from tether.tools import Tool, ToolContext, ToolResponse

from .conftest import Harness


@pytest.mark.anyio
async def test_waiting_calls_all_run_at_once() -> None:
    # Each job waits until every job has started: if any job waited behind another, this would never finish.
    n = 50
    started = 0
    all_started = anyio.Event()
    finished: list[int] = []

    def job(i: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            nonlocal started
            started += 1
            if started == n:
                all_started.set()
            await all_started.wait()
            finished.append(i)

        return run

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            pool = CallPool(tg)
            for i in range(n):
                pool.submit(job(i))
            await all_started.wait()
            await anyio.wait_all_tasks_blocked()
            pool.close()
    assert sorted(finished) == list(range(n))


@pytest.mark.anyio
async def test_quick_calls_share_a_task_or_two() -> None:
    tasks: set[int] = set()
    done = 0

    async def quick() -> None:
        nonlocal done
        tasks.add(anyio.get_current_task().id)
        done += 1

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            pool = CallPool(tg)
            for _ in range(100):
                pool.submit(quick)
            while done < 100:
                await anyio.sleep(0)
            # A second burst after the tasks went idle reuses them.
            await anyio.wait_all_tasks_blocked()
            for _ in range(100):
                pool.submit(quick)
            while done < 200:
                await anyio.sleep(0)
            pool.close()
    assert done == 200
    assert len(tasks) <= 2


@pytest.mark.anyio
async def test_a_call_submitted_while_others_wait_starts() -> None:
    release = anyio.Event()
    late_ran = anyio.Event()

    async def blocker() -> None:
        await release.wait()

    async def late() -> None:
        late_ran.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            pool = CallPool(tg)
            for _ in range(3):
                pool.submit(blocker)
            await anyio.wait_all_tasks_blocked()
            pool.submit(late)
            await late_ran.wait()
            release.set()
            pool.close()
    assert late_ran.is_set()


class Echo(BaseModel):
    text: str


@pytest.mark.anyio
async def test_a_session_call_past_its_deadline_fails_as_a_timeout_and_its_sibling_completes(
    harness: Harness,
) -> None:
    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def echo(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(content=i.text)

    harness.tools.register(
        {
            "hang": Tool(description="hang", input=Echo, execute=hang, timeout=0.05),
            "echo": Tool(description="echo", input=Echo, execute=echo),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [[tool_call("hang", {"text": "a"}, id="c1"), tool_call("echo", {"text": "b"}, id="c2")], "done"]
    )
    with model, anyio.fail_after(5):
        result = await session.prompt("go", model=model)
    assert result.stop == "done"
    parts = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    assert [(p.call_id, p.state, p.error_kind) for p in parts] == [
        ("c1", "error", "timeout"),
        ("c2", "completed", None),
    ]
    assert parts[0].error == 'Tool "hang" timed out after 0.05s'

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
from tether.tools import Failed, Tool, ToolContext, ToolResponse
from tether.tools.internal import Lane

from .conftest import Harness


@pytest.mark.anyio
async def test_waiting_calls_all_run_at_once() -> None:
    # Each job waits until every job has started: if any job waited behind another, this would never finish.
    n = 50
    started = 0
    all_started = anyio.Event()
    finished: list[int] = []

    def job(i: int) -> Callable[[Lane], Awaitable[None]]:
        async def run(lane: Lane) -> None:
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

    async def quick(lane: Lane) -> None:
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

    async def blocker(lane: Lane) -> None:
        await release.wait()

    async def late(lane: Lane) -> None:
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


# -- lanes: one cancel scope across a task's calls (tether.tools._deadlines.Lane) ------------------------------------


def _tool_parts(messages: Any) -> list[ToolPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolPart)]


@pytest.mark.anyio
async def test_after_a_timeout_the_same_task_settles_the_next_calls_in_a_new_scope(harness: Harness) -> None:
    # Sequential steps run on one pool task: the timed-out call's lane scope is replaced, never reused cancelled.
    tasks: list[int] = []

    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        tasks.append(anyio.get_current_task().id)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def echo(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        tasks.append(anyio.get_current_task().id)
        await anyio.sleep(0)  # a suspension inside the (new) scope: a stale cancelled scope would cancel it
        return ToolResponse(content=i.text)

    harness.tools.register(
        {
            "hang": Tool(description="hang", input=Echo, execute=hang, timeout=0.05),
            "echo": Tool(description="echo", input=Echo, execute=echo),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [
            [tool_call("hang", {"text": "a"}, id="c1")],
            [tool_call("echo", {"text": "b"}, id="c2")],
            [tool_call("hang", {"text": "c"}, id="c3")],
            [tool_call("echo", {"text": "d"}, id="c4")],
            "done",
        ]
    )
    with model, anyio.fail_after(10):
        result = await session.prompt("go", model=model)
    assert result.stop == "done"
    parts = _tool_parts(await session.messages())
    assert [(p.call_id, p.state, p.error_kind) for p in parts] == [
        ("c1", "error", "timeout"),
        ("c2", "completed", None),
        ("c3", "error", "timeout"),
        ("c4", "completed", None),
    ]
    assert len(set(tasks)) == 1  # one task carried all four calls, through two timeouts


@pytest.mark.anyio
async def test_a_tool_that_swallows_its_deadline_and_returns_completes_and_the_next_call_is_unharmed(
    harness: Harness,
) -> None:
    async def stubborn(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            pass  # bad manners, but a tool may do it: it returns its result anyway
        return ToolResponse(content="kept " + i.text)

    async def echo(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await anyio.sleep(0)
        return ToolResponse(content=i.text)

    harness.tools.register(
        {
            "stubborn": Tool(description="s", input=Echo, execute=stubborn, timeout=0.05),
            "echo": Tool(description="echo", input=Echo, execute=echo),
        }
    )
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [[tool_call("stubborn", {"text": "a"}, id="c1")], [tool_call("echo", {"text": "b"}, id="c2")], "done"]
    )
    with model, anyio.fail_after(10):
        result = await session.prompt("go", model=model)
    assert result.stop == "done"
    parts = _tool_parts(await session.messages())
    assert [(p.call_id, p.state) for p in parts] == [("c1", "completed"), ("c2", "completed")]
    assert parts[0].content[0].text == "kept a"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_tool_that_swallows_its_deadline_and_waits_again_times_out(harness: Harness) -> None:
    async def stubborn(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            pass
        await anyio.sleep_forever()  # the scope is still cancelled: this is cancelled too
        raise AssertionError("unreachable")

    harness.tools.register({"stubborn": Tool(description="s", input=Echo, execute=stubborn, timeout=0.05)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("stubborn", {"text": "a"}, id="c1")], "done"])
    with model, anyio.fail_after(10):
        await session.prompt("go", model=model)
    parts = _tool_parts(await session.messages())
    assert [(p.state, p.error_kind) for p in parts] == [("error", "timeout")]


@pytest.mark.anyio
async def test_after_hooks_see_a_timeout_with_the_input_the_before_hooks_left(harness: Harness) -> None:
    seen: list[tuple[Any, str]] = []

    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def before(event: Any) -> None:
        event.input = {"text": "rewritten"}

    async def after(event: Any) -> None:
        seen.append((event.input, event.outcome.kind))
        event.outcome = Failed(error="hook says: too slow", kind="timeout")

    harness.tools.register({"hang": Tool(description="hang", input=Echo, execute=hang, timeout=0.05)})
    harness.tools.before(before)
    harness.tools.after(after)
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("hang", {"text": "a"}, id="c1")], "done"])
    with model, anyio.fail_after(10):
        await session.prompt("go", model=model)
    assert seen == [({"text": "rewritten"}, "timeout")]
    parts = _tool_parts(await session.messages())
    assert [(p.state, p.error) for p in parts] == [("error", "hook says: too slow")]


@pytest.mark.anyio
async def test_an_after_hook_raising_on_a_timeout_fails_only_that_call(harness: Harness) -> None:
    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def echo(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(content=i.text)

    async def after(event: Any) -> None:
        if event.outcome.status == "error":
            raise RuntimeError("hook bug")

    harness.tools.register(
        {
            "hang": Tool(description="hang", input=Echo, execute=hang, timeout=0.05),
            "echo": Tool(description="echo", input=Echo, execute=echo),
        }
    )
    harness.tools.after(after)
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel(
        [[tool_call("hang", {"text": "a"}, id="c1"), tool_call("echo", {"text": "b"}, id="c2")], "done"]
    )
    with model, anyio.fail_after(10):
        await session.prompt("go", model=model)
    parts = _tool_parts(await session.messages())
    assert [(p.call_id, p.state, p.error_kind) for p in parts] == [
        ("c1", "error", "defect"),
        ("c2", "completed", None),
    ]
    assert parts[0].error == "Tool execution failed: after hook raised hook bug"


@pytest.mark.anyio
async def test_cancelling_the_turn_while_a_timeout_is_being_recorded_ends_it_cancelled(
    harness: Harness,
) -> None:
    # The lane's task is out of its scope, finishing the expired call (an after hook that waits): the turn's
    # cancellation must still end the turn promptly, with the call aborted, and nothing left outstanding.
    hook_waiting = anyio.Event()

    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def after(event: Any) -> None:
        hook_waiting.set()
        await anyio.sleep_forever()

    harness.tools.register({"hang": Tool(description="hang", input=Echo, execute=hang, timeout=0.05)})
    harness.tools.after(after)
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("hang", {"text": "a"}, id="c1")], "done"])
    results: list[Any] = []

    async def run() -> None:
        results.append(await session.prompt("go", model=model))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await hook_waiting.wait()
            session.cancel()
    assert results[0].stop == "cancelled"
    parts = _tool_parts(await session.messages())
    assert [(p.state, p.error_kind, p.interrupted) for p in parts] == [("error", "aborted", True)]


@pytest.mark.anyio
async def test_a_sync_tool_past_its_deadline_on_a_lane_times_out(harness: Harness) -> None:
    import threading

    release = threading.Event()

    def blocking(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        release.wait(5)
        return ToolResponse(content="late")

    harness.tools.register({"block": Tool(description="b", input=Echo, execute=blocking, timeout=0.05)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("block", {"text": "a"}, id="c1")], "done"])
    try:
        with model, anyio.fail_after(10):
            await session.prompt("go", model=model)
    finally:
        release.set()
    parts = _tool_parts(await session.messages())
    assert [(p.state, p.error_kind) for p in parts] == [("error", "timeout")]


@pytest.mark.anyio
async def test_call_soon_brings_work_from_a_thread_to_the_loop_and_drops_it_once_the_pool_closed() -> None:
    import threading

    loop_thread = threading.get_ident()
    ran: list[tuple[str, int]] = []
    delivered = anyio.Event()

    def record(what: str) -> None:
        ran.append((what, threading.get_ident()))
        delivered.set()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            pool = CallPool(tg)
            thread = threading.Thread(target=pool.call_soon, args=(record, "open"))
            thread.start()
            await delivered.wait()
            thread.join()
            # handed over while the loop is held here, then the pool closes before the loop runs it: dropped
            late = threading.Thread(target=pool.call_soon, args=(record, "handed over, then closed"))
            late.start()
            late.join()
            pool.close()
            pool.call_soon(record, "closed")  # after close: not even handed over
        await anyio.wait_all_tasks_blocked()
    assert ran == [("open", loop_thread)]


def test_call_soon_after_the_loop_ended_is_dropped() -> None:
    # a tool's thread reporting while the process winds down: the turn's loop is gone, nothing runs, nothing raises
    ran: list[str] = []

    async def main() -> CallPool:
        pools: list[CallPool] = []
        async with anyio.create_task_group() as tg:
            pools.append(CallPool(tg))
            tg.cancel_scope.cancel()  # the pool is left open: only its loop ends
        return pools[0]

    pool = anyio.run(main)
    pool.call_soon(ran.append, "late")
    assert ran == []

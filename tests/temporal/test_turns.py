"""Turns on a real Temporal server with an in-process worker: parallel calls, the store, asks, cancellation."""

from __future__ import annotations

import contextlib

import anyio
import pytest

from tether.errors import NotFoundError, UsageError
from tether.session import ToolPart

from .conftest import Turns
from .support import count, wait_for

pytestmark = pytest.mark.anyio


async def test_parallel_calls_settle_in_activities_and_the_store_shows_them(turns: Turns) -> None:
    async with turns.worker() as rt:
        handle = await turns.submit([["fast", {"n": 1}], ["fast", {"n": 2}], ["fast", {"n": 3}]])
        with anyio.fail_after(60):
            result = await handle.result()
        assert result.stop == "done"
        assert result.steps == 2
        assert result.tool_calls == 3
        assert [c.content for c in result.calls] == ["fast 1", "fast 2", "fast 3"]
        assert result.text == "done: fast=fast 1; fast=fast 2; fast=fast 3"
        assert count(turns.marks, "fast") == 3
        messages = await rt.store.load_messages(result.session_id)
        assert [m.info.role for m in messages] == ["user", "assistant", "assistant"]
        parts = [p for p in messages[1].parts if isinstance(p, ToolPart)]
        assert [(p.tool, p.state, p.input) for p in parts] == [
            ("fast", "completed", {"n": 1}),
            ("fast", "completed", {"n": 2}),
            ("fast", "completed", {"n": 3}),
        ]
        assert all(m.info.completed for m in messages[1:])  # type: ignore[union-attr]


async def test_an_ask_waits_without_a_worker_and_the_answer_reruns_the_call_on_a_new_worker(
    turns: Turns,
) -> None:
    async with turns.worker():
        handle = await turns.submit([["guarded", {}], ["fast", {"n": 1}]])
        ask = await wait_for(handle, "ask")
        # the calls run in parallel: the ask may come before fast has settled here (else it runs on the next worker)
        await wait_for(handle, "call")
    # The first worker is gone (its runtime closed): the ask waits in the workflow, no worker holds it.
    assert count(turns.marks, "guarded") == 0
    assert count(turns.marks, "fast") == 1
    async with turns.worker() as rt:
        asks = await handle.asks()
        assert [a.id for a in asks] == [ask["id"]]
        assert asks[0].request["action"] == "deploy"
        assert asks[0].request["resources"] == ["prod"]
        await handle.answer(ask["id"], "once")
        with anyio.fail_after(60):
            result = await handle.result()
        assert result.stop == "done"
        assert result.text == "done: guarded=deployed; fast=fast 1"
        assert count(turns.marks, "guarded") == 1
        assert count(turns.marks, "fast") == 1
        messages = await rt.store.load_messages(result.session_id)
        guarded = next(p for p in messages[1].parts if isinstance(p, ToolPart) and p.tool == "guarded")
        assert guarded.state == "completed"
        assert any(record.get("reply") == "once" for record in guarded.permissions)
        assert await handle.asks() == []


async def test_a_rejected_ask_declines_the_call_and_stops_the_turn(turns: Turns) -> None:
    async with turns.worker():
        handle = await turns.submit([["guarded", {}]])
        ask = await wait_for(handle, "ask")
        await handle.answer(ask["id"], "reject")
        with anyio.fail_after(60):
            result = await handle.result()
    assert result.stop == "declined"
    assert result.calls[0].error_kind == "declined"
    assert count(turns.marks, "guarded") == 0


async def test_cancelling_an_answer_in_flight_is_a_cancellation_not_an_sdk_error(turns: Turns) -> None:
    # Ctrl-C on `tether run --temporal` while it sends an answer: the SDK turns the caller's cancellation into its
    # WorkflowUpdateRPCTimeoutOrCancelledError, which ended the follower with a traceback and the turn not cancelled
    async with turns.worker():
        handle = await turns.submit([["guarded", {}]])
        ask = await wait_for(handle, "ask")
    # no worker polls now: the answer waits for one, until it is cancelled
    with anyio.move_on_after(1) as waited:
        await handle.answer(ask["id"], "once")
    assert waited.cancelled_caught
    async with turns.worker():  # the turn goes on: the server may have taken that answer already, or this one
        with contextlib.suppress(NotFoundError):
            await handle.answer(ask["id"], "once")
        with anyio.fail_after(60):
            assert (await handle.result()).stop == "done"


async def test_a_worker_stopping_cancels_its_session_hold_instead_of_failing_it(
    turns: Turns, caplog: pytest.LogCaptureFixture
) -> None:
    # the hold waits on the turn's `hold` update; the SDK turned the shutdown's cancellation into an update error, and
    # the hold failed (a WARNING with a traceback, an attempt spent) instead of being cancelled for the next worker
    async with turns.worker():
        handle = await turns.submit([["guarded", {}]])
        await wait_for(handle, "ask")
    failed = [r for r in caplog.records if "Completing activity as failed" in r.getMessage()]
    assert not failed, [r.getMessage() for r in failed]
    async with turns.worker():  # the next worker takes the hold over and the turn goes on
        await handle.answer((await handle.asks())[0].id, "once")
        with anyio.fail_after(60):
            assert (await handle.result()).stop == "done"


async def test_answering_an_unknown_ask_is_a_clear_error(turns: Turns) -> None:
    async with turns.worker():
        handle = await turns.submit([["guarded", {}]])
        ask = await wait_for(handle, "ask")
        with pytest.raises(NotFoundError, match="No waiting ask per_nope"):
            await handle.answer("per_nope", "once")
        with pytest.raises(UsageError, match="once, always or reject"):
            await handle.answer(ask["id"], "maybe")  # type: ignore[arg-type]
        await handle.answer(ask["id"], "once")
        with anyio.fail_after(60):
            assert (await handle.result()).stop == "done"


async def test_cancelling_the_turn_cancels_the_running_call_and_aborts_its_part(turns: Turns) -> None:
    async with turns.worker() as rt:
        handle = await turns.submit([["slow", {}], ["fast", {"n": 1}]], heartbeat_timeout=2.0)
        with anyio.fail_after(30):
            while count(turns.marks, "slow-started") == 0 or count(turns.marks, "fast") == 0:
                await anyio.sleep(0.05)
        await handle.cancel()
        with anyio.fail_after(60):
            result = await handle.result()
        assert result.stop == "cancelled"
        assert count(turns.marks, "slow-done") == 0
        messages = await rt.store.load_messages(result.session_id)
        parts = {p.tool: p for p in messages[1].parts if isinstance(p, ToolPart)}
        assert parts["fast"].state == "completed"
        assert parts["slow"].state == "error"
        assert parts["slow"].error_kind == "aborted"
        assert parts["slow"].interrupted is True


async def test_a_cancel_reaches_a_running_call_without_waiting_for_its_heartbeat_timeout(
    turns: Turns,
) -> None:
    # Temporal hands an activity its cancellation only in a heartbeat's response. With an hour's heartbeat timeout a
    # call that beat every third of it (20 minutes) would hear of the cancel long after the guard below (and at the
    # default 30 s, the SDK held heartbeats back 24 s: a Ctrl-C's call went on that long). A worker's calls beat every
    # HEARTBEAT_SECONDS whatever the timeout, and it sends each beat as it comes: the call is cancelled at once.
    async with turns.worker() as rt:
        handle = await turns.submit([["slow", {}]], heartbeat_timeout=3600.0)
        with anyio.fail_after(60):
            while count(turns.marks, "slow-started") == 0:
                await anyio.sleep(0.05)
        await handle.cancel()
        with anyio.fail_after(120):  # a hang guard
            result = await handle.result()
        assert result.stop == "cancelled"
        assert count(turns.marks, "slow-done") == 0
        messages = await rt.store.load_messages(result.session_id)
        (part,) = [p for p in messages[1].parts if isinstance(p, ToolPart)]
        assert (part.state, part.error_kind) == ("error", "aborted")


async def test_the_third_identical_call_asks_doom_loop_as_in_a_live_session(turns: Turns) -> None:
    from tether.session.internal import DOOM_LOOP_THRESHOLD
    from tether.temporal._workflow import DOOM_LOOP_THRESHOLD as TEMPORAL_THRESHOLD

    assert TEMPORAL_THRESHOLD == DOOM_LOOP_THRESHOLD
    async with turns.worker():
        handle = await turns.submit([["fast", {"n": 1}]] * 3)
        ask = await wait_for(handle, "ask")
        assert ask["request"]["action"] == "doom_loop"
        await handle.answer(ask["id"], "reject", message="stop repeating yourself")
        with anyio.fail_after(60):
            result = await handle.result()
    assert [c.error_kind for c in result.calls] == [None, None, "corrected"]
    assert result.calls[2].error is not None and result.calls[2].error.endswith("stop repeating yourself")
    assert count(turns.marks, "fast") == 2

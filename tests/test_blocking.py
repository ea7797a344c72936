"""Blocking work in batches: each caller gets its own result or exception; a burst shares worker-thread hand-offs."""

from __future__ import annotations

import contextvars
import os
import signal
import threading
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from anyio.abc import TaskGroup

from tether import _blocking
from tether._blocking import run_batched

pytestmark = pytest.mark.anyio


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of pieces each worker-thread run ran."""
    sizes: list[int] = []
    drain = _blocking._drain

    def counting(queue: Any, first: Any) -> None:
        before = _ran[0]
        drain(queue, first)
        sizes.append(_ran[0] - before)

    _ran = [0]
    run = _blocking._Job.run

    def run_counted(job: Any) -> None:
        _ran[0] += 1
        run(job)

    monkeypatch.setattr(_blocking, "_drain", counting)
    monkeypatch.setattr(_blocking._Job, "run", run_counted)
    return sizes


def _square(n: int) -> int:
    if n == 13:
        raise ValueError("unlucky")
    return n * n


async def test_each_caller_gets_its_own_result_or_exception_and_a_burst_shares_hand_offs(
    runs: list[int],
) -> None:
    results: dict[int, object] = {}

    async def call(n: int) -> None:
        try:
            results[n] = await run_batched(_square, n)
        except ValueError as exc:
            results[n] = exc

    async with anyio.create_task_group() as tg:
        for n in range(100):
            tg.start_soon(call, n)
    assert {n: r for n, r in results.items() if n != 13} == {n: n * n for n in range(100) if n != 13}
    assert isinstance(results[13], ValueError)
    assert sum(runs) == 100
    assert len(runs) < 100  # the calls that queued behind the first one ran in its hand-off


class Held:
    """A first run held in its worker thread (``first`` waits for ``release``), and callers that queue behind it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.results: list[str] = []
        self.ran: list[str] = []

    def first(self) -> str:
        self.started.set()
        self.release.wait(10)
        return "first"

    def named(self, name: str) -> Any:
        def work() -> str:
            self.ran.append(name)
            return name

        return work

    async def call(self, func: object) -> None:
        self.results.append(await run_batched(func))  # type: ignore[arg-type]

    async def start(self, tg: TaskGroup) -> None:
        """Start ``first`` in ``tg`` and return once its run is in its thread (so later calls queue behind it)."""
        tg.start_soon(self.call, self.first)
        await anyio.to_thread.run_sync(self.started.wait, 10)


async def test_the_work_runs_off_the_event_loop_thread() -> None:
    assert await run_batched(threading.get_ident) != threading.get_ident()


async def test_work_queued_while_a_run_is_under_way_joins_that_run(runs: list[int]) -> None:
    held = Held()
    async with anyio.create_task_group() as tg:
        await held.start(tg)
        for name in ("a", "b"):
            tg.start_soon(held.call, held.named(name))
        await anyio.wait_all_tasks_blocked()
        held.release.set()
    assert sorted(held.results) == ["a", "b", "first"]
    assert runs == [3]  # one hand-off: a and b ran in the thread that ran first


async def test_a_cancelled_waiter_never_stalls_the_queue_and_its_work_never_runs() -> None:
    held = Held()
    async with anyio.create_task_group() as tg:
        await held.start(tg)
        with anyio.CancelScope() as doomed:
            doomed.cancel()
            await run_batched(
                held.named("cancelled")
            )  # queued behind `first`, cancelled at its first checkpoint
        for name in ("a", "b"):
            tg.start_soon(held.call, held.named(name))
        await anyio.wait_all_tasks_blocked()
        held.release.set()
    assert sorted(held.results) == ["a", "b", "first"]
    assert "cancelled" not in held.ran


async def test_a_leader_cancelled_before_its_thread_starts_hands_the_queue_on(runs: list[int]) -> None:
    # Every worker thread is taken: the leader waits for one (cancellable), the others queue behind it.
    limiter = anyio.to_thread.current_default_thread_limiter()
    tokens = limiter.total_tokens
    limiter.total_tokens = 1
    held = Held()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, held.first)
            await anyio.to_thread.run_sync(held.started.wait, 10, limiter=anyio.CapacityLimiter(1))
            async with anyio.create_task_group() as doomed:
                doomed.start_soon(held.call, held.named("doomed"))  # leads: waits for a thread
                await anyio.wait_all_tasks_blocked()
                for name in ("a", "b"):
                    tg.start_soon(held.call, held.named(name))
                await anyio.wait_all_tasks_blocked()
                doomed.cancel_scope.cancel()
            held.release.set()
    finally:
        limiter.total_tokens = tokens
    assert sorted(held.results) == ["a", "b"]
    assert "doomed" not in held.ran
    assert sum(runs) == 2


async def test_a_full_run_leaves_the_rest_to_the_next_one(
    runs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_blocking, "RUN_LIMIT", 2)
    held = Held()
    async with anyio.create_task_group() as tg:
        await held.start(tg)
        for name in ("a", "b", "c"):
            tg.start_soon(held.call, held.named(name))
        await anyio.wait_all_tasks_blocked()
        held.release.set()
    assert sorted(held.results) == ["a", "b", "c", "first"]
    assert sum(runs) == 4
    assert max(runs) <= 2


def test_run_soon_runs_on_the_loop_and_says_when_the_loop_is_gone() -> None:
    ran: list[int] = []

    async def main() -> anyio.lowlevel.EventLoopToken:
        token = anyio.lowlevel.current_token()
        done = anyio.Event()

        def on_loop() -> None:
            ran.append(threading.get_ident())
            done.set()

        answers: list[bool] = []
        thread = threading.Thread(target=lambda: answers.append(_blocking.run_soon(token, on_loop)))
        with anyio.fail_after(30):
            thread.start()
            await done.wait()
        thread.join()
        assert answers == [True]
        assert ran == [threading.get_ident()]
        return token

    token = anyio.run(main)
    assert _blocking.run_soon(token, ran.clear) is False  # the loop has finished: nothing runs
    assert len(ran) == 1


async def test_a_hand_off_returns_or_raises_in_a_thread_the_next_hand_off_reuses() -> None:
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker")
    marker.set("caller's")
    first = await _blocking.hand_off(lambda: (threading.get_ident(), marker.get()))
    assert (
        first[0] != threading.get_ident() and first[1] == "caller's"
    )  # off the loop, in the caller's context
    assert await _blocking.hand_off(threading.get_ident) == first[0]  # the idle thread took it: no new thread

    def broken() -> None:
        raise ValueError("no such file")

    with pytest.raises(ValueError, match="no such file"):
        await _blocking.hand_off(broken)
    assert await _blocking.hand_off(threading.get_ident) == first[0]  # a failed piece leaves its thread idle


async def test_a_cancelled_hand_off_is_abandoned_and_its_thread_ends_when_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    started = threading.Event()
    threads: list[threading.Thread] = []

    def hung() -> str:
        threads.append(threading.current_thread())
        started.set()
        release.wait(30)  # a hung filesystem
        return "late"

    with anyio.move_on_after(0.1) as scope:  # the turn is cancelled: the caller does not wait for its thread
        await _blocking.hand_off(hung)
    assert scope.cancelled_caught
    assert await _blocking.hand_off(lambda: "next") == "next"  # another thread took it meanwhile
    monkeypatch.setattr(_blocking, "IDLE_SECONDS", 0.01)
    assert started.wait(30)  # its thread may start it only now (a loaded machine)
    release.set()  # the abandoned piece ends, its outcome dropped; then the idle thread ends on its own
    threads[0].join(30)
    assert not threads[0].is_alive() and threads[0] not in _blocking._idle


async def test_hand_offs_beyond_the_thread_limit_wait_in_anyios_threads_and_make_no_thread_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a burst of turns (or pieces stuck on a hung filesystem) never makes hand-off threads without end
    monkeypatch.setattr(_blocking, "_idle", [])  # the idle threads earlier tests left are not this test's
    monkeypatch.setattr(_blocking, "_alive", set())
    monkeypatch.setattr(_blocking, "THREAD_LIMIT", 2)
    release = threading.Event()
    names: list[str] = []

    def stuck() -> None:
        names.append(threading.current_thread().name)
        release.wait(30)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(_blocking.hand_off, stuck)
        with anyio.fail_after(30):
            while len(names) < 5:
                await anyio.sleep(0.01)
        assert len(_blocking._alive) == 2
        release.set()
    assert sorted(name == "tether-hand-off" for name in names) == [False] * 3 + [True] * 2, (
        names
    )  # 3 in anyio's


def test_a_forked_child_hands_off_on_a_thread_of_its_own() -> None:
    # A child forked while this process had an idle hand-off thread has no such thread: it starts its own.
    assert (
        anyio.run(_blocking.hand_off, threading.get_ident) != threading.get_ident()
    )  # idle in the parent now
    assert _blocking._idle
    pid = os.fork()
    if pid == 0:  # the child: a hand-off given to the parent's thread would never be answered
        code = 1
        try:
            signal.alarm(30)  # hang guard
            code = 0 if anyio.run(_blocking.hand_off, lambda: 42) == 42 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


async def test_a_hand_off_thread_that_cannot_start_is_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_blocking, "_idle", [])
    monkeypatch.setattr(_blocking, "_alive", set())

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(_blocking._Worker, "start", refused)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        await _blocking.hand_off(lambda: None)
    assert _blocking._alive == set()  # the process's thread limit does not use up the hand-off's

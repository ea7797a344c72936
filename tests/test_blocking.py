"""Blocking work in batches: each caller gets its own result or exception; a burst shares worker-thread hand-offs."""

from __future__ import annotations

import threading

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup

from tether import _blocking
from tether._blocking import run_batched

pytestmark = pytest.mark.anyio


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    run_all = _blocking._run_all

    def counting(batch: list[_blocking._Job[object]]) -> None:
        sizes.append(len(batch))
        run_all(batch)

    monkeypatch.setattr(_blocking, "_run_all", counting)
    return sizes


def _square(n: int) -> int:
    if n == 13:
        raise ValueError("unlucky")
    return n * n


async def test_each_caller_gets_its_own_result_or_exception_and_a_burst_shares_hand_offs(
    batches: list[int],
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
    assert sum(batches) == 100
    assert len(batches) < 100  # the calls that queued behind the first one ran together


class Held:
    """A first batch held in its worker thread (``first`` waits for ``release``), and callers that queue behind it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.results: list[str] = []

    def first(self) -> str:
        self.started.set()
        self.release.wait(10)
        return "first"

    async def call(self, func: object) -> None:
        self.results.append(await run_batched(func))  # type: ignore[arg-type]

    async def start(self, tg: TaskGroup) -> None:
        """Start ``first`` in ``tg`` and return once its batch runs (so later calls queue behind it)."""
        tg.start_soon(self.call, self.first)
        await anyio.to_thread.run_sync(self.started.wait, 10)


async def test_the_work_runs_off_the_event_loop_thread() -> None:
    assert await run_batched(threading.get_ident) != threading.get_ident()


async def test_a_cancelled_waiter_never_stalls_the_queue(batches: list[int]) -> None:
    held = Held()
    release, results, call = held.release, held.results, held.call

    async with anyio.create_task_group() as tg:
        await held.start(tg)
        with anyio.CancelScope() as doomed:
            doomed.cancel()
            await run_batched(lambda: "cancelled")  # queued behind `first`, cancelled at its first checkpoint
        for name in ("a", "b"):
            tg.start_soon(call, lambda name=name: name)
        await anyio.sleep(0.01)
        release.set()
    assert sorted(results) == ["a", "b", "first"]


async def test_a_next_leader_cancelled_as_it_is_chosen_hands_the_batch_on() -> None:
    held = Held()
    release, results, call = held.release, held.results, held.call

    async with anyio.create_task_group() as tg:
        await held.start(tg)
        async with anyio.create_task_group() as doomed:
            doomed.start_soon(call, lambda: "doomed")  # first in the queue: it leads the next batch
            await anyio.sleep(0.01)
            queued = _blocking._queue.get().jobs[0]
            tg.start_soon(call, lambda: "after")
            await anyio.sleep(0.01)
            release.set()
            while not queued.lead:  # chosen as the leader, and cancelled before it wakes up
                await anyio.lowlevel.checkpoint()
            doomed.cancel_scope.cancel()
    assert "first" in results and "after" in results

"""The turn's call tasks: a waiting call never holds up the calls behind it, and quick calls share tasks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest

from tether.session._dispatch import CallPool


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

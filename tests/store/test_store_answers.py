"""A store answers its reads and flushes through the event loop, never through a worker thread (issue 38): one
hand-off each way, and a worker-thread pool taken by slow tools does not hold up the session's store."""

from __future__ import annotations

import threading

import anyio
import anyio.to_thread
import pytest
from tests.postgres.fixtures import OpenStore

from tether.session import SessionInfo, SessionUpdated

pytestmark = pytest.mark.anyio


async def test_a_flush_and_a_read_are_answered_while_every_worker_thread_is_taken(
    open_store: OpenStore,
) -> None:
    async with open_store() as store:
        limiter = anyio.to_thread.current_default_thread_limiter()
        total = limiter.total_tokens
        release = threading.Event()

        async def hold() -> None:
            await anyio.to_thread.run_sync(release.wait, abandon_on_cancel=True)

        try:
            limiter.total_tokens = 1
            with anyio.fail_after(30):
                async with anyio.create_task_group() as tg:
                    # the only worker thread, held (abandoned if the guard fires: the task group does not wait for it)
                    tg.start_soon(hold)
                    await anyio.wait_all_tasks_blocked()
                    assert limiter.borrowed_tokens == 1  # no worker thread left
                    store.append(
                        SessionUpdated(
                            SessionInfo(
                                id="ses_1",
                                project="/p",
                                directory="/p",
                                title="t",
                                agent="build",
                                created=1,
                                updated=1,
                            )
                        )
                    )
                    await store.flush()
                    assert (await store.get_session("ses_1")).title == "t"
                    release.set()
        finally:
            release.set()
            limiter.total_tokens = total

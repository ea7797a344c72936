"""A live store sweeps (issue 36 item 4): a process that dies with a call ``running`` is recovered by a store that
was already open, on a timer, without any process opening the store again. On SQLite and PostgreSQL alike.

Before, only an opening store recovered: a worker's dead neighbour left its calls ``running`` until some process
happened to open the store.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import anyio
import pytest
from tests.postgres.fixtures import OpenStore

from tether.errors import UsageError
from tether.session import ToolPart
from tether.store import PostgresStore, SQLiteStore
from tether.store.internal import INTERRUPTED_ERROR

pytestmark = pytest.mark.anyio

_HOLDER = textwrap.dedent(
    """
    import sys, anyio
    from tether.session import AssistantInfo, MessageUpdated, PartUpdated, PostgresStore, SQLiteStore, ToolPart

    async def main(kind, target):
        store = await (SQLiteStore(target) if kind == "sqlite" else PostgresStore(target)).open()
        store.append(MessageUpdated(AssistantInfo(
            id="msg_1", session_id="ses_1", parent_id="msg_0", agent="build", model="m", created=1)))
        store.append(PartUpdated(ToolPart(
            id="prt_1", session_id="ses_1", message_id="msg_1", call_id="c1", tool="t", state="running", input={})))
        await store.flush()
        print("ready", flush=True)
        await anyio.sleep_forever()

    anyio.run(main, *sys.argv[1:3])
    """
)


async def part(store: SQLiteStore | PostgresStore) -> ToolPart:
    [found] = [p for m in await store.load_messages("ses_1") for p in m.parts if isinstance(p, ToolPart)]
    return found


async def test_a_dead_process_s_running_call_is_swept_by_a_store_that_stays_open(
    open_store: OpenStore, store_kind: str
) -> None:
    async with open_store(sweep=0.2) as watcher:  # open before the holder exists: its open recovers nothing
        target = str(watcher.path) if store_kind == "sqlite" else watcher._url  # pyright: ignore[reportAttributeAccessIssue]
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, store_kind, target], stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            assert (await part(watcher)).state == "running"  # a live owner's call is left alone
            holder.kill()  # SIGKILL: no clean close, its owner row stays behind
            holder.wait()
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
            assert holder.stdout is not None
            holder.stdout.close()
        with anyio.fail_after(60):
            while (found := await part(watcher)).state == "running":
                await anyio.sleep(0.05)
    assert (found.state, found.error, found.interrupted) == ("error", INTERRUPTED_ERROR, True)


async def test_a_store_opened_without_recovery_never_sweeps_and_a_bad_sweep_is_refused(
    open_store: OpenStore, store_kind: str
) -> None:
    with pytest.raises(UsageError, match="sweep is positive seconds"):
        open_store(sweep=0)
    async with open_store(recover=False, sweep=0.01) as reader:
        target = str(reader.path) if store_kind == "sqlite" else reader._url  # pyright: ignore[reportAttributeAccessIssue]
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, store_kind, target], stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        finally:
            holder.kill()
            holder.wait()
            assert holder.stdout is not None
            holder.stdout.close()
        # many sweep periods, as many flushes: an inspecting store (recover=False) changes nothing
        for _ in range(20):
            await anyio.sleep(0.01)
            await reader.flush()
        assert (await part(reader)).state == "running"

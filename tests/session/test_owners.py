"""Store ownership: recovery interrupts only the unfinished work of stores that are gone."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from tests.postgres.fixtures import OpenStore

from tether.errors import UsageError
from tether.session import AssistantInfo, MessageUpdated, PartUpdated, ToolPart
from tether.store import SQLiteStore
from tether.store._migrations import MIGRATIONS
from tether.store._owners import STALE_SECONDS, Owner, OwnerRow, owner_alive, process_identity
from tether.store.internal import INTERRUPTED_ERROR
from tether.testing import ScriptedModel, tool_call
from tether.tools import Text, Tool, ToolResponse

from .conftest import Harness

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


class Echo(BaseModel):
    text: str


def running(part_id: str = "prt_1") -> ToolPart:
    return ToolPart(
        id=part_id, session_id="ses_1", message_id="msg_1", call_id="c1", tool="t", state="running", input={}
    )


async def hold_running_part(path: Path) -> SQLiteStore:
    store = await SQLiteStore(path).open()
    store.append(
        MessageUpdated(
            AssistantInfo(
                id="msg_1", session_id="ses_1", parent_id="msg_0", agent="build", model="m", created=1
            )
        )
    )
    store.append(PartUpdated(running()))
    await store.flush()
    return store


def execute(path: Path, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


def owners(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    rows = [oid for (oid,) in conn.execute("SELECT id FROM owners")]
    conn.close()
    return rows


@pytest.mark.anyio
async def test_a_second_store_in_this_process_leaves_a_running_call_alone(harness: Harness) -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def hang(value: Echo, ctx: Any) -> ToolResponse[Any]:
        started.set()
        await release.wait()
        return ToolResponse(content="released")

    harness.tools.register({"hang": Tool(description="h", input=Echo, execute=hang)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("hang", {"text": "x"}, id="c1")], "done"])
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: session.prompt("go", model=model))
        with anyio.fail_after(5):
            await started.wait()
        await harness.store.flush()
        async with SQLiteStore(harness.store.path) as second:
            assert second.recovered == 0
            (part,) = [
                p for m in await second.load_messages(session.id) for p in m.parts if isinstance(p, ToolPart)
            ]
            assert part.state == "running"
        release.set()
    (part,) = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    assert (part.state, part.content) == ("completed", (Text("released"),))


@pytest.mark.anyio
async def test_a_cleanly_closed_store_leaves_no_owner_and_its_unfinished_calls_are_recovered(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    store = await hold_running_part(path)
    assert owners(path) == [store.owner]
    await store.aclose()
    assert owners(path) == []
    async with SQLiteStore(path) as reopened:
        assert reopened.recovered == 1


@pytest.mark.anyio
@linux_only
async def test_a_reused_pid_does_not_keep_a_dead_owners_calls_running(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    holder = await hold_running_part(path)
    # The row now names this process's pid with another start time: the pid was reused by a new process.
    execute(path, "UPDATE owners SET identity = ? WHERE id = ?", "another-boot:1", holder.owner)
    async with SQLiteStore(path) as store:
        assert store.recovered == 1
        (message,) = await store.load_messages("ses_1")
        part = message.parts[0]
        assert isinstance(part, ToolPart)
        assert (part.state, part.error, part.interrupted) == ("error", INTERRUPTED_ERROR, True)
        assert isinstance(message.info, AssistantInfo) and message.info.error is not None
        assert holder.owner not in owners(path)
    await holder.aclose()


@pytest.mark.anyio
async def test_an_exited_pid_does_not_keep_its_calls_running(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    holder = await hold_running_part(path)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert child.wait() == 0
    execute(path, "UPDATE owners SET pid = ? WHERE id = ?", child.pid, holder.owner)
    async with SQLiteStore(path) as store:
        assert store.recovered == 1
    await holder.aclose()


@pytest.mark.anyio
async def test_rows_written_before_owners_existed_are_recovered(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    holder = await hold_running_part(path)
    execute(path, "UPDATE parts SET owner = NULL")
    async with SQLiteStore(path) as store:
        assert store.recovered == 1
    await holder.aclose()


@pytest.mark.anyio
async def test_migration_2_keeps_the_rows_of_migration_1(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO parts (session_id, id, message_id, type, state, call_id, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            "ses_1",
            "prt_1",
            "msg_1",
            "tool",
            "running",
            "c1",
            '{"id":"prt_1","type":"tool","call_id":"c1","tool":"t","state":"running","input":{}}',
        ),
    )
    conn.commit()
    conn.close()
    async with SQLiteStore(path) as store:
        assert store.recovered == 1  # an old file's unfinished call has no live owner
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    conn.close()


def me() -> Owner:
    return Owner(id="own_me", host="here", pid=os.getpid(), identity=process_identity(os.getpid()))


def row(**changes: Any) -> OwnerRow:
    fields: dict[str, Any] = {
        "id": "own_other",
        "host": "here",
        "pid": os.getpid(),
        "identity": "",
        "heartbeat": 0,
    }
    fields.update(changes)
    return OwnerRow(**fields)


def test_an_owner_on_another_host_is_judged_by_its_heartbeat() -> None:
    now = 10_000_000
    assert owner_alive(row(host="elsewhere", heartbeat=now - 1000), me(), now)
    assert not owner_alive(row(host="elsewhere", heartbeat=now - int(STALE_SECONDS * 1000) - 1), me(), now)


@linux_only
def test_another_store_of_this_process_is_alive_and_a_live_pid_with_its_own_identity_too() -> None:
    mine = me()
    assert owner_alive(row(identity=mine.identity), mine, 0)
    parent = os.getppid()
    assert owner_alive(row(pid=parent, identity=process_identity(parent)), mine, 0)
    assert not owner_alive(row(pid=parent, identity=process_identity(parent) + "0"), mine, 0)


@linux_only
def test_process_identity_is_stable_for_a_live_pid_and_empty_for_an_exited_one() -> None:
    # Boot id + start tick: with the pid it names one process (a reused pid starts at a later tick).
    assert process_identity(os.getpid()) == process_identity(os.getpid()) != ""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert child.wait() == 0
    assert process_identity(child.pid) == ""


@pytest.mark.anyio
async def test_a_session_claimed_by_a_live_store_is_busy_until_released_or_closed(
    open_store: OpenStore,
) -> None:
    async with open_store() as first, open_store() as second:
        await first.claim("ses_1")
        await first.claim("ses_1")  # claiming again is a no-op
        with pytest.raises(UsageError, match=rf"session ses_1 is busy \(pid {os.getpid()}\)"):
            await second.claim("ses_1")
        await second.claim("ses_2")  # another session is free
        await first.release("ses_1")
        await second.claim("ses_1")
        with pytest.raises(UsageError, match="is busy"):
            await first.claim("ses_1")
    async with open_store() as third:
        await third.claim("ses_1")  # closing released every claim

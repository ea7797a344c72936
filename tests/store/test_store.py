"""The stores (SQLite and PostgreSQL, through ``open_store``): migrations, projections, the event log, listing, recovery, closing."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.postgres.fixtures import OpenStore

from tether.errors import NotFoundError, StoreError
from tether.records.internal import part_from_json, part_to_json
from tether.session import (
    AssistantInfo,
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    StepStartPart,
    ToolPart,
    UserInfo,
)
from tether.store import SQLiteStore
from tether.store._migrations import MIGRATIONS
from tether.store.internal import INTERRUPTED_ERROR
from tether.tools import File, Text


def session(sid: str, project: str = "/p", updated: int = 1) -> SessionInfo:
    return SessionInfo(
        id=sid, project=project, directory=project, title="t", agent="build", created=1, updated=updated
    )


@pytest.mark.anyio
async def test_migrations_set_the_schema_version(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "db.sqlite"):
        pass
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


@pytest.mark.anyio
async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        await SQLiteStore(tmp_path / "db.sqlite").open()


def _tool(state: str, **fields: Any) -> ToolPart:
    return ToolPart(
        id="prt_1", session_id="ses_1", message_id="msg_1", call_id="c", tool="t", state=state, **fields
    )  # pyright: ignore[reportArgumentType]


@pytest.mark.anyio
async def test_events_are_logged_and_projected_last_version_wins(open_store: OpenStore) -> None:
    # A window no burst outlasts: what is appended before a flush is one transaction (the flush cuts it short).
    async with open_store(window=60.0) as store:
        store.append(SessionUpdated(session("ses_1")))
        store.append(MessageUpdated(UserInfo(id="msg_1", session_id="ses_1", agent="build", created=1)))
        store.append(PartUpdated(_tool("pending")))
        store.append(PartUpdated(_tool("running", input={"a": 1}, started=5)))
        await store.flush()
        asked = _tool("running", input={"a": 1}, started=5, permissions=({"event": "permission.asked"},))
        store.append(PartUpdated(asked))
        store.append(MessageUpdated(UserInfo(id="msg_2", session_id="ses_1", agent="build", created=2)))
        done = replace(
            asked, state="completed", content=(Text("ok"), File(mime="image/png", data="aGk=")), ended=6
        )
        store.append(PartUpdated(done))
        (message, _) = await store.load_messages("ses_1")
        assert message.parts == (done,)
        logged = await store.events("ses_1")
        # One entry per record per transaction: its last version, where that version was appended. pending was
        # superseded by running in the first transaction; the permission record by completed in the second,
        # which keeps it (nothing a superseded version held is lost).
        assert [(kind, data.get("state")) for _, kind, data in logged] == [
            ("session.updated", None),
            ("message.updated", None),
            ("message.part.updated", "running"),
            ("message.updated", None),
            ("message.part.updated", "completed"),
        ]
        assert logged[-1][2]["permissions"] == [{"event": "permission.asked"}]
        assert logged[2][2]["started"] == 5
        after = await store.events("ses_1", after=logged[2][0])
        assert [kind for _, kind, _ in after] == ["message.updated", "message.part.updated"]
        assert after[-1][2]["state"] == "completed"


@pytest.mark.anyio
async def test_a_burst_after_a_read_still_waits_its_window(open_store: OpenStore) -> None:
    # A read with nothing queued is the writer's first item: it used to leave the wake flag set, so the next burst's
    # first event was committed alone at once (one more transaction, and no fold with what follows it).
    async with open_store(window=60.0) as store:
        store.append(SessionUpdated(session("ses_1")))
        store.append(MessageUpdated(UserInfo(id="msg_1", session_id="ses_1", agent="build", created=1)))
        await store.flush()
        await store.flush()  # nothing queued: the read goes first
        store.append(PartUpdated(_tool("pending")))
        time.sleep(0.05)  # pacing, not waiting for a state: the writer thread is free to take what is queued
        store.append(PartUpdated(_tool("running", input={"a": 1}, started=5)))
        await store.flush()
        logged = await store.events("ses_1")
        assert [(kind, data.get("state")) for _, kind, data in logged] == [
            ("session.updated", None),
            ("message.updated", None),
            ("message.part.updated", "running"),
        ]


@pytest.mark.anyio
async def test_sessions_are_listed_newest_first_and_by_project(open_store: OpenStore) -> None:
    async with open_store() as store:
        store.append(SessionUpdated(session("ses_a", "/one", updated=1)))
        store.append(SessionUpdated(session("ses_b", "/two", updated=3)))
        store.append(SessionUpdated(session("ses_c", "/one", updated=2)))
        assert [s.id for s in await store.list_sessions()] == ["ses_b", "ses_c", "ses_a"]
        assert [s.id for s in await store.list_sessions(project="/one", limit=1)] == ["ses_c"]
        assert (await store.get_session("ses_a")).project == "/one"
        with pytest.raises(NotFoundError):
            await store.get_session("ses_missing")


@pytest.mark.anyio
async def test_recovery_marks_unfinished_parts_and_messages(open_store: OpenStore) -> None:
    async with open_store() as store:
        store.append(SessionUpdated(session("ses_1")))
        store.append(
            MessageUpdated(
                AssistantInfo(
                    id="msg_2", session_id="ses_1", parent_id="msg_1", agent="build", model="m", created=5
                )
            )
        )
        for n, state in enumerate(("pending", "running", "completed")):
            store.append(
                PartUpdated(
                    ToolPart(
                        id=f"prt_{n}",
                        session_id="ses_1",
                        message_id="msg_2",
                        call_id=f"c{n}",
                        tool="t",
                        state=state,
                    )
                )
            )
    async with open_store() as store:
        assert store.recovered == 2
        (message,) = await store.load_messages("ses_1")
        states = [(p.state, p.error, p.interrupted) for p in message.parts if isinstance(p, ToolPart)]
        assert states == [
            ("error", INTERRUPTED_ERROR, True),
            ("error", INTERRUPTED_ERROR, True),
            ("completed", None, False),
        ]
        assert isinstance(message.info, AssistantInfo) and message.info.error is not None


@pytest.mark.anyio
async def test_a_closed_store_refuses_writes_and_reads(open_store: OpenStore) -> None:
    store = await open_store().open()
    await store.aclose()
    await store.aclose()
    with pytest.raises(StoreError):
        store.append(SessionUpdated(session("ses_1")))
    with pytest.raises(StoreError):
        await store.list_sessions()


def test_parts_round_trip_through_json() -> None:
    part = StepStartPart(id="prt_1", session_id="s", message_id="m", step=3, final=True)
    assert part_from_json("s", "m", part_to_json(part)) == part

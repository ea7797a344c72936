"""The SQLite store copies its WAL into the database file from a thread of its own while it is busy (issue 38: no
commit waits for a checkpoint), never for a short run, keeps the WAL bounded, and still checkpoints on close."""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tether.session import PartUpdated, SessionInfo, SessionUpdated, TextPart
from tether.store import SQLiteStore
from tether.store._sqlite import (  # pyright: ignore[reportPrivateUsage]
    _CHECKPOINT_EVENTS,
    _WAL_BACKSTOP_PAGES,
)

pytestmark = pytest.mark.anyio


def _session(sid: str) -> SessionUpdated:
    return SessionUpdated(
        SessionInfo(id=sid, project="/p", directory="/p", title="t", agent="build", created=1, updated=1)
    )


def _text(sid: str, n: int, size: int = 100) -> PartUpdated:
    return PartUpdated(TextPart(id=f"prt_{n:08d}", session_id=sid, message_id="msg_1", text="x" * size))


def _checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tether-store-checkpoint"]


def _parts_in_the_file_alone(path: Path, into: Path) -> int:
    """How many parts the database file holds without its WAL (what checkpoints copied into it)."""
    shutil.copyfile(path, into)
    conn = sqlite3.connect(into)
    try:
        if conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'parts'").fetchone()[0] == 0:
            return 0  # not even the schema copied yet
        return conn.execute("SELECT count(*) FROM parts").fetchone()[0]
    finally:
        conn.close()


async def test_a_busy_store_checkpoints_in_a_thread_of_its_own_and_a_short_run_never_starts_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    with anyio.fail_after(60):
        async with SQLiteStore(path) as store:
            store.append(_session("ses_1"))
            for n in range(10):
                store.append(_text("ses_1", n))
            await store.flush()
            assert _checkpointers() == []  # a short run pays for no thread and no connection
            assert _parts_in_the_file_alone(path, tmp_path / "copy1.db") == 0  # all of it in the WAL still

            for n in range(10, 10 + _CHECKPOINT_EVENTS):
                store.append(_text("ses_1", n))
            await store.flush()
            checkpointer = store._checkpointer  # pyright: ignore[reportPrivateUsage]
            assert await anyio.to_thread.run_sync(checkpointer.checkpoints.acquire, True, 30)
            assert [t.daemon for t in _checkpointers()] == [True]
            # far fewer pages than SQLite's own automatic checkpoint waits for (1,000), in the file while it is open
            assert _parts_in_the_file_alone(path, tmp_path / "copy2.db") == 10 + _CHECKPOINT_EVENTS
            assert (
                await store._run(  # pyright: ignore[reportPrivateUsage]
                    lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
                )
                == _WAL_BACKSTOP_PAGES
            )
        assert _checkpointers() == []  # stopped with the store
    assert not (tmp_path / "tether.db-wal").exists()  # the last connection's close checkpointed what was left
    assert _parts_in_the_file_alone(path, tmp_path / "copy3.db") == 10 + _CHECKPOINT_EVENTS


async def test_the_wal_stays_bounded_while_the_store_writes_on(tmp_path: Path) -> None:
    """A checkpoint in another thread cannot finish while the writer appends; the writer's own backstop checkpoint
    lets the WAL start over, so the file stops growing near the backstop whatever is written (without it: ~190 MB
    here)."""
    path = tmp_path / "tether.db"
    page = 4096 + 24
    batches = 100
    with anyio.fail_after(120):
        async with SQLiteStore(path) as store:
            store.append(_session("ses_1"))
            for batch in range(batches):
                for n in range(200):
                    store.append(_text("ses_1", batch * 200 + n, size=2_000))
                await store.flush()
            written = batches * 200 * 2_000 * 2  # each part's JSON is in the part row and in the event log
            assert written > 4 * _WAL_BACKSTOP_PAGES * 4096  # enough to outgrow a WAL nobody restarts
            # past the backstop, a commit made while the other thread checkpoints cannot restart the WAL: a few more
            assert (tmp_path / "tether.db-wal").stat().st_size <= 2 * _WAL_BACKSTOP_PAGES * page

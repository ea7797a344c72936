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
from tether.store._sqlite_checkpoint import CHECKPOINT_EVENTS, WAL_BACKSTOP_PAGES

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

            for n in range(10, 10 + CHECKPOINT_EVENTS):
                store.append(_text("ses_1", n))
            await store.flush()
            checkpointer = store._checkpointer  # pyright: ignore[reportPrivateUsage]
            assert await anyio.to_thread.run_sync(checkpointer.checkpoints.acquire, True, 30)
            assert [t.daemon for t in _checkpointers()] == [True]
            # far fewer pages than SQLite's own automatic checkpoint waits for (1,000), in the file while it is open
            assert _parts_in_the_file_alone(path, tmp_path / "copy2.db") == 10 + CHECKPOINT_EVENTS
            assert (
                await store._run(  # pyright: ignore[reportPrivateUsage]
                    lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
                )
                == WAL_BACKSTOP_PAGES
            )
        assert _checkpointers() == []  # stopped with the store
    assert not (tmp_path / "tether.db-wal").exists()  # the last connection's close checkpointed what was left
    assert _parts_in_the_file_alone(path, tmp_path / "copy3.db") == 10 + CHECKPOINT_EVENTS


async def test_the_wal_starts_over_while_the_store_writes_on(tmp_path: Path) -> None:
    """A checkpoint in another thread cannot let the WAL start over while commits land meanwhile; the writer then
    checkpoints once itself between two commits, so the WAL stops growing whatever is written (without that, it
    holds every page written: ~280 MB here; with it, the restart length and what one run lets through, 10-40 MB)."""
    path = tmp_path / "tether.db"
    batches = 150
    with anyio.fail_after(120):
        async with SQLiteStore(path) as store:
            store.append(_session("ses_1"))
            for batch in range(batches):
                for n in range(200):
                    store.append(_text("ses_1", batch * 200 + n, size=2_000))
                await store.flush()
            written = batches * 200 * 2_000 * 2  # each part's JSON is in the part row and in the event log
            assert (tmp_path / "tether.db-wal").stat().st_size < written / 2


async def test_a_checkpointer_that_cannot_open_the_file_stops_and_the_store_writes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tether.db"
    aside = tmp_path / "aside.db"
    with anyio.fail_after(60):
        async with SQLiteStore(path) as store:
            store.append(_session("ses_1"))
            await store.flush()
            path.rename(aside)  # the writer keeps its open file; a new connection finds a directory there
            path.mkdir()
            try:
                for n in range(CHECKPOINT_EVENTS):
                    store.append(_text("ses_1", n))
                await store.flush()
                await (
                    store.flush()
                )  # served after the writer asked for the checkpoint, which follows the commit
                thread = store._checkpointer._thread  # pyright: ignore[reportPrivateUsage]
                assert thread is not None
                await anyio.to_thread.run_sync(thread.join, 30)
                assert not thread.is_alive()
            finally:
                path.rmdir()
                aside.rename(path)
            store.append(_text("ses_1", CHECKPOINT_EVENTS))
            await store.flush()
    assert "session store checkpointer stopped" in caplog.text
    assert _parts_in_the_file_alone(path, tmp_path / "copy.db") == CHECKPOINT_EVENTS + 1

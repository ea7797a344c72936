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
from tether.store._sqlite_checkpoint import CHECKPOINT_EVENTS, WAL_BACKSTOP_PAGES, WAL_RESTART_PAGES

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

            # the burst's last event is the CHECKPOINT_EVENTS-th: the run is asked for after the batch that holds it
            for n in range(10, CHECKPOINT_EVENTS - 1):
                store.append(_text("ses_1", n))
            await store.flush()
            checkpointer = store._checkpointer  # pyright: ignore[reportPrivateUsage]
            assert await anyio.to_thread.run_sync(checkpointer.checkpoints.acquire, True, 30)
            assert [t.daemon for t in _checkpointers()] == [True]
            # far fewer pages than SQLite's own automatic checkpoint waits for (1,000), in the file while it is open
            assert _parts_in_the_file_alone(path, tmp_path / "copy2.db") == CHECKPOINT_EVENTS - 1
            assert (
                await store._run(  # pyright: ignore[reportPrivateUsage]
                    lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
                )
                == WAL_BACKSTOP_PAGES
            )
        assert _checkpointers() == []  # stopped with the store
    assert not (tmp_path / "tether.db-wal").exists()  # the last connection's close checkpointed what was left
    assert _parts_in_the_file_alone(path, tmp_path / "copy3.db") == CHECKPOINT_EVENTS - 1


def _wal_restarts(wal: Path) -> int:
    """The WAL header's checkpoint sequence number: SQLite adds one each time the WAL starts over."""
    return int.from_bytes(wal.read_bytes()[12:16], "big")


async def test_after_a_run_found_a_long_wal_the_writer_checkpoints_and_the_wal_starts_over(
    tmp_path: Path,
) -> None:
    """A checkpoint in another thread cannot let the WAL start over while commits land meanwhile (in a busy store:
    never), so the WAL would grow with every page written; once a run reports a WAL of WAL_RESTART_PAGES or more,
    the writer checkpoints once itself between two commits, and its next transaction starts the WAL over."""
    path = tmp_path / "tether.db"
    wal = tmp_path / "tether.db-wal"
    with anyio.fail_after(60):
        async with SQLiteStore(path) as store:
            store.append(_session("ses_1"))
            for n in range(200):
                store.append(_text("ses_1", n))
            await store.flush()
            restarts = _wal_restarts(wal)
            checkpointer = store._checkpointer  # pyright: ignore[reportPrivateUsage]
            checkpointer.wal_pages = WAL_RESTART_PAGES  # what a checkpointer's run reports of a long WAL
            store.append(_text("ses_1", 200))
            # After this commit the writer checkpoints on its own connection, which is done once a later batch is
            # answered: the first flush is answered inside the batch, before the checkpoint.
            await store.flush()
            await store.flush()
            assert checkpointer.wal_pages == 0
            store.append(_text("ses_1", 201))
            await store.flush()  # the next transaction finds every page copied: the WAL starts over
            assert _wal_restarts(wal) == restarts + 1
            assert _checkpointers() == []  # 203 events: no run of the thread was asked for, the writer did it


async def test_a_checkpointer_that_cannot_start_leaves_the_store_writing_and_closing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # the process at its thread limit: the checkpoint thread is refused, the writer's automatic checkpoint stays
    start = threading.Thread.start

    def refused(self: threading.Thread) -> None:
        if self.name == "tether-store-checkpoint":
            raise RuntimeError("can't start new thread")
        start(self)

    monkeypatch.setattr(threading.Thread, "start", refused)
    path = tmp_path / "tether.db"
    with anyio.fail_after(60):
        async with SQLiteStore(path) as store:
            store.append(_session("ses_1"))
            for n in range(CHECKPOINT_EVENTS + 10):
                store.append(_text("ses_1", n))
            await store.flush()
            store.append(_text("ses_1", CHECKPOINT_EVENTS + 10))
            await store.flush()  # the writer lives: it hung here before
        assert _checkpointers() == []
    assert "session store checkpointer not started" in caplog.text
    assert not (tmp_path / "tether.db-wal").exists()  # closed as ever: the last connection checkpointed
    assert _parts_in_the_file_alone(path, tmp_path / "copy.db") == CHECKPOINT_EVENTS + 11


async def test_the_checkpointer_reaches_the_stores_file_after_a_chdir_and_never_creates_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    with anyio.fail_after(60):
        async with SQLiteStore(
            Path("tether.db")
        ) as store:  # a relative path, as an embedding program may give
            monkeypatch.chdir(tmp_path / "elsewhere")
            store.append(_session("ses_1"))
            for n in range(CHECKPOINT_EVENTS - 1):  # the last event asks for the run: it copies all of them
                store.append(_text("ses_1", n))
            await store.flush()
            checkpointer = store._checkpointer  # pyright: ignore[reportPrivateUsage]
            assert await anyio.to_thread.run_sync(checkpointer.checkpoints.acquire, True, 30)
            assert (
                _parts_in_the_file_alone(tmp_path / "tether.db", tmp_path / "copy.db")
                == CHECKPOINT_EVENTS - 1
            )
    assert list((tmp_path / "elsewhere").iterdir()) == []  # no stray empty database where the process went


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

"""The SQLite store's checkpointer: the write-ahead log is copied into the file on a thread of its own, bounded."""

from __future__ import annotations

import logging
import shutil
import sqlite3
from pathlib import Path

import pytest

from tether.session import SessionInfo, SessionUpdated, SQLiteStore
from tether.session._checkpoint import COMMITS, Checkpointer


def _session(sid: str) -> SessionInfo:
    return SessionInfo(id=sid, project="/p", directory="/p", title="t", agent="build", created=1, updated=1)


def _ids_in_file_alone(db: Path, tmp_path: Path) -> set[str]:
    """The session ids the database file holds by itself: a copy without its ``-wal`` (what was checkpointed)."""
    copy = tmp_path / "alone.sqlite"
    shutil.copyfile(db, copy)
    conn = sqlite3.connect(copy)
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sessions'").fetchone() is None:
            return set()  # even the schema is only in the log
        return {row[0] for row in conn.execute("SELECT id FROM sessions")}
    finally:
        conn.close()


def _wal_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (x TEXT)")
    return conn


@pytest.mark.anyio
async def test_the_writer_never_checkpoints_and_the_checkpointer_copies_the_log_into_the_file(
    tmp_path: Path,
) -> None:
    db = tmp_path / "tether.db"
    async with SQLiteStore(db) as store:
        assert await store._run(lambda c: c.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == 0  # pyright: ignore[reportPrivateUsage]
        checkpointer = store.checkpointer
        assert checkpointer is not None
        before = checkpointer.passes
        for i in range(COMMITS):  # a flush commits what is queued: one commit each
            store.append(SessionUpdated(_session(f"s{i}")))
            await store.flush()
        assert checkpointer.wait_pass(before, timeout=5)
        # What was committed before the pass is in the file itself, not only in its log: the first sessions, in order.
        copied = _ids_in_file_alone(db, tmp_path)
        assert "s0" in copied and copied == {f"s{i}" for i in range(len(copied))}
    assert not Path(
        f"{db}-wal"
    ).exists()  # closed: the writer's connection checkpointed the rest and removed it


@pytest.mark.anyio
async def test_fewer_commits_than_a_pass_needs_leave_the_log_to_the_writer_s_close(tmp_path: Path) -> None:
    db = tmp_path / "tether.db"
    async with SQLiteStore(db) as store:
        store.append(SessionUpdated(_session("only")))
        await store.flush()
        assert store.checkpointer is not None and store.checkpointer.passes == 0
        assert "only" not in _ids_in_file_alone(db, tmp_path)  # in the log, not copied yet
    assert "only" in _ids_in_file_alone(db, tmp_path)


def test_one_large_commit_is_enough_for_a_pass(tmp_path: Path) -> None:
    db = tmp_path / "big.sqlite"
    writer = _wal_db(db)
    checkpointer = Checkpointer(db, events=100)
    checkpointer.start()
    try:
        writer.executemany("INSERT INTO t VALUES (?)", [(str(i),) for i in range(100)])
        checkpointer.committed(100)
        assert checkpointer.wait_pass(0, timeout=5)
        busy, log, copied = writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert (busy, log) == (0, copied)  # nothing was left to copy
    finally:
        checkpointer.close()
        writer.close()


def test_a_log_past_its_limit_is_emptied(tmp_path: Path) -> None:
    db = tmp_path / "wal.sqlite"
    writer = _wal_db(db)
    checkpointer = Checkpointer(db, commits=1, wal_limit=0)
    checkpointer.start()
    try:
        writer.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
        assert Path(f"{db}-wal").stat().st_size > 100_000
        checkpointer.committed(1)
        assert checkpointer.wait_pass(0, timeout=5)
        assert Path(f"{db}-wal").stat().st_size == 0
        assert writer.execute("SELECT length(x) FROM t").fetchone()[0] == 100_000
    finally:
        checkpointer.close()
        writer.close()


def test_a_failed_checkpoint_is_logged_and_the_next_one_still_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "not-a-database"
    broken.write_bytes(b"this is not an SQLite file" * 100)
    checkpointer = Checkpointer(broken, commits=1)
    checkpointer.start()
    try:
        with caplog.at_level(logging.WARNING, logger="tether.session"):
            checkpointer.committed(1)
            assert checkpointer.wait_pass(0, timeout=5)
            checkpointer.committed(1)
            assert checkpointer.wait_pass(1, timeout=5)
        failures = [r for r in caplog.records if "checkpoint" in r.getMessage()]
        assert len(failures) == 2 and "not-a-database" in failures[0].getMessage()
    finally:
        checkpointer.close()
    assert not checkpointer._thread.is_alive()  # pyright: ignore[reportPrivateUsage]


def test_closing_an_idle_checkpointer_ends_its_thread(tmp_path: Path) -> None:
    checkpointer = Checkpointer(tmp_path / "never.sqlite")
    checkpointer.start()
    checkpointer.close()
    assert not checkpointer._thread.is_alive()  # pyright: ignore[reportPrivateUsage]
    assert checkpointer.passes == 0
    assert not (tmp_path / "never.sqlite").exists()  # it never opened the file
    checkpointer.close()  # idempotent


def test_a_reader_on_an_older_snapshot_delays_emptying_the_log_and_never_blocks_the_writer_for_long(
    tmp_path: Path,
) -> None:
    db = tmp_path / "wal.sqlite"
    writer = _wal_db(db)
    writer.execute("INSERT INTO t VALUES ('before')")
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM t").fetchone()[0] == 1  # holds this snapshot
    writer.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    checkpointer = Checkpointer(db, commits=1, wal_limit=0)
    checkpointer.start()
    try:
        checkpointer.committed(1)
        assert checkpointer.wait_pass(0, timeout=5)  # gave up waiting for the reader: the pass ended
        assert Path(f"{db}-wal").stat().st_size > 100_000
        writer.execute("INSERT INTO t VALUES ('after')")  # the writer was never left waiting
        reader.execute("COMMIT")
        checkpointer.committed(1)
        assert checkpointer.wait_pass(1, timeout=5)
        assert Path(f"{db}-wal").stat().st_size == 0
        assert writer.execute("SELECT count(*) FROM t").fetchone()[0] == 3
    finally:
        checkpointer.close()
        reader.close()
        writer.close()

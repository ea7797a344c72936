"""The default session store: one SQLite file, WAL, a single writer thread, numbered migrations.

Every operation goes through one queue served by one worker thread that owns the connection (law 9). Appended
events are not awaited: the writer drains whatever is queued and commits it as one transaction, so a burst of tool
state changes costs one commit, and ``synchronous=NORMAL`` in WAL mode means a commit never waits on fsync (a
process crash loses nothing committed; a power loss may lose the last transactions). Reads are queued behind the
writes, so they see every event appended before them.

Why a thread of its own and not ``anyio.to_thread``: ``append`` is synchronous (a state change is recorded the moment
it happens), and anyio runs nothing in the background outside a task group, which ``open()`` / ``aclose()`` (separate
calls) cannot hold; an anyio-only writer makes every durable write an awaited hand-off. ``bench/store_writer.py``
measures both: the loop pays ~20x more CPU per tool call with the anyio writer and a call takes ~5x longer to commit.

Each durable event is appended to the ``events`` log and projected into ``sessions``, ``messages`` and ``parts``
in the same transaction.

Several processes may share the file. Each open store registers an owner (``_owners``), stamps the part and message
rows it writes with it, and refreshes its heartbeat while open; recovery on open interrupts only the unfinished
calls of owners that are gone, never those of a live neighbour. Transactions start ``IMMEDIATE`` so a writer waits
for another process's commit (``busy_timeout``) instead of failing to upgrade a read snapshot.

Split by concept as the PostgreSQL store is: this module is the store and its writer thread; the schema is
``_migrations``, the rows and codec both stores write ``_rows``, the owners' rules ``_owners`` and their SQL here
``_sqlite_owners`` (claims, recovery), finding and removing sessions ``_admin``, search ``_search``, todos ``_todos``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

from ..errors import NotFoundError, StoreError, UsageError
from ..records import (
    DurableEvent,
    SessionInfo,
)
from ..records.internal import (
    now_ms,
)
from ..storable import visible
from . import _admin
from ._admin import Deleted, SessionKind
from ._interface import StoredMessage
from ._migrations import MIGRATIONS, statements
from ._owners import (
    HEARTBEAT_SECONDS,
    SWEEP_SECONDS,
    Owner,
    OwnerStatus,
    current_owner,
    owner_statuses,
)
from ._queued import QueuedStore
from ._rows import (
    SESSION_COLUMNS,
    SESSION_SELECT,
    Call,
    Stop,
    Writes,
    _text,
    session_from_row,
    writer_statements,
)
from ._search import SessionMatch, search_sqlite
from ._sqlite_checkpoint import WAL_BACKSTOP_PAGES, Checkpointer
from ._sqlite_owners import claim_session, recover_gone
from ._todos import Todo, read_todos, write_todos

__all__ = ["SQLiteStore"]

log = logging.getLogger("tether.store")

T = TypeVar("T")

_MAX_BATCH = 32_768
"""Events (and reads) one transaction takes from the queue at most.

The writer folds the versions of a record within one transaction (see :class:`Writes`), so the cap decides how much
folding a burst gets: in a 10,000-call parallel step (30,000 part versions) a cap of 4,096 wrote almost every version
(each batch held one state of ~1,300 calls): 27.6 us of writer CPU per call against 17.6 us with this cap
(``bench/writer_batch.py`` replays a step's events both ways). The rows a batch encodes are about the
size of the records it holds, which the queue holds already; a read queued in a batch is answered at its commit.
"""
_BUSY_TIMEOUT_MS = 30_000

_PROJECT_EVENTS = (
    "SELECT e.seq, e.session_id, e.type, e.data, p.message_id FROM events e CROSS JOIN sessions s "
    "ON s.id = e.session_id LEFT JOIN parts p "
    "ON e.type = 'message.part.updated' AND p.session_id = e.session_id AND p.id = e.ref "
    "WHERE s.project = ? AND e.seq > ? AND e.seq <= ? {session}ORDER BY e.seq LIMIT ?"
)
"""The events of one project's sessions in a range of the log (:meth:`SQLiteStore.project_events_after`): the log
walked by its key range (or ``events_session``'s), each event's session looked up by its key. ``CROSS JOIN`` keeps
that order: left free, SQLite walks every session of the project and sorts their events, a cost that grows with the
project's history instead of the new events."""


class SQLiteStore(QueuedStore):
    """A :class:`~tether.store.SessionStore` in one SQLite file.

    Use as an async context manager (or call :meth:`open` / :meth:`aclose`). Opening applies pending migrations and,
    unless ``recover=False``, runs :meth:`recover`.

    Args:
        path: the database file (its directory is created).
        recover: mark unfinished tool parts interrupted on open, and every ``sweep`` seconds while open.
        window: seconds the writer lets events accumulate before a commit (bounds how stale the file may be).
        sweep: seconds between two recoveries while the store is open (a worker that died meanwhile leaves no call
            ``running`` for longer), when ``recover`` is on.
    """

    _max_batch = _MAX_BATCH

    def __init__(
        self, path: str | Path, *, recover: bool = True, window: float = 0.002, sweep: float = SWEEP_SECONDS
    ) -> None:
        if not sweep > 0:
            raise UsageError(f"a store's sweep is positive seconds, not {sweep!r}")
        super().__init__(window=window)
        self.path = Path(path)
        self._sweep = sweep
        self._recover_on_open = recover
        self._opened = False
        self._owner: Owner | None = None
        self._checkpointer = Checkpointer(self.path)
        self._inputs: dict[str, tuple[Any, Any]] = {}
        """Writer thread only: the ``(input, raw)`` objects last written per unsettled tool part (written once)."""
        self.recovered = 0
        """How many tool parts the last :meth:`recover` marked interrupted."""

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the writer thread, which opens and migrates the file while the caller goes on (:meth:`open` waits
        for it): a runtime opens its other parts meanwhile. Idempotent."""
        if self._thread is not None:
            return
        started = self._started = Future()
        self._thread = threading.Thread(target=self._serve, args=(started,), name="tether-store", daemon=True)
        self._thread.start()

    async def open(self) -> SQLiteStore:
        """Start the writer thread (unless :meth:`start` did), wait until it has migrated the file, and recover.

        Raises:
            StoreError: the file cannot be opened or migrated.
        """
        if self._opened:
            return self
        self.start()
        assert self._started is not None
        await anyio.to_thread.run_sync(self._started.result)
        self._opened = True
        if self._recover_on_open:
            await self.recover()
        return self

    # -- reads -------------------------------------------------------------------------------------------------------

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        result: T = await self._ask(Call(fn))
        return result

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session ``session_id``.

        Raises:
            NotFoundError: no such session.
        """

        def read(conn: sqlite3.Connection) -> SessionInfo | None:
            row = conn.execute(
                f"SELECT {SESSION_SELECT} FROM sessions WHERE id = ?", (_text(session_id),)
            ).fetchone()
            return None if row is None else session_from_row(row)

        found = await self._run(read)
        if found is None:
            raise NotFoundError(f"Session not found: {session_id}")
        return found

    async def list_sessions(self, *, project: str | None = None, limit: int = 100) -> Sequence[SessionInfo]:
        """Sessions, most recently updated first."""

        def read(conn: sqlite3.Connection) -> list[SessionInfo]:
            if project is None:
                rows = conn.execute(
                    f"SELECT {SESSION_SELECT} FROM sessions ORDER BY updated DESC, id DESC LIMIT ?",
                    (limit,),
                )
            else:
                rows = conn.execute(
                    f"SELECT {SESSION_SELECT} FROM sessions WHERE project = ? "
                    "ORDER BY updated DESC, id DESC LIMIT ?",
                    (_text(project), limit),
                )
            return [session_from_row(r) for r in rows]

        return await self._run(read)

    async def search_sessions(self, words: str, *, project: str, limit: int = 50) -> Sequence[SessionMatch]:
        """The project's sessions whose title, text or a called tool's name holds ``words``, most recently updated
        first (``_search``: one query, stopping at ``limit`` matches)."""
        return await self._run(
            lambda conn: search_sqlite(conn, SESSION_COLUMNS, session_from_row, _text(project), words, limit)
        )

    async def child_sessions(self, session_id: str) -> Sequence[SessionInfo]:
        """The sessions whose parent is ``session_id`` (subagents' sessions), oldest first (the parent index)."""

        def read(conn: sqlite3.Connection) -> list[SessionInfo]:
            rows = conn.execute(
                f"SELECT {SESSION_SELECT} FROM sessions WHERE parent_id = ? ORDER BY created, id",
                (_text(session_id),),
            )
            return [session_from_row(r) for r in rows]

        return await self._run(read)

    async def load_messages(self, session_id: str) -> Sequence[StoredMessage]:
        """Every message of the session with its parts, oldest first."""
        return await self._run(lambda conn: _admin.load_messages(conn, session_id, None))

    async def load_message(self, session_id: str, message_id: str) -> StoredMessage | None:
        """The message ``message_id`` of the session with its parts (``None``: no such message in that session).

        Two key searches (the message by its key, its parts by ``parts_message``), whatever the session's length
        (law 10): what a Temporal tool call reads to find the one part it settles."""
        found = await self._run(lambda conn: _admin.load_messages(conn, session_id, message_id))
        return found[0] if found else None

    async def events(self, session_id: str, *, after: int = 0) -> Sequence[tuple[int, str, dict[str, Any]]]:
        """The session's event log after sequence number ``after``: ``(seq, type, data)`` in order."""

        def read(conn: sqlite3.Connection) -> list[tuple[int, str, dict[str, Any]]]:
            return [
                (seq, kind, json.loads(data))
                for seq, kind, data in conn.execute(
                    "SELECT seq, type, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
                    (session_id, after),
                )
            ]

        return await self._run(read)

    async def events_after(
        self, after: int, *, session_id: str | None = None, limit: int = 1000
    ) -> Sequence[tuple[int, str, str, str, str | None]]:
        """At most ``limit`` events of the log after sequence number ``after`` (of one session if given), in order:
        ``(seq, session_id, type, data JSON text, the part's message id or None)``. A range of the primary key (or
        of ``events_session``) joined to a part by its key, never a scan (law 10): how a server's event stream
        resumes from ``Last-Event-ID``."""
        select = (
            "SELECT e.seq, e.session_id, e.type, e.data, p.message_id FROM events e LEFT JOIN parts p "
            "ON e.type = 'message.part.updated' AND p.session_id = e.session_id AND p.id = e.ref "
        )

        def read(conn: sqlite3.Connection) -> list[tuple[int, str, str, str, str | None]]:
            if session_id is None:
                query = f"{select}WHERE e.seq > ? ORDER BY e.seq LIMIT ?"
                args: tuple[Any, ...] = (after, limit)
            else:
                query = f"{select}WHERE e.session_id = ? AND e.seq > ? ORDER BY e.seq LIMIT ?"
                args = (session_id, after, limit)
            return list(conn.execute(query, args))

        return await self._run(read)

    async def project_events_after(
        self, after: int, *, project: str, session_id: str | None = None, limit: int = 1000
    ) -> tuple[Sequence[tuple[int, str, str, str, str | None]], int]:
        """:meth:`events_after`, of the sessions of project root ``project`` only (its sessions' children too: they
        record the same root), and the sequence number the read covered: continue after it, not after the last row
        returned, so the events of other projects are passed over once (law 10). See :data:`_PROJECT_EVENTS`."""

        def read(conn: sqlite3.Connection) -> tuple[list[tuple[int, str, str, str, str | None]], int]:
            end: int = conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
            if session_id is None:
                query = _PROJECT_EVENTS.format(session="")
                args: tuple[Any, ...] = (_text(project), after, end, limit)
            else:
                query = _PROJECT_EVENTS.format(session="AND e.session_id = ? ")
                args = (_text(project), after, end, session_id, limit)
            rows: list[tuple[int, str, str, str, str | None]] = list(conn.execute(query, args))
            return rows, rows[-1][0] if len(rows) == limit else max(end, after)

        return await self._run(read)

    async def last_seq(self) -> int:
        """The sequence number of the newest event in the log (``0``: none); the end of the primary key."""
        return await self._run(
            lambda conn: conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
        )

    async def claim(self, session_id: str) -> None:
        """Make this store the one running ``session_id`` until :meth:`release` or close (one session, one writer).

        A claim held by a store that is gone (closed, its process exited or its pid reused: see ``_owners``) is taken
        over. Checking and taking happen in one write transaction, so two processes never both get the session.

        Raises:
            UsageError: a live store (another process, or another store of this one) runs the session:
                ``session ses_… is busy (pid N)``.
            StoreError: the store is closed or failed.
        """
        owner = self._owner
        assert owner is not None
        holder = await self._run(lambda conn: claim_session(conn, owner, _text(session_id)))
        if holder is not None:
            where = "" if holder.host == owner.host else f" on {holder.host}"
            raise UsageError(f"session {session_id} is busy (pid {holder.pid}{where})")

    async def release(self, session_id: str) -> None:
        """Give up this store's claim on ``session_id`` (a no-op when it holds none)."""
        owner = self._owner
        assert owner is not None
        await self._run(
            lambda conn: conn.execute(
                "DELETE FROM claims WHERE session_id = ? AND owner = ?", (_text(session_id), owner.id)
            )
        )

    # -- todo lists (``_todos``) -------------------------------------------------------------------------------------

    async def save_todos(self, session_id: str, todos: Sequence[Todo]) -> None:
        """Replace the todo list of ``session_id`` with ``todos``, in order (committed when this returns).

        Raises:
            StoreError: the store failed or is closed.
        """
        self._writable()
        await self._run(lambda conn: write_todos(conn, _text(session_id), todos))
        if self._error is not None:
            raise self._error

    async def load_todos(self, session_id: str) -> tuple[Todo, ...]:
        """The todo list of ``session_id`` in order (one key range of the ``todos`` table; empty when none)."""
        return await self._run(lambda conn: read_todos(conn, _text(session_id)))

    # -- finding and removing sessions (``_admin``) ------------------------------------------------------------------

    async def resolve_session(self, given: str) -> SessionInfo:
        """The session whose id is ``given`` or, failing that, the one whose id starts with it (one index range).

        Raises:
            UsageError: ``given`` is empty or ambiguous (the error names up to five candidates).
            NotFoundError: no session id is or starts with ``given``.
        """
        return await self._run(lambda conn: _admin.resolve(conn, SESSION_SELECT, session_from_row, given))

    async def latest_session(self, *, project: str, kind: SessionKind = "conversation") -> SessionInfo | None:
        """The most recently updated top-level session of ``kind`` in the project root ``project``."""
        return await self._run(
            lambda conn: _admin.latest(conn, SESSION_SELECT, session_from_row, _text(project), kind)
        )

    async def set_kind(self, session_id: str, kind: SessionKind) -> None:
        """Record what the session is for (``tether tool call`` marks its session ``tool-call``).

        Raises:
            NotFoundError: no such session.
            StoreError: the store failed or is closed.
        """
        self._writable()
        await self._run(lambda conn: _admin.set_kind(conn, _text(session_id), kind))

    async def session_kinds(self, session_ids: Sequence[str]) -> dict[str, SessionKind]:
        """The kind of each stored session of ``session_ids``."""
        return await self._run(lambda conn: _admin.kinds(conn, [_text(sid) for sid in session_ids]))

    async def delete_session(self, session_id: str) -> Deleted:
        """Delete the session, its children and all their rows in one transaction, unless a live store runs one.

        Returns what was deleted (the session first, then its descendants) or, for a live session, the holder
        (``Deleted.live``) with nothing deleted. Retained tool outputs are files: the caller removes them.

        Raises:
            NotFoundError: no such session.
            StoreError: the store failed or is closed.
        """
        owner = self._writable()
        return await self._run(
            lambda conn: _admin.delete_tree(
                conn, SESSION_SELECT, session_from_row, owner, _text(session_id), now_ms()
            )
        )

    async def prune_sessions(self, *, before: int, dry_run: bool = False) -> Deleted:
        """Delete every session tree not updated since ``before`` (ms since the epoch); live ones are skipped.

        Raises:
            StoreError: the store failed or is closed.
        """
        owner = self._writable()
        return await self._run(
            lambda conn: _admin.prune(
                conn, SESSION_SELECT, session_from_row, owner, before=before, dry_run=dry_run, now=now_ms()
            )
        )

    def _writable(self) -> Owner:
        if self._error is not None:
            raise self._error
        if self._owner is None or self._closed:
            raise StoreError("The session store is closed")
        return self._owner

    @property
    def owner(self) -> str | None:
        """This store's owner id (stamped on the parts and messages it writes), once open."""
        return None if self._owner is None else self._owner.id

    async def recover(self) -> int:
        """Interrupt the unfinished work of stores that are gone; return how many tool parts were interrupted.

        A ``pending``/``running`` tool part becomes ``error`` / ``Tool execution interrupted`` / ``interrupted``, and
        an unfinished assistant message gets an ``interrupted`` error, only when the store that wrote it is closed,
        its process has exited, or its pid now belongs to another process. Live stores (in this or another
        process) keep their calls.

        Raises:
            StoreError: the store is closed or the read failed.
        """
        owner = self._owner
        assert owner is not None
        self.recovered = await self._run(lambda conn: recover_gone(conn, owner))
        return self.recovered

    async def owners(self) -> list[OwnerStatus]:
        """The open stores sharing this file (the owner rows), each with its liveness verdict, its claims and its
        unfinished calls (``tether sessions --owners``).

        Raises:
            StoreError: the store is closed.
        """
        owner = self._owner
        assert owner is not None
        return await self._run(lambda conn: owner_statuses(conn, owner, now_ms()))

    # -- the writer thread -------------------------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # private (0600): SQLite gives the -wal/-shm files the database's mode
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=_BUSY_TIMEOUT_MS / 1000
        )
        try:
            # Several processes may open a fresh file at the same moment: the busy timeout comes first, switching to
            # WAL is retried while another opener holds the lock, and the schema version is read again inside the
            # IMMEDIATE transaction that migrates, so only one process creates the tables.
            conn.row_factory = sqlite3.Row  # columns are read by name
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            _retry_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA temp_store=MEMORY")
            conn.execute(f"PRAGMA wal_autocheckpoint={WAL_BACKSTOP_PAGES}")  # ``_sqlite_checkpoint``
            owner = self._owner = current_owner()
            _retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"))
            try:
                version = conn.execute("PRAGMA user_version").fetchone()["user_version"]
                if version > len(MIGRATIONS):
                    raise StoreError(
                        f"{self.path} has schema version {version}; this tether knows {len(MIGRATIONS)}. "
                        "Upgrade tether."
                    )
                for script in MIGRATIONS[version:]:
                    for statement in statements(script):
                        conn.execute(statement)
                if version < len(MIGRATIONS):
                    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
                now = now_ms()
                conn.execute(
                    "INSERT INTO owners (id, host, pid, identity, opened, heartbeat) VALUES (?, ?, ?, ?, ?, ?)",
                    (owner.id, visible(owner.host), owner.pid, owner.identity, now, now),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except BaseException:
            conn.close()
            raise
        return conn

    def _serve(self, started: Future[None]) -> None:
        try:
            conn = self._connect()
        except (sqlite3.Error, OSError, StoreError) as exc:
            error = (
                exc
                if isinstance(exc, StoreError)
                else StoreError(f"Cannot open session store {self.path}: {exc}")
            )
            self._error = error
            started.set_exception(error)
            self._fail_queued()  # what was queued since start() waits on nothing that will come
            return
        started.set_result(None)
        q = self._queue
        beat_at = time.monotonic() + HEARTBEAT_SECONDS
        sweep_at = time.monotonic() + self._sweep if self._recover_on_open else math.inf
        warm = list(reversed(writer_statements()))  # compiled while nothing is queued (``_warm``)
        try:
            while True:
                if warm and q.empty():
                    _warm(conn, warm.pop())
                    continue
                try:
                    first = q.get(timeout=max(0.0, min(beat_at, sweep_at) - time.monotonic()))
                except queue.Empty:
                    first = None
                if time.monotonic() >= sweep_at:  # a live store recovers too, not only an opening one
                    sweep_at = time.monotonic() + self._sweep
                    q.put(Call(self._sweep_once))
                if time.monotonic() >= beat_at:  # a store kept busy still beats
                    beat_at = time.monotonic() + HEARTBEAT_SECONDS
                    self._beat(conn)
                if first is None:
                    continue
                batch = self._batch(first)
                if not self._apply(conn, batch):
                    return
                self._checkpointer.committed(conn, sum(not isinstance(item, Call | Stop) for item in batch))
        finally:
            self._checkpointer.close()  # before the writer's connection closes: the last one checkpoints what is left
            self._release(conn)
            conn.close()
            self._fail_queued()  # nothing waits forever on a store whose thread has ended (a read behind the stop)

    def _sweep_once(self, conn: sqlite3.Connection) -> int:
        # a failed store answers reads only: it writes nothing, not even a recovery
        if self._error is not None or self._owner is None:
            return 0
        return recover_gone(conn, self._owner)

    def _beat(self, conn: sqlite3.Connection) -> None:
        assert self._owner is not None
        try:
            conn.execute("UPDATE owners SET heartbeat = ? WHERE id = ?", (now_ms(), self._owner.id))
        except sqlite3.Error as exc:  # a missed heartbeat only matters after STALE_SECONDS of them
            log.warning("session store heartbeat failed: %s", exc)

    def _release(self, conn: sqlite3.Connection) -> None:
        # A closed store writes nothing more: its unfinished calls (if any) are now recoverable by the next opener,
        # and the sessions it claimed are free.
        assert self._owner is not None
        try:
            conn.execute("DELETE FROM claims WHERE owner = ?", (self._owner.id,))
            conn.execute("DELETE FROM owners WHERE id = ?", (self._owner.id,))
        except sqlite3.Error as exc:
            log.warning("session store could not release its owner row: %s", exc)

    def _apply(self, conn: sqlite3.Connection, batch: list[DurableEvent | Call | Stop]) -> bool:
        """Write one batch in one transaction and answer its reads; false when the batch asked the thread to stop.

        This is the thread's boundary: when a write fails (SQLite refusing a row, a full disk, a read-only file),
        the batch is rolled back and written again event by event, in append order, up to the one that fails: the
        file then holds exactly the events appended before the failure. The failure becomes the store's error: from
        then on nothing more is written, every ``append`` and ``flush`` raises it, and reads are still answered. The
        thread never dies on a bad write, so nothing waits on it forever.
        """
        keep_going = not any(isinstance(item, Stop) for item in batch)
        if self._error is None:
            assert self._owner is not None
            inputs = dict(self._inputs)
            writes = Writes(self._owner.id, self._inputs)
            done: list[tuple[Call, Any, Exception | None]] = []
            try:
                conn.execute("BEGIN IMMEDIATE")
                now = now_ms()
                for item in batch:
                    if isinstance(item, Call):
                        writes.execute(conn)  # a read sees every write queued before it
                        try:
                            done.append((item, item.fn(conn), None))
                        except Exception as exc:
                            done.append((item, None, exc))
                    elif not isinstance(item, Stop):
                        writes.add(item, now)
                writes.execute(conn)
                conn.execute("COMMIT")
            except Exception:  # becomes the store's failure (every caller gets it), never the thread's death
                _rollback(conn)
                self._inputs = inputs
                try:
                    failure = self._write_prefix(conn, batch)
                except Exception as exc:  # even a rollback can fail (a full disk): the thread lives
                    _rollback(conn)
                    failure = exc
                if failure is not None:
                    self._fail(failure)
            else:
                # Answered after the commit: a flush returns only once what was queued before it is committed.
                for call, result, error in done:
                    _resolve(call, result, error)
                return keep_going
        # The store has failed: nothing more is written; reads are answered outside a transaction.
        for item in batch:
            if isinstance(item, Call):
                try:
                    result = item.fn(conn)
                except Exception as exc:
                    _resolve(item, None, exc)
                else:
                    _resolve(item, result, None)
        return keep_going

    def _write_prefix(
        self, conn: sqlite3.Connection, batch: list[DurableEvent | Call | Stop]
    ) -> Exception | None:
        """Write the batch's events one by one up to the first that fails; return that failure (``None``: none)."""
        assert self._owner is not None
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            return exc
        now = now_ms()
        failure: Exception | None = None
        for item in batch:
            if isinstance(item, Call | Stop):
                continue
            conn.execute("SAVEPOINT event")
            try:
                writes = Writes(self._owner.id, self._inputs)
                writes.add(item, now)
                writes.execute(conn)
            except Exception as exc:
                conn.execute("ROLLBACK TO event")
                failure = exc
                break
            finally:
                conn.execute("RELEASE event")
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            return failure or exc
        return failure

    def _fail(self, exc: BaseException) -> None:
        # Not logged above debug: every later append and flush raises the error, so the caller reports it once.
        log.debug("session store write failed: %s", exc)
        if self._error is None:
            self._error = StoreError(f"Session store write failed ({self.path}): {exc}")


def _warm(conn: sqlite3.Connection, sql: str) -> None:
    """Compile ``sql`` into the connection's statement cache without running it: executed with no parameters, the
    statement is compiled and cached, then refused at binding (nothing written, no transaction, no lock taken).

    The writer does it for each of its batch statements (``_rows.writer_statements``) while nothing is queued, one
    at a time, so a new store's first batches find them compiled (SQLite compiles a text at its first use in a
    connection: 20-140 µs each, the commit of a fresh runtime's first turn waited for several) and a queued event
    waits for one compile at most. About 1 ms of the writer thread's CPU per store opened, mostly outside the GIL.
    """
    with contextlib.suppress(sqlite3.Error):
        conn.execute(sql, ())


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            log.warning("session store rollback failed: %s", exc)


def _resolve(call: Call, result: Any, error: Exception | None) -> None:
    if error is None:
        call.future.set_result(result)
    elif isinstance(error, sqlite3.Error):
        call.future.set_exception(StoreError(f"Session store read failed: {error}"))
    else:
        call.future.set_exception(error)


def _retry_busy(statement: Callable[[], object], *, attempts: int = 200) -> None:
    """Run ``statement``, retrying while another connection holds a lock SQLite's busy handler does not wait for.

    Switching a fresh file to WAL and starting a write transaction during another process's recovery can report
    ``database is locked`` at once, without the busy timeout.
    """
    for attempt in range(attempts):
        try:
            statement()
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == attempts - 1:
                raise
            time.sleep(0.01 + 0.002 * attempt)

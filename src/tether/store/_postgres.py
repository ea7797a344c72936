"""The PostgreSQL session store: the SQLite store's protocol and behaviour on one database many workers share.

Selected by ``"store": "postgresql://..."`` in the config or ``TETHER_STORE_URL`` (docs/postgres.md); the SQLite
store stays the default. The shape is the SQLite store's (``_sqlite``): one writer thread owns one connection;
``append`` only enqueues (law 9); the thread drains what is queued and commits it as one transaction; reads are
queued behind the writes, so they see every event appended before them; a failed write rolls its batch back,
rewrites the events before the failing one and becomes the store's ``StoreError`` (the thread never dies). The
tables are those of the SQLite store plus saved approvals (``_postgres_schema``, numbered migrations).

Ownership across hosts is by lease and advisory lock, not pid (``_postgres_owners``): every write transaction renews
this store's lease first, and refuses to write once another worker has recovered this store's calls.

A connection that breaks (the server restarted, the network dropped) fails the store: the batch in flight is not
committed, everything committed before stays, every later append and flush raises ``StoreError``. The store does
not reconnect: its lease and advisory lock died with the connection, so another worker may already have recovered
its calls, and a turn must not go on writing as if nothing happened.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio.to_thread

from ..errors import NotFoundError, StoreError, UsageError
from ..records import DurableEvent, SessionInfo
from ..records.internal import now_ms
from . import _postgres_admin as admin
from ._admin import Deleted, SessionKind
from ._interface import StoredMessage
from ._owners import SWEEP_SECONDS, OwnerStatus
from ._postgres_conn import connect, describe, redact
from ._postgres_owners import DEFAULT_LEASE, claim, new_lock_key, owner_statuses, recover, register, renew
from ._postgres_rows import EVENTS_LOCK, PgWrites, pg_text
from ._postgres_schema import migrate
from ._queued import QueuedStore, nothing
from ._rows import SESSION_COLUMNS, Call, Stop
from ._search import SessionMatch, search_postgres
from ._todos import Todo

__all__ = ["PostgresStore"]

log = logging.getLogger("tether.store")

_MAX_BATCH = 4096
"""Events (and reads) one transaction takes from the queue at most (``executemany`` pipelines each statement)."""

T = TypeVar("T")


class _Read(Call):
    """A queued call that only reads: a batch of nothing else is answered without a transaction or a lock."""

    __slots__ = ()


class LeaseLost(Exception):
    """This store's owner row is gone: another worker judged it expired and recovered its calls."""


class PostgresStore(QueuedStore):
    """A :class:`~tether.store.SessionStore` in a PostgreSQL database (``tether[postgres]``).

    Use as an async context manager (or call :meth:`open` / :meth:`aclose`). Opening connects (failing within the
    connect timeout, never hanging), applies pending migrations, registers this store's owner and, unless
    ``recover=False``, runs :meth:`recover`.

    Args:
        url: a ``postgresql://`` URL (libpq syntax). Its password never appears in errors, logs or ``repr``.
        recover: interrupt the unfinished calls of gone owners on open, and every ``sweep`` seconds while open.
        window: seconds the writer lets events accumulate before a commit.
        lease: seconds this store stays live in others' eyes without renewing (renewed every third of it, and by
            every write).
        sweep: seconds between two recoveries while the store is open (a worker that died meanwhile, on any host,
            leaves no call ``running`` for longer), when ``recover`` is on.
    """

    _max_batch = _MAX_BATCH

    def __init__(
        self,
        url: str,
        *,
        recover: bool = True,
        window: float = 0.002,
        lease: float = DEFAULT_LEASE,
        sweep: float = SWEEP_SECONDS,
    ) -> None:
        if lease <= 0:
            raise UsageError(f"a store lease must be positive seconds, not {lease!r}")
        if not sweep > 0:
            raise UsageError(f"a store's sweep is positive seconds, not {sweep!r}")
        super().__init__(window=window)
        self._sweep = sweep
        self._url = url
        self.path = describe(url)
        """The URL without its password (what errors name; ``SQLiteStore.path`` is the file)."""
        self._lease_ms = max(1, int(lease * 1000))
        self._beat_every = lease / 3
        self._recover_on_open = recover
        self._owner: str | None = None
        self._inputs: dict[str, tuple[Any, Any]] = {}
        self.recovered = 0
        """How many tool parts the last :meth:`recover` marked interrupted."""

    def __repr__(self) -> str:
        return f"<PostgresStore {self.path}>"

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    async def open(self) -> PostgresStore:
        """Connect, migrate, register this store's owner, and recover.

        Raises:
            StoreError: the server cannot be reached within the connect timeout, refuses the login, the database
                has a newer schema, or ``psycopg`` is not installed.
        """
        if self._thread is not None:
            return self
        started = self._started = Future()
        self._thread = threading.Thread(
            target=self._serve, args=(started,), name="tether-pg-store", daemon=True
        )
        self._thread.start()
        await anyio.to_thread.run_sync(started.result)
        if self._recover_on_open:
            await self.recover()
        return self

    @property
    def owner(self) -> str | None:
        """This store's owner id (stamped on the parts and messages it writes), once open."""
        return self._owner

    async def _run(self, fn: Callable[[Any], T], *, read: bool = False) -> T:
        result: T = await self._ask(_Read(fn) if read else Call(fn))
        return result

    def _writable(self) -> str:
        if self._error is not None:
            raise self._error
        if self._owner is None or self._closed:
            raise StoreError("The session store is closed")
        return self._owner

    # -- reads -------------------------------------------------------------------------------------------------------

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session ``session_id``.

        Raises:
            NotFoundError: no such session.
        """
        found = await self._run(lambda conn: admin.get_session(conn, session_id), read=True)
        if found is None:
            raise NotFoundError(f"Session not found: {session_id}")
        return found

    async def list_sessions(self, *, project: str | None = None, limit: int = 100) -> Sequence[SessionInfo]:
        """Sessions, most recently updated first."""
        return await self._run(lambda conn: admin.list_sessions(conn, project, limit), read=True)

    async def search_sessions(self, words: str, *, project: str, limit: int = 50) -> Sequence[SessionMatch]:
        """The project's sessions whose title, text or a called tool's name holds ``words`` (see
        ``SQLiteStore.search_sessions``)."""
        return await self._run(
            lambda conn: search_postgres(
                conn, SESSION_COLUMNS, admin._session, pg_text(project), words, limit
            ),
            read=True,
        )

    async def child_sessions(self, session_id: str) -> Sequence[SessionInfo]:
        """The sessions whose parent is ``session_id``, oldest first."""
        return await self._run(lambda conn: admin.child_sessions(conn, session_id), read=True)

    async def load_messages(self, session_id: str) -> Sequence[StoredMessage]:
        """Every message of the session with its parts, oldest first."""
        return await self._run(lambda conn: admin.load_messages(conn, session_id), read=True)

    async def load_message(self, session_id: str, message_id: str) -> StoredMessage | None:
        """The message ``message_id`` of the session with its parts (``None``: no such message in that session), by
        key (see ``SQLiteStore.load_message``)."""
        found = await self._run(lambda conn: admin.load_messages(conn, session_id, message_id), read=True)
        return found[0] if found else None

    async def events(self, session_id: str, *, after: int = 0) -> Sequence[tuple[int, str, dict[str, Any]]]:
        """The session's event log after sequence number ``after``: ``(seq, type, data)`` in order."""
        return await self._run(lambda conn: admin.events(conn, session_id, after), read=True)

    async def events_after(
        self, after: int, *, session_id: str | None = None, limit: int = 1000
    ) -> Sequence[tuple[int, str, str, str, str | None]]:
        """At most ``limit`` events after sequence number ``after`` (see ``SQLiteStore.events_after``). Sequence
        numbers are assigned in commit order across workers, so resuming after ``N`` misses nothing."""
        return await self._run(lambda conn: admin.events_after(conn, after, session_id, limit), read=True)

    async def project_events_after(
        self, after: int, *, project: str, session_id: str | None = None, limit: int = 1000
    ) -> tuple[Sequence[tuple[int, str, str, str, str | None]], int]:
        """The events of project root ``project``'s sessions after ``after``, and the sequence number the read
        covered (see ``SQLiteStore.project_events_after``)."""
        return await self._run(
            lambda conn: admin.project_events_after(conn, after, project, session_id, limit), read=True
        )

    async def last_seq(self) -> int:
        """The sequence number of the newest event in the log (``0``: none)."""
        return await self._run(
            lambda conn: int(conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]),
            read=True,
        )

    # -- one session, one writer ---------------------------------------------------------------------------------------

    async def claim(self, session_id: str) -> None:
        """Make this store the one running ``session_id`` until :meth:`release` or close, across every worker.

        A claim held by an owner that is gone (its lease expired or its connection died) is taken over, in one
        statement PostgreSQL serializes: two workers never both get the session.

        Raises:
            UsageError: a live store runs the session: ``session ses_… is busy (pid N on host)``.
            StoreError: the store is closed or failed.
        """
        owner = self._writable()
        holder = await self._run(lambda conn: claim(conn, owner, session_id))
        if holder is not None:
            host, pid = holder
            where = "" if host == socket.gethostname() else f" on {host}"
            raise UsageError(f"session {session_id} is busy (pid {pid}{where})")

    async def release(self, session_id: str) -> None:
        """Give up this store's claim on ``session_id`` (a no-op when it holds none)."""
        owner = self._writable()
        await self._run(
            lambda conn: conn.execute(
                "DELETE FROM claims WHERE session_id = %s AND owner = %s", (pg_text(session_id), owner)
            )
        )

    # -- todo lists --------------------------------------------------------------------------------------------------

    async def save_todos(self, session_id: str, todos: Sequence[Todo]) -> None:
        """Replace the todo list of ``session_id`` with ``todos``, in order (committed when this returns).

        Raises:
            StoreError: the store failed or is closed.
        """
        self._writable()
        await self._run(lambda conn: admin.write_todos(conn, session_id, todos))
        if self._error is not None:
            raise self._error

    async def load_todos(self, session_id: str) -> tuple[Todo, ...]:
        """The todo list of ``session_id`` in order (empty when none)."""
        return await self._run(lambda conn: admin.read_todos(conn, session_id), read=True)

    # -- finding and removing sessions -------------------------------------------------------------------------------

    async def resolve_session(self, given: str) -> SessionInfo:
        """The session whose id is ``given`` or, failing that, the one whose id starts with it.

        Raises:
            UsageError: ``given`` is empty or ambiguous (the error names up to five candidates).
            NotFoundError: no session id is or starts with ``given``.
        """
        return await self._run(lambda conn: admin.resolve(conn, given), read=True)

    async def latest_session(self, *, project: str, kind: SessionKind = "conversation") -> SessionInfo | None:
        """The most recently updated top-level session of ``kind`` in the project root ``project``."""
        return await self._run(lambda conn: admin.latest(conn, project, kind), read=True)

    async def set_kind(self, session_id: str, kind: SessionKind) -> None:
        """Record what the session is for.

        Raises:
            NotFoundError: no such session.
            StoreError: the store failed or is closed.
        """
        self._writable()
        await self._run(lambda conn: admin.set_kind(conn, session_id, kind))

    async def session_kinds(self, session_ids: Sequence[str]) -> dict[str, SessionKind]:
        """The kind of each stored session of ``session_ids``."""
        return await self._run(lambda conn: admin.kinds(conn, session_ids), read=True)

    async def delete_session(self, session_id: str) -> Deleted:
        """Delete the session, its children and all their rows, unless a live store (any worker) runs one.

        Raises:
            NotFoundError: no such session.
            StoreError: the store failed or is closed.
        """
        self._writable()
        return await self._run(lambda conn: admin.delete_tree(conn, session_id))

    async def prune_sessions(self, *, before: int, dry_run: bool = False) -> Deleted:
        """Delete every session tree not updated since ``before`` (ms since the epoch); live ones are skipped.

        Raises:
            StoreError: the store failed or is closed.
        """
        self._writable()
        return await self._run(lambda conn: admin.prune(conn, before=before, dry_run=dry_run))

    async def recover(self) -> int:
        """Interrupt the unfinished work of owners that are gone (lease expired or connection closed, on any host);
        return how many tool parts were interrupted. Live owners keep their calls.

        Raises:
            StoreError: the store is closed or failed.
        """
        owner = self._writable()
        self.recovered = await self._run(lambda conn: recover(conn, owner, now_ms()))
        return self.recovered

    async def owners(self) -> list[OwnerStatus]:
        """The open stores sharing this database (the owner rows), each with its lease, its advisory lock, its
        liveness verdict, its claims and its unfinished calls (``tether sessions --owners``).

        Raises:
            StoreError: the store is closed or failed.
        """
        owner = self._writable()
        return await self._run(lambda conn: owner_statuses(conn, owner), read=True)

    # -- the writer thread -------------------------------------------------------------------------------------------

    def _connect(self) -> Any:
        conn = connect(self._url, application_name="tether")
        try:
            # A worker stopped inside a write transaction (SIGSTOP, a frozen VM) would hold the event-log lock and
            # stall every other worker: the server ends such a transaction after one lease (its store then fails).
            conn.execute(
                "SELECT set_config('idle_in_transaction_session_timeout', %s, false)", (str(self._lease_ms),)
            )
            try:
                migrate(conn)
            except ValueError as exc:
                raise StoreError(f"{self.path} {exc}") from None
            owner = f"own_{os.urandom(8).hex()}"
            register(conn, owner, socket.gethostname(), os.getpid(), new_lock_key(), self._lease_ms)
            self._owner = owner
        except BaseException:
            conn.close()
            raise
        return conn

    def _serve(self, started: Future[None]) -> None:
        try:
            conn = self._connect()
        except Exception as exc:  # the thread's boundary: whatever failed, open() raises it as a StoreError
            error = (
                exc if isinstance(exc, StoreError) else self._store_error("Cannot open session store", exc)
            )
            self._error = error
            started.set_exception(error)
            self._fail_queued()  # what was queued meanwhile waits on nothing that will come
            return
        started.set_result(None)
        q = self._queue
        beat_at = time.monotonic() + self._beat_every
        sweep_at = time.monotonic() + self._sweep if self._recover_on_open else math.inf
        try:
            while True:
                try:
                    first = q.get(timeout=max(0.0, min(beat_at, sweep_at) - time.monotonic()))
                except queue.Empty:
                    first = None
                if time.monotonic() >= sweep_at:  # a live store recovers too, not only an opening one
                    sweep_at = time.monotonic() + self._sweep
                    q.put(Call(self._sweep_once))
                if time.monotonic() >= beat_at:  # a store kept busy (even with reads only) still renews
                    beat_at = time.monotonic() + self._beat_every
                    self._beat(conn)
                if first is None:
                    continue
                batch = self._batch(first)
                if not self._apply(conn, batch):
                    return
        finally:
            self._release(conn)
            conn.close()
            self._fail_queued()  # nothing waits forever on a store whose thread has ended (a read behind the stop)

    def _sweep_once(self, conn: Any) -> int:
        # a failed store answers reads only: it writes nothing, not even a recovery
        if self._error is not None or self._owner is None:
            return 0
        return recover(conn, self._owner, now_ms())

    def _store_error(self, what: str, exc: BaseException) -> StoreError:
        message = redact(str(exc).strip(), self._url) or type(exc).__name__
        return StoreError(f"{what} ({self.path}): {message}")

    def _beat(self, conn: Any) -> None:
        import psycopg

        if self._error is not None or self._owner is None:
            return
        try:
            alive = renew(conn, self._owner, self._lease_ms)
        except psycopg.Error as exc:
            self._fail(exc)
            return
        if not alive:
            self._fail(LeaseLost("this store's lease expired and another worker recovered its calls"))

    def _release(self, conn: Any) -> None:
        import psycopg

        if self._owner is None:
            return
        try:
            # claims go with the owner row (ON DELETE CASCADE); the advisory lock goes with the connection
            conn.execute("DELETE FROM owners WHERE id = %s", (self._owner,))
        except psycopg.Error as exc:
            log.warning("session store could not release its owner row: %s", redact(str(exc), self._url))

    def _transaction(self, conn: Any, body: Callable[[], None]) -> None:
        """Run ``body`` in one transaction that takes :data:`EVENTS_LOCK`, then renews this store's lease (the write
        fence)."""
        assert self._owner is not None
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (EVENTS_LOCK,))
            if not renew(conn, self._owner, self._lease_ms):
                raise LeaseLost("this store's lease expired and another worker recovered its calls")
            body()

    def _apply(self, conn: Any, batch: list[DurableEvent | Call | Stop]) -> bool:
        """Write one batch in one transaction and answer its reads; false when the batch asked the thread to stop.

        As ``SQLiteStore._apply``: a failed batch is rolled back and written again event by event up to the one that
        fails, which becomes the store's error; reads are still answered (outside a transaction) after that.
        """
        keep_going = not any(isinstance(item, Stop) for item in batch)
        reads_only = all(
            isinstance(item, _Read | Stop) or (isinstance(item, Call) and item.fn is nothing)
            for item in batch
        )
        if self._error is None and not reads_only:
            assert self._owner is not None
            inputs = dict(self._inputs)
            writes = PgWrites(self._owner, self._inputs)
            done: list[tuple[Call, Any, Exception | None]] = []

            def body() -> None:
                now = now_ms()
                for item in batch:
                    if isinstance(item, Call):
                        writes.execute(conn)  # a read sees every write queued before it
                        if item.fn is nothing:
                            done.append((item, None, None))
                            continue
                        try:
                            with (
                                conn.transaction()
                            ):  # a savepoint: a failed read leaves the batch's writes alone
                                done.append((item, item.fn(conn), None))
                        except Exception as exc:
                            done.append((item, None, exc))
                    elif not isinstance(item, Stop):
                        writes.add(item, now)
                writes.execute(conn)

            try:
                self._transaction(conn, body)
            except Exception as exc:  # becomes the store's failure, never the thread's death
                self._inputs = inputs
                done.clear()
                try:
                    # A lost lease or a broken connection: no event can be written, report what happened.
                    retry = not isinstance(exc, LeaseLost) and not conn.broken
                    failure = self._write_prefix(conn, batch) if retry else exc
                except Exception as again:
                    failure = again
                if failure is not None:
                    self._fail(failure)
            else:
                for call, result, error in done:
                    self._resolve(call, result, error)
                return keep_going
        # Reads only (everything queued before is committed), or the store has failed: answered outside a
        # transaction.
        for item in batch:
            if isinstance(item, Call):
                try:
                    result = item.fn(conn)
                except Exception as exc:
                    self._resolve(item, None, exc)
                else:
                    self._resolve(item, result, None)
        return keep_going

    def _write_prefix(self, conn: Any, batch: list[DurableEvent | Call | Stop]) -> Exception | None:
        """Write the batch's events one by one up to the first that fails; return that failure (``None``: none)."""
        assert self._owner is not None
        owner = self._owner
        failure: list[Exception] = []

        def body() -> None:
            now = now_ms()
            for item in batch:
                if isinstance(item, Call | Stop):
                    continue
                try:
                    with conn.transaction():
                        writes = PgWrites(owner, self._inputs)
                        writes.add(item, now)
                        writes.execute(conn)
                except Exception as exc:
                    failure.append(exc)
                    break

        self._transaction(conn, body)
        return failure[0] if failure else None

    def _resolve(self, call: Call, result: Any, error: Exception | None) -> None:
        import psycopg

        if error is None:
            call.future.set_result(result)
        elif isinstance(error, psycopg.Error):
            call.future.set_exception(self._store_error("Session store read failed", error))
        else:
            call.future.set_exception(error)

    def _fail(self, exc: BaseException) -> None:
        log.debug("session store write failed: %s", redact(str(exc), self._url))
        if self._error is None:
            self._error = self._store_error("Session store write failed", exc)

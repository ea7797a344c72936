"""Saved approvals: the ``always`` replies, persisted per project in SQLite.

They live in the project's store file, in their own table ``permission_saved(id, project, action, resource)`` with
one row per resource and uniqueness on ``(project, action, resource)``. The table is created with
``CREATE TABLE IF NOT EXISTS`` so that sharing the file with the session store needs no joint migrations. Every
SQLite call runs in a worker thread (law 9) over one connection guarded by a lock.

Saved approvals are allow rules only; they never override a configured deny (see ``evaluate_request``).

Elsewhere than a SQLite file, they live in a database the store room provides (:class:`ApprovalsDatabase`: the
PostgreSQL store's, ``tether.store.PgSavedApprovals``): the statements stay these, over a connection shaped like
``sqlite3``'s. This package never imports the store (it stands below it).

The project and the resource are kept exactly (``tether.storable.column_text``): a project directory or a file whose
name is not UTF-8 (a lone surrogate from ``os.fsdecode``) is saved and found like any other, never a failed statement.
"""

from __future__ import annotations

import builtins
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio.to_thread

from .._record import record
from ..errors import NotFoundError, StoreError
from ..ids import ascending
from ..storable import column_text, column_value
from ._ruleset import Ruleset
from ._types import Rule

__all__ = ["SAVED_SOURCE", "ApprovalsConnection", "ApprovalsDatabase", "SavedApproval", "SavedApprovals"]

SAVED_SOURCE = "saved"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS permission_saved (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    action TEXT NOT NULL,
    resource TEXT NOT NULL,
    UNIQUE (project, action, resource)
)
"""

T = TypeVar("T")


@record
class SavedApproval:
    """One saved approval: ``action`` on ``resource`` (a wildcard pattern) is allowed in ``project``."""

    id: str
    project: str
    action: str
    resource: str

    @property
    def rule(self) -> Rule:
        return Rule(self.action, self.resource, "allow")


class ApprovalsConnection(Protocol):
    """What saved approvals use of a connection (a ``sqlite3.Connection`` is one): ``execute`` with ``?``
    placeholders (``INSERT OR IGNORE`` included), ``with conn:`` as one transaction, ``close``."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, kind: Any, error: Any, traceback: Any, /) -> Any: ...

    def close(self) -> None: ...


class ApprovalsDatabase(Protocol):
    """A database that keeps saved approvals, other than a SQLite file (the store room implements it)."""

    @property
    def name(self) -> str:
        """How errors name the database (never with a password)."""
        ...

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        """The exceptions a failed connection or statement raises (they become ``StoreError``)."""
        ...

    def redact(self, text: str) -> str:
        """``text`` (an error's) without the secrets of the connection."""
        ...

    def connect(self) -> ApprovalsConnection:
        """A new connection, with the ``permission_saved`` table in place."""
        ...


class _SQLiteFile:
    """The default :class:`ApprovalsDatabase`: one SQLite file (WAL), the table created if missing."""

    __slots__ = ("name",)

    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, path: str) -> None:
        self.name = path

    def redact(self, text: str) -> str:
        return text

    def connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.name, check_same_thread=False, timeout=5.0)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            with conn:
                conn.execute(_SCHEMA)
        except sqlite3.Error:
            conn.close()
            raise
        return conn


class SavedApprovals:
    """The saved approvals in one SQLite file (``":memory:"`` works for tests) or in an :class:`ApprovalsDatabase`.

    The file survives restarts; :meth:`list`, :meth:`add` and :meth:`remove` manage it. Use it as an async context
    manager, or call :meth:`close`.
    """

    def __init__(self, path: Path | str | ApprovalsDatabase, *, refresh: float = 1.0) -> None:
        self._database: ApprovalsDatabase = _SQLiteFile(str(path)) if isinstance(path, Path | str) else path
        self._path = self._database.name
        self._lock = threading.Lock()
        self._conn: ApprovalsConnection | None = None
        self._closed = False
        self._rulesets: dict[str, Ruleset] = {}
        # project -> (ruleset, monotonic time read). Our own add/remove clear it; changes made by another process
        # are seen within ``refresh`` seconds. Without it every permission check paid a database read and a
        # worker-thread hop (two per tool call), which dominated bursts of parallel calls.
        self._refresh = refresh
        self._fresh: dict[str, tuple[Ruleset, float]] = {}
        self._changes = 0
        # project -> the read in flight: the checks that arrive meanwhile (a parallel step's calls all check at once)
        # wait for it instead of each starting its own read.
        self._reading: dict[str, anyio.Event] = {}

    @property
    def path(self) -> str:
        return self._path

    def _connect(self) -> ApprovalsConnection:
        if self._conn is None:
            if self._closed:
                raise StoreError("Saved approvals are closed")
            self._conn = self._database.connect()
        return self._conn

    async def _run(self, work: Callable[[ApprovalsConnection], T]) -> T:
        def call() -> T:
            with self._lock:
                try:
                    return work(self._connect())
                except self._database.errors as exc:
                    # from None: the chained exception could show the connection's secrets
                    raise StoreError(
                        f"Saved approvals ({self._path}): {self._database.redact(str(exc))}"
                    ) from None

        return await anyio.to_thread.run_sync(call)

    async def _changing(self, work: Callable[[ApprovalsConnection], T]) -> T:
        # Invalidate before and after the write, so that no read racing with it caches the old rows.
        self._changes += 1
        self._fresh.clear()
        try:
            return await self._run(work)
        finally:
            self._changes += 1
            self._fresh.clear()

    async def list(self, project: str | None = None) -> builtins.list[SavedApproval]:
        """Return the saved approvals, oldest first, of one project or of all projects.

        Raises:
            StoreError: the database cannot be read.
        """

        def read(conn: ApprovalsConnection) -> builtins.list[SavedApproval]:
            if project is None:
                rows = conn.execute("SELECT id, project, action, resource FROM permission_saved ORDER BY id")
            else:
                rows = conn.execute(
                    "SELECT id, project, action, resource FROM permission_saved WHERE project = ? ORDER BY id",
                    (column_text(project),),
                )
            return [
                SavedApproval(id=r[0], project=column_value(r[1]), action=r[2], resource=column_value(r[3]))
                for r in rows
            ]

        return await self._run(read)

    async def add(self, project: str, action: str, resources: Sequence[str]) -> builtins.list[SavedApproval]:
        """Save ``action`` on each of ``resources`` for ``project``; existing approvals are left alone.

        Returns:
            The approvals that were newly saved (empty when all existed already, or ``resources`` is empty).

        Raises:
            StoreError: the database cannot be written.
        """
        rows = [
            SavedApproval(id=ascending("sav"), project=project, action=action, resource=resource)
            for resource in dict.fromkeys(resources)
        ]

        def write(conn: ApprovalsConnection) -> builtins.list[SavedApproval]:
            added: builtins.list[SavedApproval] = []
            with conn:
                for row in rows:
                    cursor = conn.execute(
                        "INSERT OR IGNORE INTO permission_saved (id, project, action, resource) VALUES (?, ?, ?, ?)",
                        (row.id, column_text(row.project), row.action, column_text(row.resource)),
                    )
                    if cursor.rowcount:
                        added.append(row)
            return added

        return await self._changing(write) if rows else []

    async def remove(self, approval_id: str) -> None:
        """Remove one saved approval by id.

        Raises:
            NotFoundError: no saved approval has this id.
            StoreError: the database cannot be written.
        """

        def delete(conn: ApprovalsConnection) -> int:
            with conn:
                return conn.execute("DELETE FROM permission_saved WHERE id = ?", (approval_id,)).rowcount

        if not await self._changing(delete):
            raise NotFoundError(f"No saved approval with id {approval_id}")

    def fresh(self, project: str) -> Ruleset | None:
        """:meth:`rules` when it would answer without reading (read less than ``refresh`` seconds ago), else ``None``.

        The permission service asks this first: a tool call's two checks then wait on nothing.
        """
        fresh = self._fresh.get(project)
        if fresh is not None and time.monotonic() - fresh[1] < self._refresh:
            return fresh[0]
        return None

    async def rules(self, project: str) -> Ruleset:
        """The project's saved approvals as allow rules (source ``"saved"``), oldest first.

        This process's own :meth:`add`/:meth:`remove` are seen at once; changes made by another process are seen
        within ``refresh`` seconds (the rows are re-read at most that often). The compiled ruleset is reused while
        the rows are unchanged.

        Raises:
            StoreError: the database cannot be read.
        """

        def read(conn: ApprovalsConnection) -> tuple[Rule, ...]:
            rows = conn.execute(
                "SELECT action, resource FROM permission_saved WHERE project = ? ORDER BY id",
                (column_text(project),),
            )
            return tuple(Rule(action, column_value(resource), "allow") for action, resource in rows)

        fresh = self._fresh.get(project)
        if fresh is not None and time.monotonic() - fresh[1] < self._refresh:
            return fresh[0]
        reading = self._reading.get(project)
        if reading is not None:
            await reading.wait()
            fresh = self._fresh.get(project)
            if fresh is not None:
                return fresh[0]  # else an add/remove raced with that read: read again below
        changes = self._changes
        done = self._reading[project] = anyio.Event()
        try:
            rules = await self._run(read)
            cached = self._rulesets.get(project)
            if cached is None or cached.rules != rules:
                cached = self._rulesets[project] = Ruleset(source=SAVED_SOURCE, rules=rules)
            if changes == self._changes:  # no add/remove raced with this read
                self._fresh[project] = (cached, time.monotonic())
            return cached
        finally:
            if self._reading.get(project) is done:
                del self._reading[project]
            done.set()

    async def close(self) -> None:
        """Close the database connection; later calls fail with ``StoreError``."""

        def shut() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await anyio.to_thread.run_sync(shut)

    async def __aenter__(self) -> SavedApprovals:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

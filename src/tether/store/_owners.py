"""Store ownership: which open store (in which process) is responsible for an unfinished tool part or message.

Several processes may share one ``tether.db`` (``tether run`` in one terminal, ``tether sessions`` or a second run in
another). Recovery must interrupt only the calls whose process is gone, never a live neighbour's. So every open
:class:`~tether.store.SQLiteStore` registers an **owner** row (``owners`` table): a random id, the host name, the
pid, the process identity (Linux: ``<boot id>:<start time in clock ticks>`` from ``/proc``, which tells a reused pid
from the original process) and a heartbeat the writer thread refreshes every :data:`HEARTBEAT_SECONDS`. Every part
and message row the store writes carries its owner id; a clean close deletes the owner row.

An owner is **gone** when its row is missing (closed cleanly, or rows written before owners existed), or its pid
no longer runs (or is a zombie), or that pid now belongs to another process (a different start time or boot). Where
the pid cannot be checked (another host sharing the file, a platform without ``/proc``) the heartbeat decides:
an owner silent for :data:`STALE_SECONDS` is gone.

This module holds the pure parts (identity, the liveness verdict) and the owners' listing
(:func:`owner_statuses`, ``tether sessions --owners``); ``_sqlite`` runs them in its writer thread.
"""

from __future__ import annotations

import os
import secrets
import socket
import sqlite3
import sys

from .._record import record

__all__ = [
    "HEARTBEAT_SECONDS",
    "STALE_SECONDS",
    "SWEEP_SECONDS",
    "Owner",
    "OwnerRow",
    "OwnerStatus",
    "current_owner",
    "owner_alive",
    "owner_statuses",
    "process_identity",
]

HEARTBEAT_SECONDS = 15.0
"""How often an open store refreshes its owner row's heartbeat."""

STALE_SECONDS = 60.0
"""An owner whose pid cannot be checked is gone after this long without a heartbeat."""

SWEEP_SECONDS = 30.0
"""How often an open store recovers the work of owners that are gone (besides when it opens): a worker that dies
leaves its calls ``running`` for at most this long (plus its lease, where the pid cannot be checked), even when no
process opens the store meanwhile."""


@record
class OwnerRow:
    """One row of the ``owners`` table."""

    id: str
    host: str
    pid: int
    identity: str
    heartbeat: int


@record
class Owner:
    """This store's owner record (one per open store)."""

    id: str
    host: str
    pid: int
    identity: str


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


_BOOT_ID = _boot_id()


def _stat(pid: int) -> tuple[str, str] | None:
    """``(state, starttime)`` of ``pid`` from ``/proc/<pid>/stat``, or ``None`` when unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name (field 2) is parenthesized and may contain spaces or parentheses: split after the last ")".
    fields = raw[raw.rfind(b")") + 2 :].split()
    if len(fields) < 20:
        return None
    return fields[0].decode("ascii", "replace"), fields[19].decode("ascii", "replace")


def process_identity(pid: int) -> str:
    """A string that names one process for its whole life (``""`` where it cannot be known).

    On Linux: the boot id and the process start time, so a pid reused after the process died (or after a reboot)
    gives a different identity.
    """
    if not _BOOT_ID:
        return ""
    stat = _stat(pid)
    return "" if stat is None else f"{_BOOT_ID}:{stat[1]}"


def current_owner() -> Owner:
    """A new owner record for a store opened by this process."""
    pid = os.getpid()
    return Owner(
        id=f"own_{secrets.token_hex(8)}", host=socket.gethostname(), pid=pid, identity=process_identity(pid)
    )


def _pid_runs(pid: int) -> bool | None:
    """Whether ``pid`` names a running (not zombie) process; ``None`` when this platform cannot tell."""
    if sys.platform == "win32":  # os.kill(pid, 0) would terminate the process there
        return None
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, owned by another user
    except OSError:
        return None
    stat = _stat(pid)
    if stat is not None and stat[0] in ("Z", "X"):
        return False
    return True


def owner_alive(row: OwnerRow, me: Owner, now_ms: int) -> bool:
    """Whether the store that wrote ``row`` may still be writing (see the module docstring)."""
    if row.id == me.id:
        return True
    fresh = now_ms - row.heartbeat < STALE_SECONDS * 1000
    if row.host != me.host:
        return fresh
    if row.pid == me.pid and row.identity == me.identity:
        return True  # another store open in this process (its row is deleted when it closes)
    runs = _pid_runs(row.pid)
    if runs is None:
        return fresh
    if not runs:
        return False
    if row.identity and me.identity:
        return process_identity(row.pid) == row.identity
    return fresh


@record
class OwnerStatus:
    """One open store (an owner) of a session store, as ``tether sessions --owners`` shows it.

    ``live`` is the verdict recovery acts on: a store that is not live has its unfinished work interrupted by the next
    sweep. ``lease_until`` (the server's clock) and ``locked`` (its advisory lock is held, so its connection lives)
    are PostgreSQL's; a SQLite owner is judged by its pid and heartbeat instead.
    """

    id: str
    host: str
    pid: int
    opened: int
    heartbeat: int
    live: bool
    this: bool = False
    lease_until: int | None = None
    locked: bool | None = None
    claims: tuple[str, ...] = ()
    unfinished: int = 0
    """Tool parts this owner wrote that are still ``pending`` or ``running``."""


def owner_statuses(conn: sqlite3.Connection, me: Owner, now: int) -> list[OwnerStatus]:
    """Every owner row of a SQLite store with its verdict, claims and unfinished calls, oldest first."""
    claims: dict[str, list[str]] = {}
    for session_id, owner in conn.execute("SELECT session_id, owner FROM claims ORDER BY session_id"):
        claims.setdefault(owner, []).append(session_id)
    unfinished = dict(
        conn.execute(
            "SELECT owner, count(*) FROM parts WHERE state IN ('pending', 'running') GROUP BY owner"
        ).fetchall()
    )
    found: list[OwnerStatus] = []
    for oid, host, pid, identity, opened, heartbeat in conn.execute(
        "SELECT id, host, pid, identity, opened, heartbeat FROM owners ORDER BY opened, id"
    ):
        row = OwnerRow(id=oid, host=host, pid=pid, identity=identity, heartbeat=heartbeat)
        found.append(
            OwnerStatus(
                id=oid,
                host=host,
                pid=pid,
                opened=opened,
                heartbeat=heartbeat,
                live=owner_alive(row, me, now),
                this=oid == me.id,
                claims=tuple(claims.get(oid, ())),
                unfinished=int(unfinished.get(oid, 0)),
            )
        )
    return found

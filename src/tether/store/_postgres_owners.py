"""Ownership across hosts in the PostgreSQL store: owner leases, claims, recovery.

Workers on many hosts share one database, so a process id says nothing. Each open :class:`PostgresStore` registers
an **owner** row with a **lease** (``lease_until``, milliseconds on the *server's* clock, so hosts' clocks never
matter) and holds a session-level **advisory lock** on the row's ``lock_key`` for as long as its connection lives.

An owner is **live** while both hold: its lease has not expired and its advisory lock is held (``pg_locks``). So an
owner is gone when its process dies (the server drops the connection and its lock at once: a SIGKILLed worker's
calls are recoverable immediately) or when it stops renewing (a hung or partitioned host: after the lease).

- **Renewal is the write fence.** Every write transaction of the store starts by renewing its own lease
  (``UPDATE owners ... WHERE id = me``). When that finds no row, another worker judged this one gone and recovered
  its calls: the batch is refused and the store fails with a ``StoreError`` (nothing runs unrecorded, law 12), so a
  worker that was paused past its lease never writes over the recovery. An idle store renews every ``lease / 3``.
- **Recovery** deletes the gone owners (their claims go with them: ``ON DELETE CASCADE``) and interrupts the
  unfinished parts and messages of every owner that has no row, under a transaction advisory lock so two recovering
  workers never both rewrite a call.
- **Claims** (one session, one writer): one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` statement takes a
  session unless a live owner holds it. The conflicting row is locked by the statement, so two workers racing for
  one session are serialized by PostgreSQL and exactly one wins.
"""

from __future__ import annotations

import json
import logging
import secrets
from dataclasses import replace
from typing import Any

from ..records import AssistantInfo, MessageError, MessageUpdated, PartUpdated, ToolPart
from ..records.internal import message_from_json, part_from_json
from ._interface import INTERRUPTED_ERROR
from ._owners import OwnerStatus
from ._postgres_rows import PgWrites, pg_text, py_text

__all__ = [
    "DEFAULT_LEASE",
    "LIVE",
    "LOCKED",
    "NOW",
    "RECOVER_LOCK",
    "claim",
    "new_lock_key",
    "owner_statuses",
    "recover",
    "register",
    "renew",
]

log = logging.getLogger("tether.store")

DEFAULT_LEASE = 30.0
"""Seconds an owner stays live without renewing (its store renews every third of it)."""

RECOVER_LOCK = 0x7465_7468_6572_0003

NOW = "(extract(epoch from clock_timestamp()) * 1000)::bigint"
"""The server's clock in milliseconds: leases are judged on one clock whatever the hosts' clocks say."""

LOCKED = (
    "EXISTS (SELECT 1 FROM pg_locks AS l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.classid::bigint * 4294967296 + l.objid::bigint = o.lock_key)"
)
"""SQL: the owner row ``o``'s advisory lock is held (the connection of its store lives)."""

LIVE = f"(o.lease_until > {NOW} AND {LOCKED})"
"""SQL: the owner row ``o`` is live (lease unexpired and its advisory lock held)."""


def new_lock_key() -> int:
    """A random advisory-lock key (positive 62-bit: split as ``classid``/``objid`` in ``pg_locks``)."""
    return secrets.randbits(62) or 1


def register(conn: Any, owner_id: str, host: str, pid: int, lock_key: int, lease_ms: int) -> None:
    """Take the owner's advisory lock (for the connection's life), then insert its row."""
    conn.execute("SELECT pg_advisory_lock(%s)", (lock_key,))
    conn.execute(
        "INSERT INTO owners (id, host, pid, lock_key, opened, heartbeat, lease_until) "
        f"VALUES (%s, %s, %s, %s, {NOW}, {NOW}, {NOW} + %s)",
        (owner_id, pg_text(host), pid, lock_key, lease_ms),
    )


def renew(conn: Any, owner_id: str, lease_ms: int) -> bool:
    """Extend this owner's lease; false when its row is gone (another worker recovered it: the store must stop)."""
    cursor = conn.execute(
        f"UPDATE owners SET heartbeat = {NOW}, lease_until = {NOW} + %s WHERE id = %s", (lease_ms, owner_id)
    )
    return cursor.rowcount == 1


def claim(conn: Any, owner_id: str, session_id: str) -> tuple[str, int] | None:
    """Take ``session_id`` for ``owner_id`` unless a live owner holds it; return that holder's ``(host, pid)``."""
    key = pg_text(session_id)
    taken = conn.execute(
        f"INSERT INTO claims (session_id, owner, claimed) VALUES (%s, %s, {NOW}) "
        "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, claimed = excluded.claimed "
        f"WHERE claims.owner = excluded.owner OR NOT EXISTS (SELECT 1 FROM owners AS o WHERE o.id = claims.owner "
        f"AND {LIVE}) RETURNING owner",
        (key, owner_id),
    ).fetchone()
    if taken is not None:
        return None
    row = conn.execute(
        "SELECT o.host, o.pid FROM claims AS c JOIN owners AS o ON o.id = c.owner WHERE c.session_id = %s",
        (key,),
    ).fetchone()
    return ("?", 0) if row is None else (py_text(row[0]), int(row[1]))


def recover(conn: Any, me: str, now: int) -> int:
    """Forget gone owners, then interrupt the unfinished work of every owner without a row; return the part count.

    Runs inside the caller's transaction (the writer's), after :func:`renew`.
    """
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (RECOVER_LOCK,))
    conn.execute(f"DELETE FROM owners AS o WHERE o.id <> %s AND NOT {LIVE}", (me,))
    count = 0
    rows = conn.execute(
        "SELECT p.session_id, p.message_id, p.data FROM parts AS p WHERE p.state IN ('pending', 'running') "
        "AND (p.owner IS NULL OR NOT EXISTS (SELECT 1 FROM owners AS o WHERE o.id = p.owner)) "
        "FOR UPDATE OF p"
    ).fetchall()
    writes = PgWrites(me, {})
    for session_id, message_id, data in rows:
        # A large input stays in ``inputs`` (the part's data omits it): reads join it back.
        part = part_from_json(py_text(session_id), py_text(message_id), json.loads(data))
        assert isinstance(part, ToolPart)
        fixed = replace(
            part,
            state="error",
            error=INTERRUPTED_ERROR,
            error_kind="interrupted",
            interrupted=True,
            started=part.started,  # None: the call never started (a durable turn may still run it)
            ended=now,
        )
        writes.add(PartUpdated(fixed), now)
        count += 1
    for session_id, data in conn.execute(
        "SELECT m.session_id, m.data FROM messages AS m WHERE m.role = 'assistant' AND m.completed IS NULL "
        "AND (m.owner IS NULL OR NOT EXISTS (SELECT 1 FROM owners AS o WHERE o.id = m.owner)) FOR UPDATE OF m"
    ).fetchall():
        info = message_from_json(py_text(session_id), json.loads(data))
        assert isinstance(info, AssistantInfo)
        error = info.error or MessageError(
            kind="interrupted", message="The step was interrupted (process exited)"
        )
        writes.add(MessageUpdated(replace(info, completed=now, error=error)), now)
    writes.execute(conn)
    if count:
        log.warning("recovered %d interrupted tool call(s) of closed, exited or expired stores", count)
    return count


def owner_statuses(conn: Any, me: str) -> list[OwnerStatus]:
    """Every owner row with its lease, its advisory lock, its verdict, claims and unfinished calls, oldest first."""
    claims: dict[str, list[str]] = {}
    for session_id, owner in conn.execute(
        "SELECT session_id, owner FROM claims ORDER BY session_id"
    ).fetchall():
        claims.setdefault(py_text(owner), []).append(py_text(session_id))
    unfinished = {
        py_text(owner): int(n)
        for owner, n in conn.execute(
            "SELECT owner, count(*) FROM parts WHERE state IN ('pending', 'running') AND owner IS NOT NULL "
            "GROUP BY owner"
        ).fetchall()
    }
    found: list[OwnerStatus] = []
    for oid, host, pid, opened, heartbeat, lease_until, live, holds in conn.execute(
        f"SELECT o.id, o.host, o.pid, o.opened, o.heartbeat, o.lease_until, {LIVE}, {LOCKED} FROM owners AS o "
        "ORDER BY o.opened, o.id"
    ).fetchall():
        oid = py_text(oid)
        found.append(
            OwnerStatus(
                id=oid,
                host=py_text(host),
                pid=int(pid),
                opened=int(opened),
                heartbeat=int(heartbeat),
                live=bool(live),
                this=oid == me,
                lease_until=int(lease_until),
                locked=bool(holds),
                claims=tuple(claims.get(oid, ())),
                unfinished=unfinished.get(oid, 0),
            )
        )
    return found

"""The SQLite store's owner rows at work: one writer per session (``claims``) and the recovery of gone owners' calls.

Judged by :func:`~tether.store._owners.owner_alive` (pid, process identity, heartbeat). Recovery interrupts only the
unfinished work of owners that are gone (law 7), through the same row writes as any event (:func:`_rows.write_event`).
Every function runs inside the writer thread's transaction.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import replace

from ..records import (
    AssistantInfo,
    MessageError,
    MessageUpdated,
    PartUpdated,
    ToolPart,
)
from ..records.internal import (
    message_from_json,
    now_ms,
    part_from_json,
)
from ._interface import INTERRUPTED_ERROR
from ._owners import (
    Owner,
    OwnerRow,
    owner_alive,
)
from ._rows import write_event

__all__ = ["claim_session", "owner_row", "recover_gone"]

log = logging.getLogger("tether.store")


def claim_session(conn: sqlite3.Connection, me: Owner, session_id: str | bytes) -> OwnerRow | None:
    """Take the claim on ``session_id`` unless a live owner holds it; return that holder when one does."""
    row = conn.execute(
        "SELECT o.id, o.host, o.pid, o.identity, o.heartbeat FROM claims AS c JOIN owners AS o ON o.id = c.owner "
        "WHERE c.session_id = ?",
        (session_id,),
    ).fetchone()
    if row is not None and row["id"] != me.id:
        holder = owner_row(row)
        if owner_alive(holder, me, now_ms()):
            return holder
    now = now_ms()
    conn.execute(
        "INSERT INTO claims (session_id, owner, claimed) VALUES (?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, claimed = excluded.claimed",
        (session_id, me.id, now),
    )
    return None


def owner_row(row: sqlite3.Row) -> OwnerRow:
    return OwnerRow(
        id=row["id"], host=row["host"], pid=row["pid"], identity=row["identity"], heartbeat=row["heartbeat"]
    )


def _forget_gone_owners(conn: sqlite3.Connection, me: Owner, now: int) -> None:
    """Delete the rows of registered owners that are gone (their unfinished work becomes recoverable)."""
    gone: set[str] = set()
    for row in conn.execute("SELECT id, host, pid, identity, heartbeat FROM owners").fetchall():
        if not owner_alive(owner_row(row), me, now):
            gone.add(row["id"])
    if gone:
        conn.executemany("DELETE FROM owners WHERE id = ?", [(oid,) for oid in gone])


def recover_gone(conn: sqlite3.Connection, me: Owner) -> int:
    now = now_ms()
    _forget_gone_owners(conn, me, now)
    live = {oid for (oid,) in conn.execute("SELECT id FROM owners")}
    # An unfinished row is recovered when its owner is gone: unregistered (closed cleanly, or written before
    # owners existed) or found dead just now.
    count = 0
    for session_id, message_id, data, owner in conn.execute(
        "SELECT session_id, message_id, data, owner FROM parts WHERE state IN ('pending', 'running')"
    ).fetchall():
        if owner in live:
            continue
        part = part_from_json(session_id, message_id, json.loads(data))
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
        write_event(conn, PartUpdated(fixed), me.id, now)
        count += 1
    for session_id, data, owner in conn.execute(
        "SELECT session_id, data, owner FROM messages WHERE role = 'assistant' AND completed IS NULL"
    ).fetchall():
        if owner in live:
            continue
        info = message_from_json(session_id, json.loads(data))
        assert isinstance(info, AssistantInfo)
        error = info.error or MessageError(
            kind="interrupted", message="The step was interrupted (process exited)"
        )
        write_event(conn, MessageUpdated(replace(info, completed=now, error=error)), me.id, now)
    if count:
        log.warning("recovered %d interrupted tool call(s) of closed or exited stores", count)
    return count

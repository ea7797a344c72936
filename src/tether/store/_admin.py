"""Finding, reading and removing sessions in the SQLite store: id prefixes, the latest conversation, messages with
their parts (the whole session, or one message by key), delete, prune.

These run in the store's writer thread (``SQLiteStore._run``), inside the transaction of the batch they are queued
in, so a read sees every event appended before it and a delete commits with that batch. Each delete runs under its
own ``SAVEPOINT``: a failure half-way (a refusal, a SQLite error) rolls back every row it touched, while the batch's
other writes still commit.

**What a session owns**: its ``sessions`` row, its ``messages``, ``parts`` and ``inputs`` rows, its ``events`` and
its ``claims`` row, and every **child session** (``parent_id``: a subagent's session) with all of theirs. Deleting a
session deletes its children, recursively, as OpenCode's ``Session.remove`` does: a child is the record of work
done for its parent and has no meaning without it. Retained tool outputs are files (``<data>/tool-output/<id>/``);
the caller removes them after the rows are gone (:meth:`SQLiteStore.delete_session` returns the ids).

**A live session is never deleted**: one claimed by a live store (``tether run`` claims its session), or one with
an unfinished assistant message or tool part written by a live store (a turn running through the library API,
which does not claim). Liveness is :func:`~tether.store._owners.owner_alive`, the rule recovery uses.

**Kinds.** A session is a ``conversation`` (what ``tether run`` and the API create) or a ``tool-call`` (the session
``tether tool call`` records its one call in). ``tether run --continue`` picks the latest conversation.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Literal

from .._record import record
from ..errors import NotFoundError, UsageError
from ..records import MessageInfo, Part, SessionInfo
from ..records.internal import message_from_json, part_from_json
from ._interface import StoredMessage
from ._owners import Owner, OwnerRow, owner_alive

__all__ = [
    "AMBIGUOUS_SHOWN",
    "Deleted",
    "LiveSession",
    "SessionKind",
    "delete_tree",
    "find_prefix",
    "kinds",
    "latest",
    "load_messages",
    "prune",
    "refuse_empty",
    "resolve",
    "set_kind",
    "the_one",
]

SessionKind = Literal["conversation", "tool-call"]
"""What a session is for: ``conversation`` (a person's or a program's turns) or ``tool-call`` (``tether tool call``)."""

AMBIGUOUS_SHOWN = 5
"""How many candidates an ambiguous prefix's error names."""

FromRow = Callable[[sqlite3.Row], SessionInfo]


_PARTS = (
    "SELECT p.message_id, p.data, i.data FROM parts AS p LEFT JOIN inputs AS i "
    "ON i.session_id = p.session_id AND i.part_id = p.id WHERE p.session_id = ? ORDER BY p.id"
)
_MESSAGE_PARTS = (
    "SELECT p.message_id, p.data, i.data FROM parts AS p INDEXED BY parts_message LEFT JOIN inputs AS i "
    "ON i.session_id = p.session_id AND i.part_id = p.id WHERE p.session_id = ? AND p.message_id = ? ORDER BY p.id"
)
"""One message's parts, by ``parts_message`` (named: with no statistics, no ``ANALYZE``, SQLite's planner walks the
session's parts by the primary key instead, a cost that grows with the session, law 10)."""


def load_messages(conn: sqlite3.Connection, session_id: str, message_id: str | None) -> list[StoredMessage]:
    """The session's messages with their parts (inputs joined back), oldest first; only ``message_id`` if given."""
    if message_id is None:
        messages, parts_of = "SELECT data FROM messages WHERE session_id = ? ORDER BY id", _PARTS
        args: tuple[str, ...] = (session_id,)
    else:
        messages = "SELECT data FROM messages WHERE session_id = ? AND id = ?"
        parts_of, args = _MESSAGE_PARTS, (session_id, message_id)
    infos: list[MessageInfo] = [
        message_from_json(session_id, json.loads(data)) for (data,) in conn.execute(messages, args)
    ]
    if not infos:
        return []
    parts: dict[str, list[Part]] = {info.id: [] for info in infos}
    for part_message, data, stored_input in conn.execute(parts_of, args):
        bucket = parts.get(part_message)
        if bucket is not None:
            record = json.loads(data)
            if stored_input is not None:
                record["input"], record["raw"] = json.loads(stored_input)
            bucket.append(part_from_json(session_id, part_message, record))
    return [StoredMessage(info=info, parts=tuple(parts[info.id])) for info in infos]


@record
class LiveSession:
    """A session that a live store is running (refused by delete and prune)."""

    session_id: str
    holder: OwnerRow

    @property
    def message(self) -> str:
        holder = self.holder
        return (
            f"session {self.session_id} is in use by a running tether (pid {holder.pid} on {holder.host}); "
            "stop that process first"
        )


@record
class Deleted:
    """What one delete or prune removed (``sessions``: every session deleted, children included) or skipped."""

    sessions: tuple[SessionInfo, ...] = ()
    live: tuple[LiveSession, ...] = ()


def _upper(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (``None``: no such bound)."""
    for index in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[index]) + 1
        if code == 0xD800:
            code = 0xE000  # skip the surrogates: SQLite compares UTF-8 bytes, where they do not exist
        if code <= 0x10FFFF:
            return prefix[:index] + chr(code)
    return None


def find_prefix(
    conn: sqlite3.Connection, select: str, from_row: FromRow, prefix: str, limit: int
) -> list[SessionInfo]:
    """Sessions whose id starts with ``prefix``, in id order, at most ``limit``: one range scan of the primary key.

    A range (``id >= prefix AND id < next``) rather than ``LIKE``: it uses the index whatever the prefix holds
    (``%`` and ``_`` are plain characters here) and SQLite's ``LIKE`` is case-insensitive.
    """
    upper = _upper(prefix)
    if upper is None:
        rows = conn.execute(
            f"SELECT {select} FROM sessions WHERE id >= ? ORDER BY id LIMIT ?", (prefix, limit)
        )
    else:
        rows = conn.execute(
            f"SELECT {select} FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, upper, limit),
        )
    return [info for info in map(from_row, rows) if info.id.startswith(prefix)]


def resolve(conn: sqlite3.Connection, select: str, from_row: FromRow, given: str) -> SessionInfo:
    """The session named by ``given``: an exact id, else the one session whose id starts with it.

    Raises:
        UsageError: ``given`` is empty, or several sessions start with it (up to :data:`AMBIGUOUS_SHOWN` named).
        NotFoundError: no session has that id or prefix.
    """
    refuse_empty(given)
    try:
        given.encode("utf-8")
    except UnicodeEncodeError:  # not valid Unicode (undecodable argv bytes): no id tether makes looks like it
        raise NotFoundError(f"Session not found: {given!r}") from None
    exact = conn.execute(f"SELECT {select} FROM sessions WHERE id = ?", (given,)).fetchone()
    if exact is not None:
        return from_row(exact)
    return the_one(given, find_prefix(conn, select, from_row, given, AMBIGUOUS_SHOWN + 1))


def refuse_empty(given: str) -> None:
    """Raises :class:`UsageError` when ``given`` names no session at all (empty or blanks), in both stores' words."""
    if not given.strip():
        raise UsageError("a session id is empty: pass a session id (ses_...) or a unique prefix of one")


def the_one(given: str, found: Sequence[SessionInfo]) -> SessionInfo:
    """The one session of ``found`` (the first ``AMBIGUOUS_SHOWN + 1`` whose id starts with ``given``), in both
    stores' words.

    Raises:
        UsageError: several sessions start with ``given`` (up to :data:`AMBIGUOUS_SHOWN` named).
        NotFoundError: none does.
    """
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFoundError(
            f"Session not found: {given} (no session id starts with it; see `tether sessions`)"
        )
    names = ", ".join(info.id for info in found[:AMBIGUOUS_SHOWN])
    more = ", ..." if len(found) > AMBIGUOUS_SHOWN else ""
    raise UsageError(f"session id prefix {given} is ambiguous: {names}{more}; give more characters")


def latest(
    conn: sqlite3.Connection, select: str, from_row: FromRow, project: str | bytes, kind: SessionKind
) -> SessionInfo | None:
    """The most recently updated top-level session of ``kind`` in ``project`` (children are never continued)."""
    row = conn.execute(
        f"SELECT {select} FROM sessions WHERE project = ? AND kind = ? AND parent_id IS NULL "
        "ORDER BY updated DESC, id DESC LIMIT 1",
        (project, kind),
    ).fetchone()
    return None if row is None else from_row(row)


def set_kind(conn: sqlite3.Connection, session_id: str | bytes, kind: SessionKind) -> None:
    """Record what ``session_id`` is for.

    Raises:
        NotFoundError: no such session.
    """
    if conn.execute("UPDATE sessions SET kind = ? WHERE id = ?", (kind, session_id)).rowcount == 0:
        raise NotFoundError(f"Session not found: {session_id!r}")


def kinds(conn: sqlite3.Connection, ids: Sequence[str | bytes]) -> dict[str, SessionKind]:
    """The kind of each of ``ids`` that exists (an unknown stored kind reads as ``conversation``)."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    return {
        _id_text(sid): "tool-call" if kind == "tool-call" else "conversation"
        for sid, kind in conn.execute(f"SELECT id, kind FROM sessions WHERE id IN ({marks})", tuple(ids))
    }


def _tree(conn: sqlite3.Connection, root: str | bytes) -> list[str | bytes]:
    """``root`` and its descendants (``parent_id``), parents first."""
    return [
        row[0]
        for row in conn.execute(
            "WITH RECURSIVE tree(id, depth) AS (SELECT ?, 0 UNION "
            "SELECT s.id, t.depth + 1 FROM sessions AS s JOIN tree AS t ON s.parent_id = t.id) "
            "SELECT id FROM tree ORDER BY depth",
            (root,),
        )
    ]


def _live_holder(
    conn: sqlite3.Connection, me: Owner, ids: Sequence[str | bytes], now: int
) -> OwnerRow | None:
    """A live store that runs one of ``ids`` (claims it, or has unfinished work in it), else ``None``."""
    marks = ", ".join("?" * len(ids))
    rows = conn.execute(
        "SELECT o.id, o.host, o.pid, o.identity, o.heartbeat FROM owners AS o WHERE o.id IN ("
        f"SELECT owner FROM claims WHERE session_id IN ({marks}) UNION "
        f"SELECT owner FROM messages WHERE session_id IN ({marks}) AND role = 'assistant' AND completed IS NULL "
        f"UNION SELECT owner FROM parts WHERE session_id IN ({marks}) AND state IN ('pending', 'running'))",
        (*ids, *ids, *ids),
    ).fetchall()
    for row in rows:
        holder = OwnerRow(
            id=row["id"],
            host=row["host"],
            pid=row["pid"],
            identity=row["identity"],
            heartbeat=row["heartbeat"],
        )
        if owner_alive(holder, me, now):
            return holder
    return None


_OWNED = ("inputs", "parts", "messages", "events", "claims", "todos")
"""Every table with rows of a session besides ``sessions`` itself (all carry ``session_id``)."""


def delete_tree(
    conn: sqlite3.Connection, select: str, from_row: FromRow, me: Owner, root: str | bytes, now: int
) -> Deleted:
    """Delete ``root`` with its children and all their rows, atomically; a live one is refused, nothing deleted.

    Raises:
        NotFoundError: no session ``root``.
    """
    ids = _tree(conn, root)
    marks = ", ".join("?" * len(ids))
    infos = [
        from_row(row) for row in conn.execute(f"SELECT {select} FROM sessions WHERE id IN ({marks})", ids)
    ]
    if not infos:
        raise NotFoundError(f"Session not found: {root!r}")
    holder = _live_holder(conn, me, ids, now)
    if holder is not None:
        return Deleted(live=(LiveSession(session_id=_id_text(root), holder=holder),))
    conn.execute("SAVEPOINT delete_session")
    try:
        for table in _OWNED:
            conn.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})", ids)
        conn.execute(f"DELETE FROM sessions WHERE id IN ({marks})", ids)
    except BaseException:
        conn.execute("ROLLBACK TO delete_session")
        raise
    finally:
        conn.execute("RELEASE delete_session")
    order = {sid: index for index, sid in enumerate(ids)}
    infos.sort(key=lambda info: order.get(info.id, len(order)))
    return Deleted(sessions=tuple(infos))


def prune(
    conn: sqlite3.Connection,
    select: str,
    from_row: FromRow,
    me: Owner,
    *,
    before: int,
    dry_run: bool,
    now: int,
) -> Deleted:
    """Delete the top-level sessions (with their children) of which nothing was updated since ``before`` (ms).

    A tree of which one session was updated since is kept whole; a live one is skipped and reported. With
    ``dry_run`` nothing is deleted and the result names what would be.
    """
    roots = conn.execute(
        "SELECT id FROM sessions WHERE updated < ? AND (parent_id IS NULL OR parent_id NOT IN (SELECT id FROM "
        "sessions)) ORDER BY updated, id",
        (before,),
    ).fetchall()
    removed: list[SessionInfo] = []
    live: list[LiveSession] = []
    for (root,) in roots:
        ids = _tree(conn, root)
        marks = ", ".join("?" * len(ids))
        newest = conn.execute(f"SELECT max(updated) FROM sessions WHERE id IN ({marks})", ids).fetchone()[0]
        if newest is not None and newest >= before:
            continue
        if dry_run:
            holder = _live_holder(conn, me, ids, now)
            if holder is not None:
                live.append(LiveSession(session_id=_id_text(root), holder=holder))
                continue
            rows = conn.execute(f"SELECT {select} FROM sessions WHERE id IN ({marks})", ids)
            removed.extend(from_row(row) for row in rows)
            continue
        result = delete_tree(conn, select, from_row, me, root, now)
        removed.extend(result.sessions)
        live.extend(result.live)
    return Deleted(sessions=tuple(removed), live=tuple(live))


def _id_text(value: str | bytes) -> str:
    """A session id column's value as text (an id stored as bytes is read back losslessly)."""
    return value if isinstance(value, str) else value.decode("utf-8", "surrogatepass")

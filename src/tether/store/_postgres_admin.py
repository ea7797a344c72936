"""Reads and admin operations of the PostgreSQL store, as functions over the writer's connection.

The SQLite store's ``_admin`` and ``_todos`` with PostgreSQL statements: sessions by id, by prefix (an index range),
the latest conversation, children, messages with their parts (inputs joined back), the event log, todo lists, kinds,
and deleting a session with its children (refused while a live owner runs one). They run in the writer thread,
inside the transaction of the batch they were queued in, so they see every event appended before them. Text columns
are mapped with ``pg_text`` / ``py_text`` (``_postgres_rows``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..errors import NotFoundError
from ..records import MessageInfo, Part, SessionInfo
from ..records.internal import message_from_json, part_from_json, rules_from_json
from ..storable import visible
from ._admin import AMBIGUOUS_SHOWN, Deleted, LiveSession, SessionKind, refuse_empty, the_one
from ._interface import StoredMessage
from ._owners import OwnerRow
from ._postgres_owners import LIVE
from ._postgres_rows import pg_text, py_text
from ._rows import SESSION_COLUMNS
from ._todos import TODO_PRIORITIES, TODO_STATUSES, Todo, _known

__all__ = [
    "child_sessions",
    "delete_tree",
    "events",
    "events_after",
    "get_session",
    "kinds",
    "latest",
    "list_sessions",
    "load_messages",
    "project_events_after",
    "prune",
    "read_todos",
    "resolve",
    "write_todos",
]

_SELECT = ", ".join(SESSION_COLUMNS)


def _session(row: Sequence[Any]) -> SessionInfo:
    r = dict(zip(SESSION_COLUMNS, row, strict=True))
    return SessionInfo(
        id=py_text(r["id"]),
        project=py_text(r["project"]),
        directory=py_text(r["directory"]),
        title=py_text(r["title"]),
        agent=py_text(r["agent"]),
        parent_id=None if r["parent_id"] is None else py_text(r["parent_id"]),
        parent_call_id=None if r["parent_call_id"] is None else py_text(r["parent_call_id"]),
        rules=rules_from_json(json.loads(r["rules"])),
        created=r["created"],
        updated=r["updated"],
    )


def _sessions(conn: Any, where: str, args: Sequence[Any]) -> list[SessionInfo]:
    return [_session(row) for row in conn.execute(f"SELECT {_SELECT} FROM sessions {where}", args)]


def get_session(conn: Any, session_id: str) -> SessionInfo | None:
    found = _sessions(conn, "WHERE id = %s", (pg_text(session_id),))
    return found[0] if found else None


def list_sessions(conn: Any, project: str | None, limit: int) -> list[SessionInfo]:
    if project is None:
        return _sessions(conn, "ORDER BY updated DESC, id DESC LIMIT %s", (limit,))
    return _sessions(
        conn, "WHERE project = %s ORDER BY updated DESC, id DESC LIMIT %s", (pg_text(project), limit)
    )


def child_sessions(conn: Any, session_id: str) -> list[SessionInfo]:
    return _sessions(conn, "WHERE parent_id = %s ORDER BY created, id", (pg_text(session_id),))


def load_messages(conn: Any, session_id: str, message_id: str | None = None) -> list[StoredMessage]:
    """The session's messages with their parts (inputs joined back), oldest first; only ``message_id`` if given (by
    key and the ``parts_message`` index: law 10)."""
    one = "" if message_id is None else " AND id = %s"
    args = (pg_text(session_id),) if message_id is None else (pg_text(session_id), pg_text(message_id))
    infos: list[MessageInfo] = [
        message_from_json(session_id, json.loads(data))
        for (data,) in conn.execute(f"SELECT data FROM messages WHERE session_id = %s{one} ORDER BY id", args)
    ]
    if not infos:
        return []
    parts: dict[str, list[Part]] = {info.id: [] for info in infos}
    for message, data, stored_input in conn.execute(
        "SELECT p.message_id, p.data, i.data FROM parts AS p LEFT JOIN inputs AS i "
        f"ON i.session_id = p.session_id AND i.part_id = p.id WHERE p.session_id = %s{one and ' AND p.message_id = %s'} "
        "ORDER BY p.id",
        args,
    ):
        bucket = parts.get(py_text(message))
        if bucket is not None:
            record = json.loads(data)
            if stored_input is not None:
                record["input"], record["raw"] = json.loads(stored_input)
            bucket.append(part_from_json(session_id, py_text(message), record))
    return [StoredMessage(info=info, parts=tuple(parts[info.id])) for info in infos]


def events(conn: Any, session_id: str, after: int) -> list[tuple[int, str, dict[str, Any]]]:
    return [
        (seq, kind, json.loads(data))
        for seq, kind, data in conn.execute(
            "SELECT seq, type, data FROM events WHERE session_id = %s AND seq > %s ORDER BY seq",
            (pg_text(session_id), after),
        )
    ]


def events_after(
    conn: Any, after: int, session_id: str | None, limit: int
) -> list[tuple[int, str, str, str, str | None]]:
    select = (
        "SELECT e.seq, e.session_id, e.type, e.data, p.message_id FROM events AS e LEFT JOIN parts AS p "
        "ON e.type = 'message.part.updated' AND p.session_id = e.session_id AND p.id = e.ref "
    )
    if session_id is None:
        rows = conn.execute(f"{select}WHERE e.seq > %s ORDER BY e.seq LIMIT %s", (after, limit))
    else:
        rows = conn.execute(
            f"{select}WHERE e.session_id = %s AND e.seq > %s ORDER BY e.seq LIMIT %s",
            (pg_text(session_id), after, limit),
        )
    return [
        (seq, py_text(sid), kind, data, None if message is None else py_text(message))
        for seq, sid, kind, data, message in rows
    ]


def project_events_after(
    conn: Any, after: int, project: str, session_id: str | None, limit: int
) -> tuple[list[tuple[int, str, str, str, str | None]], int]:
    end = int(conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])
    select = (
        "SELECT e.seq, e.session_id, e.type, e.data, p.message_id FROM events AS e JOIN sessions AS s "
        "ON s.id = e.session_id LEFT JOIN parts AS p "
        "ON e.type = 'message.part.updated' AND p.session_id = e.session_id AND p.id = e.ref "
        "WHERE s.project = %s AND e.seq > %s AND e.seq <= %s "
    )
    if session_id is None:
        rows = conn.execute(f"{select}ORDER BY e.seq LIMIT %s", (pg_text(project), after, end, limit))
    else:
        rows = conn.execute(
            f"{select}AND e.session_id = %s ORDER BY e.seq LIMIT %s",
            (pg_text(project), after, end, pg_text(session_id), limit),
        )
    found = [
        (seq, py_text(sid), kind, data, None if message is None else py_text(message))
        for seq, sid, kind, data, message in rows
    ]
    return found, found[-1][0] if len(found) == limit else max(end, after)


def write_todos(conn: Any, session_id: str, todos: Sequence[Todo]) -> None:
    key = pg_text(session_id)
    conn.execute("DELETE FROM todos WHERE session_id = %s", (key,))
    if todos:
        conn.cursor().executemany(
            "INSERT INTO todos (session_id, position, id, content, status, priority) VALUES (%s, %s, %s, %s, %s, %s)",
            [
                (key, position, pg_text(visible(t.id)), pg_text(visible(t.content)), t.status, t.priority)
                for position, t in enumerate(todos)
            ],
        )


def read_todos(conn: Any, session_id: str) -> tuple[Todo, ...]:
    rows = conn.execute(
        "SELECT id, content, status, priority FROM todos WHERE session_id = %s ORDER BY position",
        (pg_text(session_id),),
    ).fetchall()
    return tuple(
        Todo(
            id=py_text(todo_id),
            content=py_text(content),
            status=_known(status, TODO_STATUSES, "pending"),
            priority=_known(priority, TODO_PRIORITIES, "medium"),
        )
        for todo_id, content, status, priority in rows
    )


def resolve(conn: Any, given: str) -> SessionInfo:
    """The session ``given`` names: an exact id, else the one whose id starts with it (see ``_admin.resolve``).

    Raises:
        UsageError: empty or ambiguous.
        NotFoundError: no such session.
    """
    refuse_empty(given)
    exact = get_session(conn, given)
    if exact is not None:
        return exact
    if pg_text(given) != given:  # not text PostgreSQL holds as is: no id tether makes looks like it
        raise NotFoundError(f"Session not found: {given!r}")
    # ``starts_with`` compares code points exactly (``LIKE`` would read ``%`` and ``_``); the primary key's b-tree
    # under the C collation would serve a range, but a database's collation is its owner's choice.
    found = _sessions(conn, "WHERE starts_with(id, %s) ORDER BY id LIMIT %s", (given, AMBIGUOUS_SHOWN + 1))
    return the_one(given, found)


def latest(conn: Any, project: str, kind: SessionKind) -> SessionInfo | None:
    found = _sessions(
        conn,
        "WHERE project = %s AND kind = %s AND parent_id IS NULL ORDER BY updated DESC, id DESC LIMIT 1",
        (pg_text(project), kind),
    )
    return found[0] if found else None


def set_kind(conn: Any, session_id: str, kind: SessionKind) -> None:
    """Raises: NotFoundError: no such session."""
    if conn.execute("UPDATE sessions SET kind = %s WHERE id = %s", (kind, pg_text(session_id))).rowcount == 0:
        raise NotFoundError(f"Session not found: {session_id!r}")


def kinds(conn: Any, ids: Sequence[str]) -> dict[str, SessionKind]:
    if not ids:
        return {}
    rows = conn.execute("SELECT id, kind FROM sessions WHERE id = ANY(%s)", ([pg_text(i) for i in ids],))
    return {py_text(sid): "tool-call" if kind == "tool-call" else "conversation" for sid, kind in rows}


def _tree(conn: Any, root: str) -> list[str]:
    """``root`` (stored text) and its descendants, parents first."""
    return [
        row[0]
        for row in conn.execute(
            "WITH RECURSIVE tree(id, depth) AS (SELECT %s::text, 0 UNION "
            "SELECT s.id, t.depth + 1 FROM sessions AS s JOIN tree AS t ON s.parent_id = t.id) "
            "SELECT id FROM tree ORDER BY depth",
            (root,),
        )
    ]


def _live_holder(conn: Any, ids: list[str]) -> OwnerRow | None:
    row = conn.execute(
        f"SELECT o.id, o.host, o.pid, o.heartbeat FROM owners AS o WHERE {LIVE} AND o.id IN ("
        "SELECT owner FROM claims WHERE session_id = ANY(%s) UNION "
        "SELECT owner FROM messages WHERE session_id = ANY(%s) AND role = 'assistant' AND completed IS NULL UNION "
        "SELECT owner FROM parts WHERE session_id = ANY(%s) AND state IN ('pending', 'running')) LIMIT 1",
        (ids, ids, ids),
    ).fetchone()
    if row is None:
        return None
    return OwnerRow(id=row[0], host=py_text(row[1]), pid=row[2], identity="", heartbeat=row[3])


_OWNED = ("inputs", "parts", "messages", "events", "claims", "todos")


def delete_tree(conn: Any, root: str) -> Deleted:
    """Delete ``root`` with its children and all their rows under one savepoint, unless a live owner runs one.

    Raises:
        NotFoundError: no such session.
    """
    ids = _tree(conn, pg_text(root))
    infos = _sessions(conn, "WHERE id = ANY(%s)", (ids,))
    if not infos:
        raise NotFoundError(f"Session not found: {root!r}")
    holder = _live_holder(conn, ids)
    if holder is not None:
        return Deleted(live=(LiveSession(session_id=root, holder=holder),))
    with conn.transaction():  # a savepoint inside the batch's transaction
        for table in _OWNED:
            conn.execute(f"DELETE FROM {table} WHERE session_id = ANY(%s)", (ids,))
        conn.execute("DELETE FROM sessions WHERE id = ANY(%s)", (ids,))
    order = {py_text(sid): index for index, sid in enumerate(ids)}
    infos.sort(key=lambda info: order.get(info.id, len(order)))
    return Deleted(sessions=tuple(infos))


def prune(conn: Any, *, before: int, dry_run: bool) -> Deleted:
    """Delete the session trees of which nothing was updated since ``before`` (see ``_admin.prune``)."""
    roots = conn.execute(
        "SELECT id FROM sessions WHERE updated < %s AND (parent_id IS NULL OR parent_id NOT IN (SELECT id FROM "
        "sessions)) ORDER BY updated, id",
        (before,),
    ).fetchall()
    removed: list[SessionInfo] = []
    live: list[LiveSession] = []
    for (root,) in roots:
        ids = _tree(conn, root)
        newest = conn.execute("SELECT max(updated) FROM sessions WHERE id = ANY(%s)", (ids,)).fetchone()[0]
        if newest is not None and newest >= before:
            continue
        if dry_run:
            holder = _live_holder(conn, ids)
            if holder is not None:
                live.append(LiveSession(session_id=py_text(root), holder=holder))
            else:
                removed.extend(_sessions(conn, "WHERE id = ANY(%s)", (ids,)))
            continue
        result = delete_tree(conn, py_text(root))
        removed.extend(result.sessions)
        live.extend(result.live)
    return Deleted(sessions=tuple(removed), live=tuple(live))

"""A session's todo list: the record, the store protocol, the bus event and its SQL (the ``todos`` table).

The list is written whole (``todowrite`` replaces it) and read whole, by the session's key only: one indexed range of
the ``todos`` table (migration 6), never a walk over the session's messages or events (law 10). The store writes it
in its writer thread like every other write (law 9); :class:`TodoUpdated` is the live bus event a UI reads (the
table is the durable record, so the event log does not carry it).

This module does not validate what a model sends: the ``todowrite`` tool does, at its boundary.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import ClassVar, Literal, Protocol, TypeVar, get_args

from .._record import record
from ..storable import visible

__all__ = [
    "TODO_PRIORITIES",
    "TODO_STATUSES",
    "Todo",
    "TodoPriority",
    "TodoStatus",
    "TodoStore",
    "TodoUpdated",
    "read_todos",
    "write_todos",
]

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]
TodoPriority = Literal["high", "medium", "low"]
TODO_STATUSES: tuple[TodoStatus, ...] = get_args(TodoStatus)
TODO_PRIORITIES: tuple[TodoPriority, ...] = get_args(TodoPriority)
_T = TypeVar("_T", bound=str)


@record
class Todo:
    """One item of a session's todo list (``id`` is unique within the list)."""

    id: str
    content: str
    status: TodoStatus
    priority: TodoPriority


@record
class TodoUpdated:
    """A session's todo list was replaced (bus only: the store's ``todos`` table is the durable list)."""

    type: ClassVar[str] = "todo.updated"
    session_id: str
    todos: tuple[Todo, ...]


class TodoStore(Protocol):
    """Where the todo lists live (``SQLiteStore`` implements it)."""

    async def save_todos(self, session_id: str, todos: Sequence[Todo]) -> None:
        """Replace the session's list with ``todos`` (in order).

        Raises:
            StoreError: the store failed or is closed.
        """
        ...

    async def load_todos(self, session_id: str) -> tuple[Todo, ...]:
        """The session's list, in order (empty when it has none)."""
        ...


def write_todos(conn: sqlite3.Connection, session_id: str | bytes, todos: Sequence[Todo]) -> None:
    """Replace the rows of ``session_id`` (inside the writer's transaction). Text is made storable (law 12)."""
    conn.execute("DELETE FROM todos WHERE session_id = ?", (session_id,))
    conn.executemany(
        "INSERT INTO todos (session_id, position, id, content, status, priority) "
        "VALUES (:session_id, :position, :id, :content, :status, :priority)",
        [
            {
                "session_id": session_id,
                "position": position,
                "id": visible(todo.id),
                "content": visible(todo.content),
                "status": todo.status,
                "priority": todo.priority,
            }
            for position, todo in enumerate(todos)
        ],
    )


def read_todos(conn: sqlite3.Connection, session_id: str | bytes) -> tuple[Todo, ...]:
    """The rows of ``session_id`` in order; a status or priority this version does not know reads as the default."""
    rows = conn.execute(
        "SELECT id, content, status, priority FROM todos WHERE session_id = ? ORDER BY position",
        (session_id,),
    ).fetchall()
    return tuple(
        Todo(
            id=row["id"],
            content=row["content"],
            status=_known(row["status"], TODO_STATUSES, "pending"),
            priority=_known(row["priority"], TODO_PRIORITIES, "medium"),
        )
        for row in rows
    )


def _known(value: object, known: tuple[_T, ...], default: _T) -> _T:
    for option in known:
        if value == option:
            return option
    return default

"""Rows of the PostgreSQL store: text PostgreSQL can hold, and one batch's writes.

PostgreSQL ``text`` refuses two things Python strings may hold: NUL (``\\x00``) and text that is not valid UTF-8 (a
lone surrogate from ``os.fsdecode`` or a model). JSON documents never hold either (the encoder escapes both, see
``_rows._dumps``); plain columns (ids, paths, titles, todo texts) go through :func:`pg_text`
(``tether.storable.column_text``): a value PostgreSQL can hold is stored as is, any other one as ``\\x01`` + its ASCII
JSON string, and so is a value that itself starts with ``\\x01``. The mapping is injective (a lookup maps its argument the same way and finds what was stored) and
:func:`py_text` reverses it exactly: nothing is lost, and the writer never fails on a text.

:class:`PgWrites` reuses the SQLite store's batching (``_rows.Writes``: one log entry per record per transaction, the
last version of each record) and runs it as PostgreSQL statements (``executemany``, which psycopg pipelines).
"""

from __future__ import annotations

from typing import Any

from ..storable import column_text, column_value
from ._rows import SESSION_COLUMNS, Writes

__all__ = ["PgWrites", "pg_text", "py_text"]


def pg_text(value: str | bytes) -> str:
    """``value`` as text PostgreSQL can store, losslessly (see the module docstring); bytes are surrogatepass text."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "surrogatepass")
    return column_text(value)


py_text = column_value
"""The string :func:`pg_text` stored as ``value``."""


def _cells(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(pg_text(cell) if isinstance(cell, str | bytes) else cell for cell in row)


_INSERT_INPUT = (
    "INSERT INTO inputs (session_id, part_id, data) VALUES (%s, %s, %s) "
    "ON CONFLICT (session_id, part_id) DO UPDATE SET data = excluded.data"
)
_UPSERT_SESSION = (
    f"INSERT INTO sessions ({', '.join(SESSION_COLUMNS)}) VALUES ({', '.join(['%s'] * len(SESSION_COLUMNS))}) "
    "ON CONFLICT (id) DO UPDATE SET title = excluded.title, agent = excluded.agent, rules = excluded.rules, "
    "updated = excluded.updated"
)
_UPSERT_MESSAGE = (
    "INSERT INTO messages (id, session_id, role, completed, data, owner) VALUES (%s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (session_id, id) DO UPDATE SET completed = excluded.completed, data = excluded.data, "
    "owner = excluded.owner"
)
_TOUCH_SESSION = "UPDATE sessions SET updated = %s WHERE id = %s"
_UPSERT_PART = (
    "INSERT INTO parts (id, session_id, message_id, type, state, call_id, data, owner) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (session_id, id) DO UPDATE SET state = excluded.state, data = excluded.data, owner = excluded.owner"
)
_INSERT_EVENT = "INSERT INTO events (session_id, type, ref, time, data) VALUES (%s, %s, %s, %s, %s)"
EVENTS_LOCK = 0x7465_7468_6572_0002
"""The advisory lock every write transaction of the store takes first, held to its commit.

Sequence numbers of the event log are then taken in commit order: a reader resuming "after seq N" (a server's event
stream) never misses an event another worker committed later with a smaller number. Taken before any row lock (even
the transaction's own lease renewal), so it never joins a lock cycle with row locks (recovery deletes other owners'
rows; a worker renews its own).
"""


class PgWrites(Writes):
    """One batch's rows (``_rows.Writes``), written with PostgreSQL statements."""

    __slots__ = ()

    def execute(self, conn: Any) -> None:
        self.encode()
        cursor = conn.cursor()
        if self.inputs:
            cursor.executemany(_INSERT_INPUT, [_cells(row) for row in self.inputs.values()])
            self.inputs.clear()
        if self.sessions:
            cursor.executemany(
                _UPSERT_SESSION,
                [_cells(tuple(row[c] for c in SESSION_COLUMNS)) for row in self.sessions.values()],
            )
            self.sessions.clear()
        if self.messages:
            cursor.executemany(_UPSERT_MESSAGE, [_cells(row) for row in self.messages.values()])
            self.messages.clear()
        if self.touched:
            cursor.executemany(_TOUCH_SESSION, [(t, pg_text(sid)) for sid, t in self.touched.items()])
            self.touched.clear()
        if self.parts:
            cursor.executemany(_UPSERT_PART, [_cells(row) for row in self.parts.values()])
            self.parts.clear()
        if self.events:  # the transaction holds EVENTS_LOCK (taken first by the store)
            cursor.executemany(_INSERT_EVENT, [_cells(row) for row in self.events])
            self.events.clear()

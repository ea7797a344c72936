"""The rows both session stores write: the record codec, the text columns, one transaction's batch of rows.

A part's and a message's stored JSON is written only through the one codec (``PARTS`` / ``MESSAGES`` of
``tether.records.internal``): a part of plain fields is written out from its fields (``part_to_plain``), any other
by :data:`_VARIANTS`, the per-kind serializer ``PARTS`` would pick (both pinned to its text by
``tests/store/test_codec.py``), and the encoder is total (lone surrogates become lossless ``\\u`` escapes, law 12).
:class:`Writes` folds one transaction's events into rows, one log entry per record per transaction (the PostgreSQL
store reuses it through ``_postgres_rows.PgWrites``); :class:`_Rows` writes many rows with one statement. The items
of a writer thread's queue (:class:`Call`, :data:`STOP`) are here too: both stores' threads serve the same queue.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from itertools import chain
from typing import Any, get_args

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError
from pydantic_core import to_json as _to_json

from ..records import (
    AssistantInfo,
    DurableEvent,
    MessageUpdated,
    Part,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    ToolPart,
)
from ..records.internal import (
    PARTS,
    message_to_json,
    part_to_plain,
    rules_from_json,
    rules_to_json,
)
from ..storable import visible

__all__ = [
    "SESSION_COLUMNS",
    "SESSION_SELECT",
    "STOP",
    "Call",
    "Stop",
    "Writes",
    "session_from_row",
    "session_row",
    "write_event",
    "writer_statements",
]

_INLINE_LIMIT = 16_384
"""A tool part whose JSON is longer than this keeps its input in the ``inputs`` table (written once)."""

_dumps_utf8 = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=repr).encode
_dumps_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), default=repr).encode


def _dumps(value: Any) -> str:
    """JSON text that SQLite can always store: total over any text (law 12).

    A lone surrogate (``"\\ud800"`` from a model, ``os.fsdecode`` of a non-UTF-8 file name) cannot be encoded as
    UTF-8, so SQLite would refuse the row. Such a value is written with ``\\uXXXX`` escapes instead: still JSON, and
    ``json.loads`` gives back exactly the same string (lossless and reversible). ASCII text is checked in O(1).
    A value JSON cannot hold at all (a cycle, nesting deeper than the interpreter's recursion limit) is stored as a
    string saying so: the writer never fails on a value.
    """
    try:
        return _encode(value)
    except (ValueError, RecursionError) as exc:  # a cycle, or nesting deeper than the encoder can go
        return _dumps_ascii(_unstorable(exc))


def _encode(value: Any) -> str:
    """:func:`_dumps` without its last resort: raises ``ValueError`` or ``RecursionError`` for what JSON cannot hold."""
    text = _dumps_utf8(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return _dumps_ascii(value)
    return text


def _dumps_plain(value: Any) -> str:
    """:func:`_dumps` of plain JSON data (dicts, lists, strings, numbers, ``None``: a message, a session row, a part
    written out from its fields), through pydantic-core's encoder: 0.7 against 3.1 µs for an assistant message, the
    writer encodes ~12 a 10-step turn. The same text but for how some floats are spelled (``1e-05`` is ``0.00001``;
    either reads back as the same value); what it refuses (a lone surrogate) goes through :func:`_dumps`."""
    try:
        return _to_json(value).decode()
    except PydanticSerializationError:
        return _dumps(value)


def _unstorable(exc: BaseException) -> str:
    return f"<unstorable value: {type(exc).__name__}: {exc}>"


class _Serializers(dict[type[Any], Callable[..., bytes]]):
    """Each part kind's own serializer, built the first time the writer meets that kind (a run with no tool call
    never builds the tool part's)."""

    def __missing__(self, kind: type[Any]) -> Callable[..., bytes]:
        if kind not in _KINDS:
            raise KeyError(kind)
        serializer = self[kind] = TypeAdapter(kind).serializer.to_json
        return serializer


_KINDS = frozenset(get_args(Part))
_VARIANTS: dict[type[Any], Callable[..., bytes]] = _Serializers()
"""Each part kind's own serializer: what :data:`PARTS` runs for a part of that kind (the same declaration, the same
JSON), without the union's dispatch on every write: ~25 % of encoding a part (the writer encodes 3-5 per call). Each is
pydantic-core's own serializer, called without ``TypeAdapter.dump_json``'s wrapper (it passes its defaults on: the
same text; 2.6 against 1.6 µs a tool part)."""


_PLAIN_WRITES = 16
"""How many parts of a kind the writer writes out from their fields (:func:`_plain_part`) before it builds that kind's
serializer. Written out, a part costs 2.5-5 µs against the serializer's ~1 µs, but builds nothing: a short run (a
scripted ``tether run`` writes one part of each of three kinds) never pays the ~1 ms build of each serializer nor
pydantic's plugin lookup (~4 ms: a scan of the installed distributions), and a long one pays them once, early."""
_plain_writes: dict[type[Any], int] = {}


def _dump_part(part: Part, exclude: set[str] | None = None) -> str:
    """A part's JSON as the one codec (:data:`~tether.records.internal.PARTS`) writes it, total like :func:`_dumps`.

    A part of plain fields and values (a run's text and step parts) is written out from its fields, the codec's very
    text, while its kind's serializer is not built yet (the first :data:`_PLAIN_WRITES` of the kind in a process): a
    no-tool run builds no serializer at all, and with none pydantic never scans the installed distributions for its
    plugins (~3 % of a scripted ``tether run``'s instructions, issue 38). Any other goes through :func:`_codec_part`.
    """
    kind = type(part)
    if exclude is None and kind not in _VARIANTS:
        written = _plain_writes.get(kind, 0)
        if written < _PLAIN_WRITES:
            text = _plain_part(part)
            if text is not None:
                _plain_writes[kind] = written + 1
                return text
    return _codec_part(part, exclude)


def _plain_part(part: Part) -> str | None:
    """A part's JSON written out from its fields (:func:`~tether.records.internal.part_to_plain`), the codec's very
    text (``tests/store/test_codec.py``); ``None`` for a part the codec must write."""
    plain = part_to_plain(part)
    return None if plain is None else _dumps_plain(plain)


def _codec_part(part: Part, exclude: set[str] | None = None) -> str:
    """A part's JSON through the one codec (:data:`~tether.records.internal.PARTS`), total like :func:`_dumps`.

    The fast path is pydantic's encoder. It refuses a lone surrogate in a value (it encodes UTF-8), and replaces one
    in a ``str``-typed dict key (metadata) by U+FFFD; it refuses a cycle or excessive nesting (in a tool's input).
    Such a part (or any whose JSON holds a U+FFFD, found in O(1) for ASCII text) is dumped again as plain Python data
    and encoded by :func:`_encode`, which escapes surrogates losslessly; a tool input JSON cannot hold at all is
    replaced by a string saying so, so the row stays a part.
    """
    try:
        text = _VARIANTS[type(part)](part, exclude=exclude, exclude_none=True, fallback=repr).decode()
    except PydanticSerializationError:
        pass
    else:
        if text.isascii() or "\ufffd" not in text:
            return text
    try:
        return _encode(PARTS.dump_python(part, exclude=exclude, exclude_none=True))
    except (ValueError, RecursionError) as exc:  # a cycle, or nesting too deep (in a tool input only)
        if not isinstance(part, ToolPart):
            raise
        part = replace(part, input=_unstorable(exc))
        return _encode(PARTS.dump_python(part, exclude=exclude, exclude_none=True))


def _text(value: str) -> str | bytes:
    """A plain text column (ids, paths, a title), stored exactly.

    Text that is not valid Unicode (a project directory whose name has undecodable bytes, from ``os.fsdecode``) is
    bound as its ``surrogatepass`` bytes (a BLOB in the column) and read back by :func:`_untext`, lossless: a session
    reopened from it reaches the same directory, never one literally named like an escape. The same mapping is
    applied to a value a query compares with, so a lookup finds what was stored.
    """
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def _untext(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "surrogatepass")


class Call:
    __slots__ = ("fn", "future")

    def __init__(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        self.fn = fn
        self.future: Future[Any] = Future()


class Stop:
    __slots__ = ()


STOP = Stop()


SESSION_COLUMNS = (
    "id",
    "project",
    "directory",
    "title",
    "agent",
    "parent_id",
    "parent_call_id",
    "rules",
    "created",
    "updated",
)
SESSION_SELECT = ", ".join(SESSION_COLUMNS)


def session_row(s: SessionInfo) -> dict[str, Any]:
    """The ``sessions`` row of ``s``, by column (bound as ``:name`` parameters)."""
    return {
        "id": _text(s.id),
        "project": _text(s.project),
        "directory": _text(s.directory),
        "title": _text(s.title),
        "agent": _text(s.agent),
        "parent_id": None if s.parent_id is None else _text(s.parent_id),
        "parent_call_id": None if s.parent_call_id is None else _text(s.parent_call_id),
        "rules": _dumps_plain(rules_to_json(s.rules)),
        "created": s.created,
        "updated": s.updated,
    }


def session_from_row(row: sqlite3.Row) -> SessionInfo:
    parent_id = row["parent_id"]
    parent_call_id = row["parent_call_id"]
    return SessionInfo(
        id=_untext(row["id"]),
        project=_untext(row["project"]),
        directory=_untext(row["directory"]),
        title=_untext(row["title"]),
        agent=_untext(row["agent"]),
        parent_id=None if parent_id is None else _untext(parent_id),
        parent_call_id=None if parent_call_id is None else _untext(parent_call_id),
        rules=rules_from_json(json.loads(row["rules"])),
        created=row["created"],
        updated=row["updated"],
    )


class _Rows:
    """One INSERT statement for many rows: ``VALUES (...), (...), ...`` in chunks of 64, 32, ..., 1 rows.

    ``executemany`` steps the statement once per row, and the sqlite3 module releases and re-takes the GIL around
    every step; while the event loop is busy, each re-take waits for the loop's next GIL release. One multi-row
    statement is one step for up to 64 rows. Chunk sizes are powers of two so at most seven SQL texts per table
    exist (the connection's statement cache keeps them compiled), and 64 rows × 8 columns stay under SQLite's
    historical limit of 999 bound parameters.
    """

    __slots__ = ("_head", "_sql", "_tail", "_width")

    def __init__(self, head: str, width: int, tail: str = "") -> None:
        self._head = head
        self._width = width
        self._tail = tail
        self._sql: dict[int, str] = {}

    def _statement(self, rows: int) -> str:
        sql = self._sql.get(rows)
        if sql is None:
            one = "(" + ", ".join("?" * self._width) + ")"
            sql = self._sql[rows] = f"{self._head} VALUES {', '.join([one] * rows)}{self._tail}"
        return sql

    def run(self, conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
        start, total = 0, len(rows)
        size = 64
        while start < total:
            while size > total - start:
                size //= 2
            chunk = rows[start : start + size]
            conn.execute(self._statement(size), tuple(chain.from_iterable(chunk)))
            start += size


_UPSERT_PART = _Rows(
    "INSERT INTO parts (id, session_id, message_id, type, state, call_id, data, owner)",
    8,
    " ON CONFLICT (session_id, id) DO UPDATE SET state = excluded.state, data = excluded.data, "
    "owner = excluded.owner",
)
_UPSERT_MESSAGE = _Rows(
    "INSERT INTO messages (id, session_id, role, completed, data, owner)",
    6,
    " ON CONFLICT (session_id, id) DO UPDATE SET completed = excluded.completed, data = excluded.data, "
    "owner = excluded.owner",
)
_UPSERT_SESSION = (
    f"INSERT INTO sessions ({SESSION_SELECT}) VALUES ({', '.join(f':{c}' for c in SESSION_COLUMNS)}) "
    "ON CONFLICT (id) DO UPDATE SET title = excluded.title, agent = excluded.agent, "
    "rules = excluded.rules, updated = excluded.updated"
)
_WITHOUT_INPUT = {"input", "raw"}
_TOUCH_SESSION = "UPDATE sessions SET updated = ? WHERE id = ?"
_UPSERT_INPUT = _Rows(
    "INSERT INTO inputs (session_id, part_id, data)",
    3,
    " ON CONFLICT (session_id, part_id) DO UPDATE SET data = excluded.data",
)
_INSERT_EVENT = _Rows("INSERT INTO events (session_id, type, ref, time, data)", 5)


def writer_statements() -> tuple[str, ...]:
    """The SQL texts :meth:`Writes.execute` runs on SQLite in a step's batches, the ones small batches use first.

    SQLite compiles a statement at its first use in a connection (20-140 µs, more rows more time) and the sqlite3
    module keeps it compiled by its text: the writer thread compiles these while it is idle (``_sqlite._warm``), so a
    new store's first batches (a fresh ``tether run``'s first turn) do not. ``inputs`` (a tool input over 16 KB) is
    left to its first use.
    """
    statements = [_UPSERT_SESSION, _TOUCH_SESSION]
    for size in (1, 2, 4, 8, 16, 32, 64):
        statements.extend(rows._statement(size) for rows in (_UPSERT_PART, _INSERT_EVENT, _UPSERT_MESSAGE))
    return tuple(statements)


class Writes:
    """The rows of one transaction, grouped by statement so each statement runs once for many rows.

    **One log entry per record per transaction.** A record (a session, a message, a part) changed several times
    within one transaction is written once, in its last version: its projection row, and one entry in the event log,
    at the place of that last version (the log stays in append order otherwise). The versions it superseded were
    never visible to any reader (a transaction commits all or nothing) and hold nothing the last one lacks: a tool
    part's later versions keep its input, ``started`` and every permission record, and all entries of a transaction
    share its time. The bus still delivers every version as it happens. A 100-call parallel step then encodes and
    logs about one version per call instead of three (pending, running, completed within one commit window).

    :meth:`add` only queues (cheap, in append order); :meth:`encode` builds the rows of what was queued, once per
    record, and :meth:`execute` writes them. A failure while encoding or writing fails the transaction like any
    refused row (the store then writes the batch event by event, unfolded, up to the failing one).
    """

    __slots__ = (
        "_queued",
        "events",
        "inputs",
        "messages",
        "owner",
        "parts",
        "sessions",
        "touched",
        "written",
    )

    def __init__(self, owner: str, written: dict[str, tuple[Any, Any]]) -> None:
        self.owner = owner
        self.written = written
        self.inputs: dict[str, tuple[Any, ...]] = {}
        self.sessions: dict[str, dict[str, Any]] = {}
        self.messages: dict[str, tuple[Any, ...]] = {}
        self.parts: dict[str, tuple[Any, ...]] = {}
        self.events: list[tuple[Any, ...]] = []
        self.touched: dict[str, int] = {}
        self._queued: dict[tuple[type[Any], str], tuple[DurableEvent, int]] = {}
        """Each record's last queued version, in the order those last versions were queued (a later version moves
        its record to the end)."""

    def add(self, event: DurableEvent, now: int) -> None:
        """Queue ``event`` (written by :meth:`execute`; a later version of the same record in the batch replaces it)."""
        if isinstance(event, PartUpdated):
            key = (PartUpdated, event.part.id)
        elif isinstance(event, MessageUpdated):
            key = (MessageUpdated, event.message.id)
        else:
            key = (SessionUpdated, event.session.id)
        queued = self._queued
        queued.pop(key, None)  # a record's place is that of its last version
        queued[key] = (event, now)

    def encode(self) -> None:
        """Build the rows of the events queued since the last call (once per record)."""
        queued = self._queued
        if not queued:
            return
        self._queued = {}
        rows = self._rows
        for event, now in queued.values():
            rows(event, now)

    def _rows(self, event: DurableEvent, now: int) -> None:
        if isinstance(event, PartUpdated):
            part = event.part
            if isinstance(part, ToolPart):
                data = self._tool_data(part)
                row = (
                    part.id,
                    part.session_id,
                    part.message_id,
                    "tool",
                    part.state,
                    visible(part.call_id),  # informational (the JSON data keeps the exact id)
                    data,
                    self.owner,
                )
            else:
                data = _dump_part(part)
                row = (part.id, part.session_id, part.message_id, part.type, None, None, data, self.owner)
            self.parts[part.id] = row
            self.events.append((part.session_id, event.type, part.id, now, data))
        elif isinstance(event, MessageUpdated):
            info = event.message
            data = _dumps_plain(message_to_json(info))
            completed = info.completed if isinstance(info, AssistantInfo) else info.created
            self.messages[info.id] = (info.id, info.session_id, info.role, completed, data, self.owner)
            self.touched[info.session_id] = now
            self.events.append((info.session_id, event.type, info.id, now, data))
        else:
            info = event.session
            row = session_row(info)
            self.sessions[info.id] = row
            # The event keeps the exact text (``_dumps`` escapes what UTF-8 cannot hold), not the bound bytes.
            exact = {
                "id": info.id,
                "project": info.project,
                "directory": info.directory,
                "title": info.title,
                "agent": info.agent,
                "parent_id": info.parent_id,
                "parent_call_id": info.parent_call_id,
            }
            data = _dumps_plain({**row, **exact})
            self.events.append((event.session.id, event.type, event.session.id, now, data))

    def _tool_data(self, part: ToolPart) -> str:
        """The part's JSON for ``parts.data`` and the event log; a large input goes to ``inputs``, written once.

        Every state change rewrites the part row (SQLite rewrites a whole row) and logs an event: a part whose JSON
        is larger than :data:`_INLINE_LIMIT` keeps its input (and ``raw`` text) out of both, in ``inputs``, written
        when the part first carries it; small parts stay inline (one row, no extra write per call).
        """
        last = self.written.get(part.id)
        if last is None or last[0] is not part.input or last[1] is not part.raw:  # not in ``inputs`` yet
            data = _dump_part(part)
            if last is None and (len(data) <= _INLINE_LIMIT or (part.input is None and part.raw is None)):
                return data
            self.inputs[part.id] = (part.session_id, part.id, _dumps([part.input, part.raw]))
        if part.settled:
            self.written.pop(part.id, None)  # later updates of a settled part are rare: the cache stays small
        else:
            self.written[part.id] = (part.input, part.raw)
        return _dump_part(part, _WITHOUT_INPUT)

    def execute(self, conn: sqlite3.Connection) -> None:
        self.encode()
        if self.inputs:
            _UPSERT_INPUT.run(conn, list(self.inputs.values()))
            self.inputs.clear()
        if self.sessions:
            conn.executemany(_UPSERT_SESSION, self.sessions.values())
            self.sessions.clear()
        if self.messages:
            _UPSERT_MESSAGE.run(conn, list(self.messages.values()))
            self.messages.clear()
        if self.touched:
            conn.executemany(_TOUCH_SESSION, [(t, sid) for sid, t in self.touched.items()])
            self.touched.clear()
        if self.parts:
            _UPSERT_PART.run(conn, list(self.parts.values()))
            self.parts.clear()
        if self.events:
            _INSERT_EVENT.run(conn, self.events)
            self.events.clear()


def write_event(conn: sqlite3.Connection, event: DurableEvent, owner: str, now: int) -> None:
    writes = Writes(owner, {})
    writes.add(event, now)
    writes.execute(conn)

"""Finding a project's sessions by what they hold: their title, their text, or a tool they called.

One query per store (SQLite and PostgreSQL), run in the store's writer thread like every read: the project's sessions
are walked newest first by ``sessions_project_updated``, each one's parts by their primary key range, and the walk
stops at ``limit`` matches. Nothing is loaded into Python but the matches; a search that matches nothing reads the
project's text and tool parts once, in SQL (there is no full-text index: the cost is that of a scan, bounded to the
one project). The words match as a substring, case-insensitively for ASCII (SQLite's ``LIKE``; ``ILIKE``), with
``%``, ``_`` and ``\\`` taken literally. Text is the user's and the model's text parts; a tool name matches when it
contains the words.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Literal

from .._record import record
from ..records import SessionInfo

__all__ = ["SessionMatch", "like_pattern", "search_postgres", "search_sqlite", "snippet"]

_SNIPPET = 120
"""Characters of text shown around a match."""

MatchField = Literal["title", "text", "tool"]


@record
class SessionMatch:
    """A session found by a search: where it matched (``title`` first, then ``tool``, then ``text``) and what."""

    info: SessionInfo
    field: MatchField
    text: str
    """The title, the tool's name, or the text around the first match."""


def like_pattern(words: str) -> str:
    """``%words%`` with the ``LIKE`` wildcards and the escape character taken literally (escape ``\\``)."""
    escaped = words.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def snippet(text: str, words: str) -> str:
    """The part of ``text`` around the first case-insensitive occurrence of ``words``, one line."""
    at = text.casefold().find(words.casefold())
    at = max(at, 0)
    start = max(0, at - _SNIPPET // 2)
    end = min(len(text), at + len(words) + _SNIPPET // 2)
    out = " ".join(text[start:end].split())
    return ("…" if start else "") + out + ("…" if end < len(text) else "")


def _match(info: SessionInfo, field: str, found: str | None, words: str) -> SessionMatch:
    if field == "title":
        return SessionMatch(info=info, field="title", text=info.title)
    if field == "tool":
        return SessionMatch(info=info, field="tool", text=found or "")
    return SessionMatch(info=info, field="text", text=snippet(found or "", words))


_SQLITE = (
    "SELECT {select}, {kind} AS found_field, {found} AS found_text FROM sessions s "
    "WHERE s.project = :project AND (s.title LIKE :p ESCAPE '\\' OR {tool_exists} OR {text_exists}) "
    "ORDER BY s.updated DESC, s.id DESC LIMIT :limit"
)
_SQLITE_TOOL = (
    "SELECT json_extract(t.data, '$.tool') FROM parts t WHERE t.session_id = s.id AND t.type = 'tool' "
    "AND json_extract(t.data, '$.tool') LIKE :p ESCAPE '\\'"
)
_SQLITE_TEXT = (
    "SELECT json_extract(x.data, '$.text') FROM parts x WHERE x.session_id = s.id AND x.type = 'text' "
    "AND json_extract(x.data, '$.text') LIKE :p ESCAPE '\\'"
)


def search_sqlite(
    conn: sqlite3.Connection,
    columns: Sequence[str],
    from_row: Callable[[sqlite3.Row], SessionInfo],
    project: str | bytes,
    words: str,
    limit: int,
) -> list[SessionMatch]:
    """The SQLite store's search (``columns``/``from_row``: its session columns and row reader)."""
    query = _SQLITE.format(
        select=", ".join(f"s.{c} AS {c}" for c in columns),
        kind=f"CASE WHEN s.title LIKE :p ESCAPE '\\' THEN 'title' WHEN EXISTS ({_SQLITE_TOOL}) THEN 'tool' "
        "ELSE 'text' END",
        found=f"CASE WHEN s.title LIKE :p ESCAPE '\\' THEN NULL ELSE coalesce(({_SQLITE_TOOL} LIMIT 1), "
        f"({_SQLITE_TEXT} LIMIT 1)) END",
        tool_exists=f"EXISTS ({_SQLITE_TOOL})",
        text_exists=f"EXISTS ({_SQLITE_TEXT})",
    )
    rows = conn.execute(query, {"project": project, "p": like_pattern(words), "limit": limit})
    return [_match(from_row(r), r["found_field"], r["found_text"], words) for r in rows]


_PG_TOOL = (
    "SELECT t.data::json ->> 'tool' FROM parts t WHERE t.session_id = s.id AND t.type = 'tool' "
    "AND (t.data::json ->> 'tool') ILIKE %(p)s"
)
_PG_TEXT = (
    "SELECT x.data::json ->> 'text' FROM parts x WHERE x.session_id = s.id AND x.type = 'text' "
    "AND (x.data::json ->> 'text') ILIKE %(p)s"
)


def search_postgres(
    conn: Any,
    columns: Sequence[str],
    from_row: Callable[[Sequence[Any]], SessionInfo],
    project: str,
    words: str,
    limit: int,
) -> list[SessionMatch]:
    """The PostgreSQL store's search (``ILIKE``; its default escape character is ``\\``)."""
    select = ", ".join(f"s.{c}" for c in columns)
    query = (
        f"SELECT {select}, "
        f"CASE WHEN s.title ILIKE %(p)s THEN 'title' WHEN EXISTS ({_PG_TOOL}) THEN 'tool' ELSE 'text' END, "
        f"CASE WHEN s.title ILIKE %(p)s THEN NULL ELSE coalesce(({_PG_TOOL} LIMIT 1), ({_PG_TEXT} LIMIT 1)) END "
        "FROM sessions s WHERE s.project = %(project)s "
        f"AND (s.title ILIKE %(p)s OR EXISTS ({_PG_TOOL}) OR EXISTS ({_PG_TEXT})) "
        "ORDER BY s.updated DESC, s.id DESC LIMIT %(limit)s"
    )
    found: list[SessionMatch] = []
    for row in conn.execute(query, {"project": project, "p": like_pattern(words), "limit": limit}):
        width = len(columns)
        found.append(_match(from_row(row[:width]), row[width], row[width + 1], words))
    return found

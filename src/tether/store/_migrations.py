"""Numbered schema migrations of the SQLite session store (``PRAGMA user_version`` is the applied count).

Append new migrations; never edit an applied one. Each is a SQL script; the store runs every pending one inside the
one ``BEGIN IMMEDIATE`` transaction in which it read the schema version, statement by statement
(:func:`statements`), so concurrent openers never both migrate. ``executescript`` is not used: it commits the open
transaction first, which would let a second opener in between reading the version and migrating.

Messages and parts are keyed by ``(session_id, id)`` in ``WITHOUT ROWID`` tables: ids are ascending, so one B-tree
serves both the upsert by id and loading a session in order, with no second index to maintain per write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

__all__ = ["MIGRATIONS", "statements"]


def statements(script: str) -> Iterator[str]:
    """The statements of a SQL script, each ending at a ``;`` that SQLite's own tokenizer says completes it.

    A ``;`` inside a string literal, a quoted name, a comment or a trigger body does not end a statement
    (``sqlite3.complete_statement`` decides, as the ``sqlite3`` shell does).

    Raises:
        ValueError: the script ends with an incomplete statement.
    """
    start = 0
    end = script.find(";")
    while end != -1:
        candidate = script[start : end + 1]
        if sqlite3.complete_statement(candidate):
            if candidate.strip(" \t\r\n;"):
                yield candidate
            start = end + 1
        end = script.find(";", end + 1)
    rest = script[start:]
    if not all(not line.strip() or line.lstrip().startswith("--") for line in rest.splitlines()):
        raise ValueError(f"SQL script ends with an incomplete statement: {rest.strip()[:80]!r}")


MIGRATIONS: tuple[str, ...] = (
    # 1: sessions, messages, parts (projections) and the append-only event log.
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        project TEXT NOT NULL,
        directory TEXT NOT NULL,
        title TEXT NOT NULL,
        agent TEXT NOT NULL,
        parent_id TEXT,
        rules TEXT NOT NULL DEFAULT '[]',
        created INTEGER NOT NULL,
        updated INTEGER NOT NULL
    );
    CREATE INDEX sessions_project_updated ON sessions (project, updated);
    CREATE INDEX sessions_updated ON sessions (updated);
    CREATE TABLE messages (
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        role TEXT NOT NULL,
        completed INTEGER,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, id)
    ) WITHOUT ROWID;
    CREATE INDEX messages_unfinished ON messages (role) WHERE role = 'assistant' AND completed IS NULL;
    CREATE TABLE parts (
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        type TEXT NOT NULL,
        state TEXT,
        call_id TEXT,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, id)
    ) WITHOUT ROWID;
    CREATE INDEX parts_unfinished ON parts (state) WHERE state IN ('pending', 'running');
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        type TEXT NOT NULL,
        ref TEXT NOT NULL,
        time INTEGER NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX events_session ON events (session_id, seq);
    """,
    # 2: store ownership (see ``_owners``): every open store registers an owner; parts and messages record the
    # owner that wrote them, so recovery interrupts only the unfinished calls of stores that are gone.
    """
    CREATE TABLE owners (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        identity TEXT NOT NULL,
        opened INTEGER NOT NULL,
        heartbeat INTEGER NOT NULL
    );
    ALTER TABLE parts ADD COLUMN owner TEXT;
    ALTER TABLE messages ADD COLUMN owner TEXT;
    """,
    # 3: a tool call's input (and the raw argument text) stored once, beside its part: a part row is rewritten on
    # every state change, and SQLite rewrites a whole row (a 50 MB argument included) on each update. Parts written
    # since keep ``input``/``raw`` out of ``parts.data`` and out of the event log. ``claims``: the open store (owner)
    # running a session; a second process gets "busy" while that owner lives (see ``SQLiteStore.claim``).
    """
    CREATE TABLE inputs (
        session_id TEXT NOT NULL,
        part_id TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, part_id)
    ) WITHOUT ROWID;
    CREATE TABLE claims (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        claimed INTEGER NOT NULL
    );
    """,
    # 4: what a session is for (``_admin.SessionKind``): ``tether run --continue`` picks the latest conversation,
    # never the session ``tether tool call`` recorded its call in. Children (a subagent's session) are found by
    # parent, to be deleted with it.
    """
    ALTER TABLE sessions ADD COLUMN kind TEXT NOT NULL DEFAULT 'conversation';
    CREATE INDEX sessions_project_kind_updated ON sessions (project, kind, updated);
    CREATE INDEX sessions_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;
    """,
    # 5: sessions ``tether tool call`` recorded before kinds existed become ``tool-call``: their steps ran the built-in
    # one-call model, whose name no conversation's step carries (``cli/_onecall.OneCallModel``).
    """
    UPDATE sessions SET kind = 'tool-call' WHERE kind = 'conversation' AND id IN (
        SELECT session_id FROM messages WHERE role = 'assistant' AND data LIKE '%"model":"tether/tool-call"%'
    );
    """,
    # 6: a session's todo list (``_todos``: ``todowrite`` replaces it whole), read by one key range, never by
    # replaying the session's history (law 10).
    """
    CREATE TABLE todos (
        session_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        id TEXT NOT NULL,
        content TEXT NOT NULL,
        status TEXT NOT NULL,
        priority TEXT NOT NULL,
        PRIMARY KEY (session_id, position)
    ) WITHOUT ROWID;
    """,
    # 7: a child session (a subagent's, ``task``) records the parent's tool call it runs for, so ``session show``
    # nests it under that call even when the call was interrupted before its result named the child.
    """
    ALTER TABLE sessions ADD COLUMN parent_call_id TEXT;
    """,
    # 8: one message's parts by key (``load_message``: what a Temporal tool call settles), never a walk over the
    # session's parts (law 10). A part's message never changes, so its updates leave this index alone.
    """
    CREATE INDEX parts_message ON parts (session_id, message_id, id);
    """,
)

"""Numbered schema migrations of the PostgreSQL session store (the ``tether_schema`` table holds the applied count).

Append new migrations; never edit an applied one. :func:`migrate` runs every pending one in one transaction that
first takes a transaction-scoped advisory lock (:data:`MIGRATE_LOCK`) and reads the version again under it, so
workers opening one fresh database at the same moment never both migrate. Each migration is a list of statements
(psycopg sends one statement per ``execute``; no script splitting is needed).

The tables mirror the SQLite store's (``_migrations``), with PostgreSQL types: every JSON document is ``text`` (a
JSON text escapes NUL and lone surrogates, which ``jsonb`` would refuse), times are ``bigint`` milliseconds. Owners
have a lease (``lease_until``, the server's clock) and an advisory-lock key instead of a pid (``_postgres_owners``).
Saved approvals (``permission_saved``) live here too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MIGRATE_LOCK", "MIGRATIONS", "migrate", "schema_version"]

MIGRATE_LOCK = 0x7465_7468_6572_0001
"""The advisory-lock key held while migrating (``"tether"`` + 1)."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: the tables of SQLite migrations 1-7, owners with leases, and the saved approvals.
    (
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            directory TEXT NOT NULL,
            title TEXT NOT NULL,
            agent TEXT NOT NULL,
            parent_id TEXT,
            parent_call_id TEXT,
            rules TEXT NOT NULL DEFAULT '[]',
            kind TEXT NOT NULL DEFAULT 'conversation',
            created BIGINT NOT NULL,
            updated BIGINT NOT NULL
        )""",
        "CREATE INDEX sessions_updated ON sessions (updated)",
        "CREATE INDEX sessions_project_updated ON sessions (project, updated)",
        "CREATE INDEX sessions_project_kind_updated ON sessions (project, kind, updated)",
        "CREATE INDEX sessions_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL",
        """CREATE TABLE messages (
            session_id TEXT NOT NULL,
            id TEXT NOT NULL,
            role TEXT NOT NULL,
            completed BIGINT,
            data TEXT NOT NULL,
            owner TEXT,
            PRIMARY KEY (session_id, id)
        )""",
        "CREATE INDEX messages_unfinished ON messages (owner) WHERE role = 'assistant' AND completed IS NULL",
        """CREATE TABLE parts (
            session_id TEXT NOT NULL,
            id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            type TEXT NOT NULL,
            state TEXT,
            call_id TEXT,
            data TEXT NOT NULL,
            owner TEXT,
            PRIMARY KEY (session_id, id)
        )""",
        "CREATE INDEX parts_unfinished ON parts (owner) WHERE state IN ('pending', 'running')",
        """CREATE TABLE inputs (
            session_id TEXT NOT NULL,
            part_id TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, part_id)
        )""",
        """CREATE TABLE events (
            seq BIGSERIAL PRIMARY KEY,
            session_id TEXT NOT NULL,
            type TEXT NOT NULL,
            ref TEXT NOT NULL,
            time BIGINT NOT NULL,
            data TEXT NOT NULL
        )""",
        "CREATE INDEX events_session ON events (session_id, seq)",
        """CREATE TABLE owners (
            id TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            lock_key BIGINT NOT NULL,
            opened BIGINT NOT NULL,
            heartbeat BIGINT NOT NULL,
            lease_until BIGINT NOT NULL
        )""",
        """CREATE TABLE claims (
            session_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
            claimed BIGINT NOT NULL
        )""",
        "CREATE INDEX claims_owner ON claims (owner)",
        """CREATE TABLE todos (
            session_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            id TEXT NOT NULL,
            content TEXT NOT NULL,
            status TEXT NOT NULL,
            priority TEXT NOT NULL,
            PRIMARY KEY (session_id, position)
        )""",
        """CREATE TABLE permission_saved (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            action TEXT NOT NULL,
            resource TEXT NOT NULL,
            UNIQUE (project, action, resource)
        )""",
    ),
    # 2: one message's parts by key (``load_message``, SQLite migration 8), never a walk over the session's parts.
    ("CREATE INDEX parts_message ON parts (session_id, message_id, id)",),
)


def schema_version(conn: Any) -> int:
    """The applied migration count (``0``: a database tether never opened)."""
    row = conn.execute("SELECT to_regclass('tether_schema') IS NOT NULL").fetchone()
    if not row[0]:
        return 0
    found = conn.execute("SELECT version FROM tether_schema").fetchone()
    return 0 if found is None else int(found[0])


def migrate(conn: Any) -> int:
    """Apply every pending migration under :data:`MIGRATE_LOCK`; return the version the database had.

    ``conn`` is an autocommit psycopg connection; the migration runs in its own transaction.

    Raises:
        ValueError: the database has a newer schema than this tether knows.
        psycopg.Error: a statement failed (nothing of the transaction is kept).
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS tether_schema (version INTEGER NOT NULL)")
        version = schema_version(conn)
        if version > len(MIGRATIONS):
            raise ValueError(
                f"has schema version {version}; this tether knows {len(MIGRATIONS)}. Upgrade tether."
            )
        for script in MIGRATIONS[version:]:
            for statement in script:
                conn.execute(statement)
        if version < len(MIGRATIONS):
            conn.execute("DELETE FROM tether_schema")
            conn.execute("INSERT INTO tether_schema (version) VALUES (%s)", (len(MIGRATIONS),))
    return version

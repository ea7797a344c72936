"""Migrations run as scripts: statements split where SQLite's tokenizer says they end, inside one transaction."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tether.store import SQLiteStore
from tether.store._migrations import MIGRATIONS, statements

SCRIPT = """
-- a comment; with a semicolon
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL DEFAULT 'a;b', "odd;name" TEXT);
CREATE TRIGGER notes_guard BEFORE INSERT ON notes WHEN NEW.body = 'x;y'
BEGIN
    SELECT RAISE(ABORT, 'no; never');
END;
/* a block comment; still one statement */ INSERT INTO notes (body) VALUES ('semi;colon');
"""


def test_a_semicolon_in_a_string_a_name_a_comment_or_a_trigger_body_does_not_split_a_statement() -> None:
    parts = list(statements(SCRIPT))
    assert len(parts) == 3
    assert parts[1].lstrip().startswith("CREATE TRIGGER") and parts[1].rstrip().endswith("END;")
    conn = sqlite3.connect(":memory:")
    for statement in parts:
        conn.execute(statement)
    assert conn.execute("SELECT body FROM notes").fetchall() == [("semi;colon",)]
    with pytest.raises(sqlite3.IntegrityError, match="no; never"):
        conn.execute("INSERT INTO notes (body) VALUES ('x;y')")


def test_a_script_ending_in_an_incomplete_statement_is_refused() -> None:
    with pytest.raises(ValueError, match="incomplete statement"):
        list(statements("CREATE TABLE a (x); CREATE TABLE b (y)"))
    assert list(statements("  -- only a comment\n")) == []


def test_every_migration_splits_into_complete_statements() -> None:
    for script in MIGRATIONS:
        for statement in statements(script):
            assert sqlite3.complete_statement(statement)


@pytest.mark.anyio
async def test_a_fresh_file_gets_every_table_of_every_migration(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "tether.db"):
        pass
    conn = sqlite3.connect(tmp_path / "tether.db")
    names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    conn.close()
    assert version == len(MIGRATIONS)
    assert {
        "sessions",
        "messages",
        "parts",
        "events",
        "owners",
        "inputs",
        "claims",
        "parts_unfinished",
    } <= names

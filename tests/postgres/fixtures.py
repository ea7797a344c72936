"""Pytest fixtures over :mod:`tests.postgres.server`: one server per test session, a fresh database per test.

``postgres`` starts the server once (session scope). Where the binaries are missing the PostgreSQL tests skip,
saying so, except on CI (``CI`` set), where ``scripts/bootstrap`` installs them and a missing server is a failure.
``open_store`` (parametrized ``sqlite`` / ``postgresql``) is the store factory the store tests use, so one test body
runs against both stores.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.postgres.server import PostgresServer, find_bin, start_server

from tether.store import PostgresStore, SQLiteStore

__all__ = ["OpenStore", "open_store", "postgres", "query", "store_kind", "store_target"]

OpenStore = Callable[..., SQLiteStore | PostgresStore]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    if find_bin() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL server binaries missing on CI (scripts/bootstrap installs postgresql)")
        pytest.skip("PostgreSQL server binaries not installed (apt-get install postgresql)")
    server = start_server()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_target(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``name -> target``: a file path for SQLite, a fresh database URL (one per name) for PostgreSQL."""
    urls: dict[str, str] = {}

    def target(name: str = "tether.db") -> str:
        if store_kind == "sqlite":
            return str(tmp_path / name)
        if name not in urls:
            server: PostgresServer = request.getfixturevalue("postgres")
            urls[name] = server.database()
        return urls[name]

    return target


@pytest.fixture
def open_store(store_kind: str, store_target: Callable[[str], str]) -> OpenStore:
    """``open_store(name="tether.db", **options)``: an unopened store of the parametrized kind."""

    def make(name: str = "tether.db", **options: Any) -> SQLiteStore | PostgresStore:
        target = store_target(name)
        if store_kind == "sqlite":
            return SQLiteStore(target, **options)
        return PostgresStore(target, **options)

    return make


def query(target: str, sql: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (no parameters) in the store ``target``: a SQLite file or a PostgreSQL URL."""
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as pg:
            return [tuple(row) for row in pg.execute(sql)]  # pyright: ignore[reportArgumentType, reportCallIssue]
    import sqlite3

    conn = sqlite3.connect(target)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()

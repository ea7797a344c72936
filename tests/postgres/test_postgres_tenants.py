"""One database, two tenants: a schema per tenant named in the URL (``options=-csearch_path=...``) keeps sessions and
saved approvals apart, as docs/postgres.md tells operators whose projects share a path (every container's
``/workspace``)."""

from __future__ import annotations

import psycopg
import pytest
from tests.postgres.server import PostgresServer

from tether.session import SessionInfo, SessionUpdated
from tether.store import PgSavedApprovals, PostgresStore


def info(sid: str) -> SessionInfo:
    return SessionInfo(
        id=sid, project="/workspace", directory="/workspace", title=sid, agent="build", created=1, updated=1
    )


def tenant_url(postgres: PostgresServer, database: str, schema: str) -> str:
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")  # pyright: ignore[reportArgumentType, reportCallIssue]
    return f"{database}?options=-csearch_path%3D{schema}"


@pytest.mark.anyio
async def test_review3_a_schema_per_tenant_keeps_sessions_and_approvals_of_one_path_apart(
    postgres: PostgresServer,
) -> None:
    database = postgres.database(template=None)
    a, b = tenant_url(postgres, database, "tenant_a"), tenant_url(postgres, database, "tenant_b")
    async with PostgresStore(a) as one, PostgresStore(b) as two:
        one.append(SessionUpdated(info("ses_a")))
        two.append(SessionUpdated(info("ses_b")))
        await one.flush()
        await two.flush()
        assert [s.id for s in await one.list_sessions(project="/workspace")] == ["ses_a"]
        assert [s.id for s in await two.list_sessions(project="/workspace")] == ["ses_b"]
    async with PgSavedApprovals(a, refresh=0) as one, PgSavedApprovals(b, refresh=0) as two:
        await one.add("/workspace", "bash", ["rm *"])
        assert (await two.rules("/workspace")).rules == ()
        assert [r.resource for r in (await one.rules("/workspace")).rules] == ["rm *"]
    with psycopg.connect(database) as conn:
        tables = conn.execute(  # pyright: ignore[reportArgumentType, reportCallIssue]
            "SELECT table_schema FROM information_schema.tables WHERE table_name = 'permission_saved'"
        ).fetchall()
    assert sorted(t[0] for t in tables) == ["tenant_a", "tenant_b"]

"""The SQLite writer compiles its batch statements while it is idle (issue 38): nothing is written, no lock is held,
and the statements then write as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from tether.session import AssistantInfo, MessageUpdated, PartUpdated, SessionInfo, SessionUpdated, ToolPart
from tether.store import SQLiteStore
from tether.store._rows import writer_statements
from tether.store._sqlite import _warm  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.anyio


def _counts(conn: sqlite3.Connection) -> tuple[int, ...]:
    return tuple(
        conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        for table in ("sessions", "messages", "parts", "events", "inputs")
    )


def test_the_warmed_statements_are_every_batch_statement_once() -> None:
    statements = writer_statements()
    assert (
        len(statements) == len(set(statements)) == 2 + 7 * 3
    )  # session upsert and touch, 7 sizes of 3 tables
    assert all(s.startswith(("INSERT INTO", "UPDATE sessions")) for s in statements)


async def test_warming_writes_nothing_holds_no_lock_and_the_batches_then_write(tmp_path: Path) -> None:
    path = tmp_path / "tether.db"
    with anyio.fail_after(60):
        async with SQLiteStore(path) as store:

            def warm_all(conn: sqlite3.Connection) -> tuple[int, ...]:
                before = _counts(conn)
                for sql in writer_statements():
                    _warm(conn, sql)
                assert _counts(conn) == before
                return before

            # on the writer's own connection (inside its batch's transaction, as a read is)
            assert await store._run(warm_all) == (0, 0, 0, 0, 0)  # pyright: ignore[reportPrivateUsage]
            # on a connection of its own: no transaction begun, so another connection writes at once
            own = sqlite3.connect(path, isolation_level=None, timeout=0)
            for sql in writer_statements():
                _warm(own, sql)
            assert not own.in_transaction
            other = sqlite3.connect(path, timeout=0)
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            other.close()
            own.close()
            # then a batch of every size runs on the compiled statements
            store.append(
                SessionUpdated(
                    SessionInfo(
                        id="ses_1",
                        project="/p",
                        directory="/p",
                        title="t",
                        agent="build",
                        created=1,
                        updated=1,
                    )
                )
            )
            store.append(
                MessageUpdated(
                    AssistantInfo(
                        id="msg_1", session_id="ses_1", parent_id="msg_0", agent="b", model="m/x", created=1
                    )
                )
            )
            calls = 127  # 64 + 32 + 16 + 8 + 4 + 2 + 1 rows
            for i in range(calls):
                big = {"text": "x" * 20_000} if i == 0 else {"text": f"x{i}"}  # the first goes to ``inputs``
                store.append(
                    PartUpdated(
                        ToolPart(
                            id=f"prt_{i:03d}",
                            session_id="ses_1",
                            message_id="msg_1",
                            call_id=f"c{i}",
                            tool="t",
                            state="running",
                            input=big,
                        )
                    )
                )
            await store.flush()
            parts = await store.load_messages("ses_1")
    assert len(parts) == 1 and len(parts[0].parts) == calls
    assert parts[0].parts[0].input == {"text": "x" * 20_000}  # pyright: ignore[reportAttributeAccessIssue]
    conn = sqlite3.connect(path)
    assert _counts(conn) == (1, 1, calls, 2 + calls, 1)
    conn.close()

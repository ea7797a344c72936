"""Finding and removing sessions: id prefixes, the latest conversation, delete (atomic, no orphans), prune."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.postgres.fixtures import OpenStore

from tether.errors import NotFoundError, StoreError, UsageError
from tether.session import (
    AssistantInfo,
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    ToolPart,
    UserInfo,
)
from tether.store import PostgresStore, SQLiteStore
from tether.store._admin import _upper

TABLES = ("sessions", "messages", "parts", "inputs", "events", "claims")
REFUSE = {
    "sqlite": ["CREATE TRIGGER refuse BEFORE DELETE ON sessions BEGIN SELECT RAISE(ABORT, 'refused'); END"],
    "postgresql": [
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$",
        "CREATE TRIGGER refuse BEFORE DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION refuse()",
    ],
}
"""A trigger that makes deleting a session fail, per store."""


def info(sid: str, *, project: str = "/p", updated: int = 1, parent: str | None = None) -> SessionInfo:
    return SessionInfo(
        id=sid,
        project=project,
        directory=project,
        title=f"title {sid}",
        agent="build",
        parent_id=parent,
        created=1,
        updated=updated,
    )


def fill(
    store: SQLiteStore | PostgresStore,
    sid: str,
    *,
    updated: int = 1,
    parent: str | None = None,
    done: bool = True,
) -> None:
    """A session with a user message, an assistant message and a tool part whose large input goes to ``inputs``."""
    store.append(SessionUpdated(info(sid, updated=updated, parent=parent)))
    store.append(MessageUpdated(UserInfo(id=f"msg_{sid}_1", session_id=sid, agent="build", created=updated)))
    store.append(
        MessageUpdated(
            AssistantInfo(
                id=f"msg_{sid}_2",
                session_id=sid,
                parent_id=f"msg_{sid}_1",
                agent="build",
                model="m",
                created=updated,
                completed=updated if done else None,
            )
        )
    )
    store.append(
        PartUpdated(
            ToolPart(
                id=f"prt_{sid}",
                session_id=sid,
                message_id=f"msg_{sid}_2",
                call_id="c",
                tool="write",
                state="completed" if done else "running",
                input={"content": "x" * 20_000},
            )
        )
    )


def counts(target: str, sid: str | None = None) -> dict[str, int]:
    """Rows per table (of one session), in the SQLite file or the PostgreSQL database ``target``."""
    mark = "%s" if target.startswith("postgresql://") else "?"
    queries = {
        table: (
            f"SELECT count(*) FROM {table}"
            + ("" if sid is None else f" WHERE {'id' if table == 'sessions' else 'session_id'} = {mark}")
        )
        for table in TABLES
    }
    args = () if sid is None else (sid,)
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as pg:
            return {table: pg.execute(sql, args).fetchone()[0] for table, sql in queries.items()}  # type: ignore[index, call-overload]
    conn = sqlite3.connect(target)
    try:
        return {table: conn.execute(sql, args).fetchone()[0] for table, sql in queries.items()}
    finally:
        conn.close()


async def _touch(store: SQLiteStore | PostgresStore, sid: str, updated: int) -> None:
    await store.flush()
    mark = "%s" if isinstance(store, PostgresStore) else "?"
    await store._run(
        lambda conn: conn.execute(f"UPDATE sessions SET updated = {mark} WHERE id = {mark}", (updated, sid))
    )


@pytest.mark.anyio
async def test_a_unique_prefix_names_its_session_and_an_ambiguous_one_lists_candidates(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    async with open_store("db") as store:
        for sid in ("ses_aa1", "ses_aa2", "ses_ab1", "ses_b%_"):
            store.append(SessionUpdated(info(sid)))
        assert (await store.resolve_session("ses_ab")).id == "ses_ab1"
        assert (await store.resolve_session("ses_aa1")).id == "ses_aa1"
        with pytest.raises(UsageError, match="ambiguous: ses_aa1, ses_aa2; give more"):
            await store.resolve_session("ses_aa")
        with pytest.raises(NotFoundError, match="no session id starts with it"):
            await store.resolve_session("ses_c")
        # % and _ are plain characters, not LIKE wildcards
        assert (await store.resolve_session("ses_b%")).id == "ses_b%_"
        with pytest.raises(NotFoundError):
            await store.resolve_session("ses_%")
        with pytest.raises(UsageError, match="empty"):
            await store.resolve_session("  ")
        with pytest.raises(NotFoundError):
            await store.resolve_session("ses_\udcff")


@pytest.mark.anyio
async def test_an_ambiguous_prefix_names_at_most_five_candidates(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    async with open_store("db") as store:
        for n in range(8):
            store.append(SessionUpdated(info(f"ses_x{n}")))
        with pytest.raises(UsageError) as caught:
            await store.resolve_session("ses_x")
        assert "ses_x4, ..." in caught.value.message
        assert "ses_x5" not in caught.value.message


def test_the_upper_bound_of_a_prefix_skips_surrogates_and_the_last_code_point() -> None:
    assert _upper("ses_a") == "ses_b"
    assert _upper("a\ud7ff") == "a\ue000"
    assert _upper("a\U0010ffff") == "b"
    assert _upper("\U0010ffff") is None
    assert _upper("") is None


@pytest.mark.anyio
async def test_latest_conversation_skips_tool_call_sessions_children_and_other_projects(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    async with open_store("db") as store:
        store.append(SessionUpdated(info("ses_1", updated=1)))
        store.append(SessionUpdated(info("ses_2", updated=2)))
        store.append(SessionUpdated(info("ses_3", updated=3, parent="ses_2")))
        store.append(SessionUpdated(info("ses_4", updated=4)))
        store.append(SessionUpdated(info("ses_5", project="/other", updated=5)))
        await store.set_kind("ses_4", "tool-call")
        assert (await store.latest_session(project="/p")).id == "ses_2"  # type: ignore[union-attr]
        assert (await store.latest_session(project="/p", kind="tool-call")).id == "ses_4"  # type: ignore[union-attr]
        assert await store.latest_session(project="/none") is None
        assert await store.session_kinds(["ses_1", "ses_4", "ses_missing"]) == {
            "ses_1": "conversation",
            "ses_4": "tool-call",
        }
        assert await store.session_kinds([]) == {}
        with pytest.raises(NotFoundError):
            await store.set_kind("ses_missing", "tool-call")
        # a later update of the session keeps its kind
        store.append(SessionUpdated(info("ses_4", updated=9)))
        assert (await store.session_kinds(["ses_4"]))["ses_4"] == "tool-call"


@pytest.mark.anyio
async def test_delete_removes_every_row_of_the_session_and_its_children_and_nothing_else(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    path = store_target("db")
    async with open_store("db") as store:
        fill(store, "ses_keep")
        fill(store, "ses_root")
        fill(store, "ses_child", parent="ses_root")
        fill(store, "ses_grandchild", parent="ses_child")
        await store.flush()
        before = counts(path)
        kept = counts(path, "ses_keep")
        removed = [counts(path, sid) for sid in ("ses_root", "ses_child", "ses_grandchild")]
        assert all(n > 0 for n in kept.values() if n) and kept["inputs"] == 1
        deleted = await store.delete_session("ses_root")
        assert [s.id for s in deleted.sessions] == ["ses_root", "ses_child", "ses_grandchild"]
        assert deleted.live == ()
        after = counts(path)
        for table in TABLES:
            assert after[table] == before[table] - sum(r[table] for r in removed), table
        assert counts(path, "ses_keep") == kept
        for sid in ("ses_root", "ses_child", "ses_grandchild"):
            assert set(counts(path, sid).values()) == {0}
        with pytest.raises(NotFoundError):
            await store.delete_session("ses_root")
        (message, _assistant) = await store.load_messages("ses_keep")
        assert message.info.id == "msg_ses_keep_1"


@pytest.mark.anyio
async def test_a_session_claimed_or_running_in_a_live_store_is_not_deleted(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    path = store_target("db")
    async with open_store("db") as runner, open_store("db") as admin:
        fill(runner, "ses_claimed")
        fill(runner, "ses_running", done=False)
        fill(runner, "ses_parent")
        fill(runner, "ses_busy_child", parent="ses_parent", done=False)
        await runner.flush()
        await runner.claim("ses_claimed")
        before = counts(path)
        for sid in ("ses_claimed", "ses_running", "ses_parent"):
            result = await admin.delete_session(sid)
            assert result.sessions == ()
            (live,) = result.live
            assert live.session_id == sid
            assert f"pid {live.holder.pid}" in live.message
        assert counts(path) == before
    # once that store is closed, its work is no longer live: the sessions can go
    async with open_store("db", recover=False) as admin:
        for sid in ("ses_claimed", "ses_running", "ses_parent"):
            assert (await admin.delete_session(sid)).sessions
        assert set(counts(path).values()) == {0}


@pytest.mark.anyio
async def test_prune_removes_old_trees_keeps_recent_and_live_ones(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    path = store_target("db")
    async with open_store("db") as runner, open_store("db") as admin:
        fill(runner, "ses_old", updated=10)
        fill(runner, "ses_old_child", updated=10, parent="ses_old")
        fill(runner, "ses_mixed", updated=10)
        fill(runner, "ses_mixed_child", updated=10, parent="ses_mixed")
        fill(runner, "ses_new", updated=10)
        fill(runner, "ses_live", updated=10)
        fill(runner, "ses_orphan", updated=10, parent="ses_gone")
        for sid in ("ses_old", "ses_old_child", "ses_mixed", "ses_live", "ses_orphan"):
            await _touch(runner, sid, 10)  # writing a message set ``updated`` to now
        await _touch(runner, "ses_mixed_child", 500)
        await _touch(runner, "ses_new", 500)
        await runner.claim("ses_live")
        before = counts(path)
        dry = await admin.prune_sessions(before=100, dry_run=True)
        assert sorted(s.id for s in dry.sessions) == ["ses_old", "ses_old_child", "ses_orphan"]
        assert [live.session_id for live in dry.live] == ["ses_live"]
        assert counts(path) == before
        pruned = await admin.prune_sessions(before=100)
        assert sorted(s.id for s in pruned.sessions) == ["ses_old", "ses_old_child", "ses_orphan"]
        assert [live.session_id for live in pruned.live] == ["ses_live"]
        remaining = {s.id for s in await admin.list_sessions()}
        assert remaining == {"ses_mixed", "ses_mixed_child", "ses_new", "ses_live"}
        assert (await admin.prune_sessions(before=100)).sessions == ()


@pytest.mark.anyio
async def test_delete_and_prune_refuse_on_a_closed_store(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    store = open_store("db")
    await store.open()
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await store.delete_session("ses_1")
    with pytest.raises(StoreError, match="closed"):
        await store.prune_sessions(before=1)
    with pytest.raises(StoreError, match="closed"):
        await store.set_kind("ses_1", "tool-call")


@pytest.mark.anyio
async def test_a_failed_delete_rolls_back_every_row_it_touched(
    open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    path = store_target("db")
    async with open_store("db") as store:
        fill(store, "ses_1")
        await store.flush()
        before = counts(path)
        # a trigger makes the last statement of the delete fail: the rows deleted before it come back
        for statement in REFUSE[store_kind]:
            await store._run(lambda conn, statement=statement: conn.execute(statement))
        with pytest.raises(StoreError, match="refused"):
            await store.delete_session("ses_1")
        assert counts(path) == before
        store.append(SessionUpdated(info("ses_2")))
        await store.flush()  # the store still writes
        assert counts(path)["sessions"] == 2


@pytest.mark.anyio
async def test_tool_call_sessions_stored_before_kinds_are_marked_by_the_migration(tmp_path: Path) -> None:
    from tether.store._migrations import MIGRATIONS, statements

    path = tmp_path / "db"
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:4]:
        for statement in statements(script):
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 4")
    for sid, model in (("ses_call", "tether/tool-call"), ("ses_talk", "openai/gpt-5")):
        conn.execute(
            "INSERT INTO sessions (id, project, directory, title, agent, created, updated) "
            "VALUES (?, '/p', '/p', 't', 'build', 1, 1)",
            (sid,),
        )
        conn.execute(
            "INSERT INTO messages (session_id, id, role, completed, data) VALUES (?, 'msg_1', 'assistant', 1, ?)",
            (sid, f'{{"id":"msg_1","parent_id":"msg_0","agent":"build","model":"{model}","created":1}}'),
        )
    conn.commit()
    conn.close()
    async with SQLiteStore(path) as store:
        assert await store.session_kinds(["ses_call", "ses_talk"]) == {
            "ses_call": "tool-call",
            "ses_talk": "conversation",
        }
        assert (await store.latest_session(project="/p")).id == "ses_talk"  # type: ignore[union-attr]

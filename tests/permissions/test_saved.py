"""Saved approvals in SQLite: add (deduplicated), list, remove, and surviving a new process."""

import json
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest

from tether.errors import NotFoundError, StoreError
from tether.permissions import Rule, SavedApprovals

pytestmark = pytest.mark.anyio


async def test_add_list_remove(saved: SavedApprovals) -> None:
    added = await saved.add("prj_1", "bash", ["git *", "ls *"])
    assert [a.resource for a in added] == ["git *", "ls *"]
    await saved.add("prj_2", "edit", ["*"])
    assert [(a.project, a.action, a.resource) for a in await saved.list()] == [
        ("prj_1", "bash", "git *"),
        ("prj_1", "bash", "ls *"),
        ("prj_2", "edit", "*"),
    ]
    assert [a.resource for a in await saved.list("prj_1")] == ["git *", "ls *"]
    await saved.remove(added[0].id)
    assert [a.resource for a in await saved.list("prj_1")] == ["ls *"]


async def test_adding_the_same_approval_twice_keeps_one_row(saved: SavedApprovals) -> None:
    await saved.add("prj_1", "bash", ["git *"])
    assert await saved.add("prj_1", "bash", ["git *", "git *"]) == []
    assert len(await saved.list()) == 1


async def test_removing_an_unknown_id_is_not_found(saved: SavedApprovals) -> None:
    with pytest.raises(NotFoundError):
        await saved.remove("sav_nope")


async def test_rules_are_allow_rules_and_reused_while_unchanged(saved: SavedApprovals) -> None:
    await saved.add("prj_1", "bash", ["git *"])
    first = await saved.rules("prj_1")
    assert first.source == "saved"
    assert first.rules == (Rule("bash", "git *", "allow"),)
    assert await saved.rules("prj_1") is first
    await saved.add("prj_1", "bash", ["ls"])
    assert len(await saved.rules("prj_1")) == 2


async def test_table_uses_its_own_name_and_wal_in_a_shared_file(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with sqlite3.connect(path) as other:  # the session store's own table, created first
        other.execute("CREATE TABLE session (id TEXT PRIMARY KEY)")
    async with SavedApprovals(path) as approvals:
        await approvals.add("prj_1", "edit", ["*"])
    conn = sqlite3.connect(path)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"session", "permission_saved"} <= tables
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


_CHILD = """
import anyio, json, sys
from tether.permissions import SavedApprovals

async def main():
    async with SavedApprovals(sys.argv[1]) as saved:
        if sys.argv[2] == "add":
            await saved.add("prj_1", "bash", ["npm test"])
        print(json.dumps([[a.project, a.action, a.resource] for a in await saved.list()]))

anyio.run(main)
"""


async def test_saved_approvals_survive_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with SavedApprovals(path) as approvals:
        await approvals.add("prj_1", "bash", ["git *"])
    child = await anyio.run_process([sys.executable, "-c", _CHILD, str(path), "add"])
    assert json.loads(child.stdout) == [["prj_1", "bash", "git *"], ["prj_1", "bash", "npm test"]]
    async with SavedApprovals(path) as approvals:
        assert [a.resource for a in await approvals.list("prj_1")] == ["git *", "npm test"]


async def test_own_changes_are_seen_at_once_and_reads_are_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SavedApprovals(tmp_path / "t.db") as saved:
        reads = 0
        run = saved._run

        async def counting(work: object) -> object:
            nonlocal reads
            reads += 1
            return await run(work)  # type: ignore[arg-type]

        monkeypatch.setattr(saved, "_run", counting)
        assert list(await saved.rules("prj")) == []
        assert list(await saved.rules("prj")) == []
        assert reads == 1  # the second check within the refresh period reads nothing
        added = await saved.add("prj", "bash", ["git *"])
        assert list(await saved.rules("prj")) == [Rule("bash", "git *", "allow")]
        await saved.remove(added[0].id)
        assert list(await saved.rules("prj")) == []


async def test_checks_arriving_together_share_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SavedApprovals(tmp_path / "t.db") as saved:
        await saved.add("prj", "bash", ["git *"])
        saved._fresh.clear()  # as after the refresh period
        reads = 0
        run = saved._run

        async def counting(work: object) -> object:
            nonlocal reads
            reads += 1
            return await run(work)  # type: ignore[arg-type]

        monkeypatch.setattr(saved, "_run", counting)
        results: list[list[Rule]] = []

        async def check() -> None:
            results.append(list(await saved.rules("prj")))

        async with anyio.create_task_group() as tg:
            for _ in range(50):  # a parallel step's calls all check at once
                tg.start_soon(check)
        assert reads == 1
        assert results == [[Rule("bash", "git *", "allow")]] * 50


async def test_changes_by_another_process_are_seen_within_the_refresh_period(tmp_path: Path) -> None:
    async with (
        SavedApprovals(tmp_path / "t.db", refresh=3600) as slow,
        SavedApprovals(tmp_path / "t.db", refresh=0) as eager,
        SavedApprovals(tmp_path / "t.db") as other,
    ):
        assert list(await slow.rules("prj")) == [] and list(await eager.rules("prj")) == []
        await other.add("prj", "edit", ["*"])
        assert list(await eager.rules("prj")) == [Rule("edit", "*", "allow")]
        assert list(await slow.rules("prj")) == []  # bounded staleness: re-read after `refresh` seconds


class _SecretDatabase:
    """An ``ApprovalsDatabase`` other than the default file: a SQLite file reached under a name with a secret.

    What a store room provides (``tether.store.PgSavedApprovals`` is the real one, tested in tests/postgres).
    """

    name = "db://approvals:***@here/approvals"
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, path: Path, *, reachable: bool = True) -> None:
        self.path = path
        self.reachable = reachable
        self.connections = 0

    def redact(self, text: str) -> str:
        return text.replace("hunter2", "***")

    def connect(self) -> sqlite3.Connection:
        self.connections += 1
        if not self.reachable:
            raise sqlite3.OperationalError("cannot reach db://approvals:hunter2@here/approvals")
        conn = sqlite3.connect(self.path, check_same_thread=False)
        with conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS permission_saved (id TEXT PRIMARY KEY, project TEXT NOT NULL, "
                "action TEXT NOT NULL, resource TEXT NOT NULL, UNIQUE (project, action, resource))"
            )
        return conn


async def test_saved_approvals_live_in_a_database_the_store_room_provides(tmp_path: Path) -> None:
    database = _SecretDatabase(tmp_path / "elsewhere.db")
    async with SavedApprovals(database, refresh=0) as saved:
        assert saved.path == database.name
        assert [a.resource for a in await saved.add("prj", "bash", ["git *", "git *"])] == ["git *"]
        assert (await saved.add("prj", "bash", ["git *"])) == []
        assert [r.resource for r in (await saved.rules("prj")).rules] == ["git *"]
        (approval,) = await saved.list("prj")
        await saved.remove(approval.id)
        assert await saved.list() == []
    assert database.connections == 1  # one connection, reused, closed with the approvals
    with sqlite3.connect(tmp_path / "elsewhere.db") as conn:
        assert conn.execute("SELECT count(*) FROM permission_saved").fetchone() == (0,)


async def test_a_database_error_names_the_database_and_never_its_secret(tmp_path: Path) -> None:
    async with SavedApprovals(_SecretDatabase(tmp_path / "x.db", reachable=False)) as saved:
        with pytest.raises(StoreError) as caught:
            await saved.list()
    message = str(caught.value)
    assert message.startswith("Saved approvals (db://approvals:***@here/approvals): cannot reach")
    assert "hunter2" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


async def test_fresh_answers_without_reading_only_within_the_refresh_period(tmp_path: Path) -> None:
    async with (
        SavedApprovals(tmp_path / "t.db", refresh=3600) as slow,
        SavedApprovals(tmp_path / "t.db", refresh=0) as eager,
    ):
        await slow.add("prj_1", "bash", ["ls"])
        assert slow.fresh("prj_1") is None  # nothing read yet: the caller reads (rules)
        read = await slow.rules("prj_1")
        assert slow.fresh("prj_1") is read and slow.fresh("prj_2") is None
        await slow.add("prj_1", "bash", ["pwd"])
        assert slow.fresh("prj_1") is None  # this process's own change is seen at once
        await eager.rules("prj_1")
        assert eager.fresh("prj_1") is None  # past the refresh period at once

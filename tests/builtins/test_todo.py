"""todowrite / todoread: the session's todo list in the real SQLite store, through the full settle pipeline."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tether.builtins import BuiltinDeps, builtin_tools
from tether.bus import Bus
from tether.cli._jsonevents import events_adapter
from tether.content import text_of
from tether.errors import BlockedError
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import PermissionRequest
from tether.store import SQLiteStore
from tether.store.internal import Todo, TodoUpdated
from tether.tools import Completed, Failed, ToolCall, ToolContext, ToolRegistry

from ..cli.conftest import Cli

pytestmark = pytest.mark.anyio


class Rules:
    """A permission fake: records requests; ``deny`` names the actions refused."""

    def __init__(self, deny: tuple[str, ...] = ()) -> None:
        self.deny = deny
        self.asked: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    async def assert_(self, request: PermissionRequest) -> None:
        self.asked.append((request.action, tuple(request.resources), tuple(request.save)))
        if request.action in self.deny:
            raise BlockedError(
                f"Permission denied: {request.action}", action=request.action, resources=("*",)
            )


class Todos:
    def __init__(self, root: Path, store: SQLiteStore, rules: Rules) -> None:
        self.store = store
        self.rules = rules
        self.bus = Bus()
        self.published: list[TodoUpdated] = []
        self.bus.subscribe(TodoUpdated, self.published.append)
        deps = BuiltinDeps(
            location=Location(root),
            permissions=rules,  # type: ignore[arg-type]
            output=OutputStore(root.parent / "out"),
            todos=store,
            bus=self.bus,
        )
        self.registry = ToolRegistry(output=OutputStore(root.parent / "out"))
        self.registry.register(builtin_tools(deps))
        self.n = 0

    async def call(self, name: str, session: str = "ses_a", **input: Any) -> Completed | Failed:
        self.n += 1
        ctx = ToolContext(session_id=session, agent="build", message_id="msg_1", call_id=f"call_{self.n}")
        step = self.registry.materialize(rules=[])
        return await step.settle(ToolCall(call_id=f"call_{self.n}", name=name, input=input), ctx)

    async def json(self, name: str, session: str = "ses_a", **input: Any) -> Any:
        outcome = await self.call(name, session, **input)
        assert isinstance(outcome, Completed), outcome
        return json.loads(text_of(outcome.content))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "tether.db") as opened:
        yield opened


@pytest.fixture
def todos(tmp_path: Path, store: SQLiteStore) -> Todos:
    root = tmp_path / "project"
    root.mkdir()
    return Todos(root, store, Rules())


PLAN = [
    {"content": "Read the failing test", "status": "completed", "priority": "high"},
    {"content": "Fix the parser", "status": "in_progress", "priority": "high"},
    {"content": "Update the docs", "status": "pending"},
]


async def test_todowrite_stores_the_list_and_todoread_returns_it(todos: Todos) -> None:
    written = await todos.json("todowrite", todos=PLAN)
    assert written == [
        {"content": "Read the failing test", "status": "completed", "priority": "high", "id": "1"},
        {"content": "Fix the parser", "status": "in_progress", "priority": "high", "id": "2"},
        {"content": "Update the docs", "status": "pending", "priority": "medium", "id": "3"},
    ]
    assert await todos.json("todoread") == written
    assert await todos.store.load_todos("ses_a") == tuple(
        Todo(id=t["id"], content=t["content"], status=t["status"], priority=t["priority"]) for t in written
    )
    # the other session has its own (empty) list
    assert await todos.json("todoread", session="ses_b") == []


async def test_the_title_counts_unfinished_items_as_opencode_does(todos: Todos) -> None:
    outcome = await todos.call("todowrite", todos=PLAN)
    assert isinstance(outcome, Completed)
    assert outcome.metadata is not None and outcome.metadata["open"] == 2


async def test_a_rewrite_replaces_the_whole_list_and_keeps_ids_of_unchanged_items(todos: Todos) -> None:
    await todos.json("todowrite", todos=PLAN)
    rewritten = await todos.json(
        "todowrite",
        todos=[
            {"content": "Update the docs", "status": "in_progress"},
            {"content": "Fix the parser", "status": "completed", "priority": "high"},
            {"content": "Run the whole suite", "status": "pending", "priority": "low"},
        ],
    )
    assert [(t["id"], t["content"]) for t in rewritten] == [
        ("3", "Update the docs"),
        ("2", "Fix the parser"),
        ("1", "Run the whole suite"),  # "1" is free again: its item left the list
    ]
    assert len(await todos.store.load_todos("ses_a")) == 3


async def test_the_bus_hears_only_changes(todos: Todos) -> None:
    await todos.json("todowrite", todos=PLAN)
    await todos.json("todowrite", todos=PLAN)  # the same list again: nothing changed
    assert len(todos.published) == 1
    assert todos.published[0].session_id == "ses_a" and len(todos.published[0].todos) == 3
    await todos.json("todowrite", todos=[])
    assert len(todos.published) == 2 and todos.published[1].todos == ()
    assert await todos.json("todoread") == []


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([{"content": "x", "status": "done"}], "status"),
        ([{"content": "x", "status": "pending", "priority": "urgent"}], "priority"),
        ([{"content": "", "status": "pending"}], "content"),
        ([{"content": "x" * 4001, "status": "pending"}], "content"),
        ([{"content": "x", "status": "pending", "colour": "red"}], "colour"),
        ([{"content": f"t{i}", "status": "pending"} for i in range(201)], "todos"),
    ],
)
async def test_invalid_items_are_refused_with_the_field_named(
    todos: Todos, items: Any, expected: str
) -> None:
    outcome = await todos.call("todowrite", todos=items)
    assert isinstance(outcome, Failed)
    assert expected in outcome.error
    assert await todos.store.load_todos("ses_a") == ()  # nothing was written


async def test_duplicate_ids_are_refused_and_the_list_is_kept(todos: Todos) -> None:
    await todos.json("todowrite", todos=PLAN)
    outcome = await todos.call(
        "todowrite",
        todos=[
            {"content": "a", "status": "pending", "id": "x"},
            {"content": "b", "status": "pending", "id": "x"},
        ],
    )
    assert isinstance(outcome, Failed)
    assert "unique" in outcome.error and "'x'" in outcome.error
    assert len(await todos.store.load_todos("ses_a")) == 3


async def test_given_ids_are_kept_and_numbers_skip_them(todos: Todos) -> None:
    written = await todos.json(
        "todowrite",
        todos=[{"content": "a", "status": "pending", "id": "1"}, {"content": "b", "status": "pending"}],
    )
    assert [t["id"] for t in written] == ["1", "2"]


async def test_permissions_are_asked_with_star_and_a_deny_writes_nothing(
    tmp_path: Path, store: SQLiteStore
) -> None:
    root = tmp_path / "p2"
    root.mkdir()
    rules = Rules(deny=("todowrite",))
    denied = Todos(root, store, rules)
    outcome = await denied.call("todowrite", todos=PLAN)
    assert isinstance(outcome, Failed) and outcome.kind == "blocked"
    assert await store.load_todos("ses_a") == ()
    assert denied.published == []
    assert await denied.json("todoread") == []
    assert rules.asked == [("todowrite", ("*",), ("*",)), ("todoread", ("*",), ("*",))]


async def test_the_worst_sender_text_is_stored_exactly_or_refused(todos: Todos) -> None:
    hostile = "a\x00b\u202e' ); DROP TABLE todos; --\n\x1b[2J"
    written = await todos.json("todowrite", todos=[{"content": hostile, "status": "pending", "id": "'; --"}])
    assert written[0]["content"] == hostile and written[0]["id"] == "'; --"
    assert (await todos.store.load_todos("ses_a"))[0].content == hostile
    # a lone surrogate is not a string the input accepts: refused before anything is written
    outcome = await todos.call("todowrite", todos=[{"content": "a\ud800", "status": "pending"}])
    assert isinstance(outcome, Failed) and outcome.kind == "invalid_input"
    assert (await todos.store.load_todos("ses_a"))[0].content == hostile
    await todos.store.flush()  # the writer is alive


async def test_parallel_writes_replace_the_list_one_after_the_other(todos: Todos) -> None:
    import anyio

    async def write(i: int) -> None:
        await todos.json("todowrite", todos=[{"content": f"task {i}", "status": "pending", "id": f"t{i}"}])

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(write, i)
    stored = await todos.store.load_todos("ses_a")
    assert len(stored) == 1
    assert todos.published[-1].todos == stored  # the last list the bus heard is the one stored
    assert len(todos.published) == 20


async def test_the_list_survives_reopening_the_store(tmp_path: Path) -> None:
    path = tmp_path / "db" / "tether.db"
    root = tmp_path / "project"
    root.mkdir()
    async with SQLiteStore(path) as first:
        await Todos(root, first, Rules()).json("todowrite", todos=PLAN)
    async with SQLiteStore(path) as second:
        assert [t.content for t in await second.load_todos("ses_a")] == [p["content"] for p in PLAN]


async def test_reading_the_list_is_one_key_range_not_a_scan(tmp_path: Path, todos: Todos) -> None:
    await todos.json("todowrite", todos=PLAN)
    await todos.store.flush()
    conn = sqlite3.connect(tmp_path / "tether.db")
    try:
        plan = " ".join(
            row[3]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT id, content, status, priority FROM todos WHERE session_id = ? "
                "ORDER BY position",
                ("ses_a",),
            )
        )
    finally:
        conn.close()
    assert "SEARCH todos USING PRIMARY KEY (session_id=?)" in plan
    assert "TEMP B-TREE" not in plan  # no sort: the key's order is the list's order


def test_session_show_and_the_json_stream_show_the_list(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    write = {"name": "todowrite", "arguments": {"todos": PLAN}}
    again = {"name": "todowrite", "arguments": {"todos": PLAN}}
    model = cli.script([{"tool_calls": [write]}, {"tool_calls": [again]}, {"text": "Planned."}])
    result = cli.run("run", "plan it", "--model", model, "--dir", str(project), "--format", "json")
    assert result.code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    for line in lines:
        events_adapter().validate_python(line)  # the todo event is part of the declared schema
    todo_events = [e for e in lines if e["type"] == "todo"]
    assert len(todo_events) == 1  # the second call changed nothing
    assert [t["status"] for t in todo_events[0]["todos"]] == ["completed", "in_progress", "pending"]
    session = lines[0]["session"]
    shown = cli.run("session", "show", session)
    assert shown.code == 0, shown.output
    assert "todos (2 open)" in shown.stdout
    assert "[~] Fix the parser  (high, id 2)" in shown.stdout
    assert "[x] Read the failing test" in shown.stdout
    document = cli.json("session", "show", session, "--json")
    assert [t["content"] for t in document["todos"]] == [p["content"] for p in PLAN]


def test_deleting_a_session_deletes_its_list(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    model = cli.script(
        [{"tool_calls": [{"name": "todowrite", "arguments": {"todos": PLAN}}]}, {"text": "ok"}]
    )
    result = cli.run("run", "plan", "--model", model, "--dir", str(project), "--format", "json")
    assert result.code == 0, result.output
    session = json.loads(result.stdout.splitlines()[0])["session"]
    assert cli.run("session", "delete", session, "--yes").code == 0
    conn = sqlite3.connect(cli.data_dir / "tether.db")
    try:
        assert conn.execute("SELECT count(*) FROM todos").fetchone()[0] == 0
    finally:
        conn.close()

"""The task tool: real child sessions in a real Runtime (SQLite store, files in tmp_path), one scripted model serving
the parent's and the children's steps (each conversation is told apart by its first user message)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.config import Config, parse_config
from tether.llm import ModelRequest, ToolMessage, UserMessage
from tether.permissions import PermissionAsked
from tether.session import Session, ToolPart
from tether.session.internal import MAX_DEPTH
from tether.testing import FunctionModel, tool_call
from tether.tools import Text, Tool, ToolContext

pytestmark = pytest.mark.anyio


def first_user_text(request: ModelRequest) -> str:
    for message in request.messages:
        if isinstance(message, UserMessage):
            return "".join(p.text for p in message.content if isinstance(p, Text))
    return ""


def last_tool_text(request: ModelRequest) -> str:
    message = request.messages[-1]
    if isinstance(message, ToolMessage):
        return "\n".join(p.text for r in message.results for p in r.content if isinstance(p, Text))
    return ""


class Conversations:
    """One model for every session: each conversation (by its first user message) plays its own script in order."""

    def __init__(self, scripts: Mapping[str, Sequence[Any | Callable[[ModelRequest], Any]]]) -> None:
        self.scripts = {key: list(steps) for key, steps in scripts.items()}
        self.requests: dict[str, list[ModelRequest]] = {}
        self.model = FunctionModel(self._step)

    def _step(self, request: ModelRequest) -> Any:
        key = first_user_text(request)
        self.requests.setdefault(key, []).append(request)
        steps = self.scripts[key]
        assert steps, f"no step left for {key!r}"
        step = steps.pop(0)
        return step(request) if callable(step) else step

    def tools(self, key: str, n: int = 0) -> list[str]:
        return [d.name for d in self.requests[key][n].tools]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("the secret word is heron\n")
    return root


def config(project: Path, data: dict[str, Any] | None = None) -> Config:
    return parse_config(data or {}, file=str(project / "tether.json"))


async def parts(session: Session) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]


def task(prompt: str, agent: str = "explore", *, id: str | None = None, task_id: str | None = None) -> Any:
    args: dict[str, Any] = {"description": "look around", "prompt": prompt, "subagent_type": agent}
    if task_id is not None:
        args["task_id"] = task_id
    return tool_call("task", args, id=id)


async def test_a_subagent_runs_in_a_child_session_and_its_final_text_is_the_content(
    tmp_path: Path, project: Path
) -> None:
    convo = Conversations(
        {
            "find the word": [[task("read notes.txt and say the word", id="t1")], "the parent is done"],
            "read notes.txt and say the word": [
                [tool_call("read", {"path": "notes.txt"}, id="r1")],
                lambda request: "The word is heron." if "heron" in last_tool_text(request) else "no word",
            ],
        }
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(20):
            result = await session.prompt("find the word", model=convo.model)
        assert result.stop == "done" and result.text == "the parent is done"
        (call,) = await parts(session)
        assert call.state == "completed", call.error
        child_id = call.metadata["session_id"]
        text = call.content[0].text  # type: ignore[union-attr]
        assert text.startswith(
            f'<task id="{child_id}" state="completed">\n<task_result>\nThe word is heron.\n'
        )
        assert f"task_id: {child_id}" in text
        assert call.metadata["agent"] == "explore" and call.metadata["model"] == convo.model.name
        child = await rt.sessions.get(child_id)
        assert child.info.parent_id == session.id and child.info.parent_call_id == "t1"
        assert child.info.agent == "explore" and child.info.title == "look around (@explore subagent)"
        (read,) = await parts(child)  # the child's calls are recorded in the child's own session
        assert read.tool == "read" and read.state == "completed"
        stored = await rt.store.get_session(child_id)  # durable: the link survives a reopen
        assert stored.parent_id == session.id and stored.parent_call_id == "t1"
        # the child runs explore's catalog: no task (a subagent spawns none by default), no question, no edits
        child_tools = convo.tools("read notes.txt and say the word")
        assert "read" in child_tools and "task" not in child_tools
        assert not {"question", "edit", "write", "bash"} & set(child_tools)


async def test_the_description_lists_the_subagents_the_calling_agent_may_run(
    tmp_path: Path, project: Path
) -> None:
    data = {
        "agent": {
            "lead": {"mode": "primary", "permission": {"task": {"explore": "deny"}}},
            "secret": {"mode": "subagent", "hidden": True, "description": "never listed"},
            "reviewer": {"mode": "subagent", "description": "Reviews a change."},
        }
    }
    convo = Conversations(
        {
            "as build": ["ok"],
            "as lead": [[task("look", "explore", id="x1")], "refused"],
        }
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project, data)) as rt:
        build = await rt.sessions.create(project)
        lead = await rt.sessions.create(project, agent="lead")
        with anyio.fail_after(20):
            await build.prompt("as build", model=convo.model)
            await lead.prompt("as lead", model=convo.model)

        def described(key: str) -> str:
            (definition,) = [d for d in convo.requests[key][0].tools if d.name == "task"]
            return definition.description

        assert "- explore: A fast, read-only subagent" in described("as build")
        assert "- general: A general-purpose subagent" in described("as build")
        assert "- general:" in described("as lead") and "- explore:" not in described("as lead")
        assert "- build:" not in described("as build")  # primary agents are never listed
        assert "- reviewer: Reviews a change." in described("as build")  # a configured subagent
        assert "secret" not in described("as build")  # hidden: true leaves it out of the list
        # hiding is not authorization: the call asks `task` with the subagent's name and the rule denies it
        (call,) = await parts(lead)
        assert call.state == "error" and call.error_kind == "blocked"
        assert 'Permission denied: task on "explore"' in (call.error or "")
        assert [s.agent for s in await rt.sessions.list()].count("explore") == 0


async def test_an_unknown_or_primary_subagent_is_refused_with_the_available_names(
    tmp_path: Path, project: Path
) -> None:
    convo = Conversations({"go": [[task("x", "nobody", id="a"), task("x", "plan", id="b")], "done"]})
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(20):
            await session.prompt("go", model=convo.model)
        unknown, primary = await parts(session)
        for part, name in ((unknown, "nobody"), (primary, "plan")):
            assert part.state == "error" and part.error_kind == "tool"
            assert f"Unknown agent type: {name} is not a valid agent type." in (part.error or "")
            assert "Available subagents: explore, general." in (part.error or "")
        assert len(await rt.sessions.list()) == 1  # no child was created


async def test_a_task_is_resumed_with_its_task_id_and_a_foreign_task_id_is_refused(
    tmp_path: Path, project: Path
) -> None:
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        other = await rt.sessions.create(project)  # a session that is not a child of the parent
        session = await rt.sessions.create(project)
        first = Conversations({"first": [[task("remember 7", id="c1")], "ok"], "remember 7": ["remembered"]})
        with anyio.fail_after(20):
            await session.prompt("first", model=first.model)
        child_id = (await parts(session))[0].metadata["session_id"]

        second = Conversations(
            {
                "first": [
                    [
                        task("what did I say?", id="c2", task_id=child_id),
                        task("hijack", id="c3", task_id=other.id),
                        task("wrong agent", "general", id="c4", task_id=child_id),
                    ],
                    "done",
                ],
                "remember 7": [
                    lambda request: "you said 7" if len(request.messages) == 3 else "lost the context",
                ],
            }
        )
        with anyio.fail_after(20):
            await session.prompt("second", model=second.model)
        resumed, foreign, wrong = (await parts(session))[1:]
        assert resumed.state == "completed" and resumed.metadata["session_id"] == child_id
        assert "you said 7" in resumed.content[0].text  # type: ignore[union-attr]
        assert foreign.state == "error" and f"task_id {other.id} is not a task of this session" in (
            foreign.error or ""
        )
        assert wrong.state == "error" and "is a task of the explore subagent, not general" in (
            wrong.error or ""
        )
        child = await rt.sessions.get(child_id)
        users = [m for m in await child.messages() if m.info.role == "user"]
        assert len(users) == 2  # a new turn in the same child session
        assert await other.messages() == []  # the foreign session was never prompted


def waiting_tool(started: anyio.Event, release: anyio.Event | None = None) -> Tool[Any, Any]:
    async def execute(input: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        if release is None:
            await anyio.sleep_forever()
        else:
            await release.wait()
        return "released"

    return Tool(description="Wait", input={"type": "object", "properties": {}}, execute=execute)


async def test_cancelling_the_parent_cancels_the_child_and_its_blocked_call(
    tmp_path: Path, project: Path
) -> None:
    data = {"agent": {"explore": {"permission": {"wait": "allow"}}}}
    started = anyio.Event()
    convo = Conversations(
        {"go": [[task("wait forever", id="t1")]], "wait forever": [[tool_call("wait", {}, id="w1")]]}
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project, data)) as rt:
        with rt.tools.register({"wait": waiting_tool(started)}):
            session = await rt.sessions.create(project)
            result = None

            async def run() -> None:
                nonlocal result
                result = await session.prompt("go", model=convo.model)

            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run)
                    await started.wait()
                    session.cancel()
        assert result is not None and result.stop == "cancelled"
        (call,) = await parts(session)
        assert call.state == "error" and call.interrupted
        (child_info,) = [s for s in await rt.sessions.list() if s.parent_id == session.id]
        child = await rt.sessions.get(child_info.id)
        assert not child.busy and child_info.parent_call_id == "t1"
        (wait,) = await parts(child)
        assert wait.tool == "wait" and wait.state == "error" and wait.interrupted


async def test_parallel_task_calls_run_their_children_at_the_same_time(tmp_path: Path, project: Path) -> None:
    # each child waits until both have started: run one after the other, the first would wait forever
    data = {"agent": {"explore": {"permission": {"meet": "allow"}}}}
    arrived: list[str] = []
    both = anyio.Event()

    async def meet(input: dict[str, Any], ctx: ToolContext) -> str:
        arrived.append(ctx.session_id)
        if len(arrived) == 2:
            both.set()
        await both.wait()
        return "met"

    meeting = Tool(description="Meet", input={"type": "object", "properties": {}}, execute=meet)
    convo = Conversations(
        {
            "go": [[task("left", id="l"), task("right", id="r")], "both done"],
            "left": [[tool_call("meet", {})], "left met"],
            "right": [[tool_call("meet", {})], "right met"],
        }
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project, data)) as rt:
        with rt.tools.register({"meet": meeting}):
            session = await rt.sessions.create(project)
            with anyio.fail_after(20):
                result = await session.prompt("go", model=convo.model)
    assert result.text == "both done" and len(set(arrived)) == 2
    left, right = result.calls
    assert "left met" in left.content and "right met" in right.content


async def test_a_childs_permission_request_carries_its_session_and_agent(
    tmp_path: Path, project: Path
) -> None:
    data = {"agent": {"explore": {"permission": {"read": {"notes.txt": "ask"}}}}}
    convo = Conversations(
        {
            "go": [[task("read the notes", id="t1")], "done"],
            "read the notes": [[tool_call("read", {"path": "notes.txt"})], "read them"],
        }
    )
    asked: list[PermissionAsked] = []
    async with Runtime(data_dir=tmp_path / "data", config=config(project, data)) as rt:
        session = await rt.sessions.create(project)

        def approve(event: PermissionAsked) -> None:
            asked.append(event)
            tg.start_soon(rt.permissions.reply, event.request.id, "once")

        with rt.bus.subscribe(PermissionAsked, approve), anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                result = await session.prompt("go", model=convo.model)
        (event,) = asked
        request = event.request.request
        child_id = (await parts(session))[0].metadata["session_id"]
        assert request.session_id == child_id and request.agent == "explore" and request.action == "read"
        assert result.text == "done"


async def test_nested_tasks_stop_at_the_depth_limit(tmp_path: Path, project: Path) -> None:
    data = {"agent": {"deep": {"mode": "subagent", "permission": {"task": "allow"}}}}

    def step(request: ModelRequest) -> Any:
        if isinstance(request.messages[-1], ToolMessage):
            return f"result: {last_tool_text(request)}"
        return [tool_call("task", {"description": "go deeper", "prompt": "deeper", "subagent_type": "deep"})]

    model = FunctionModel(step)
    async with Runtime(data_dir=tmp_path / "data", config=config(project, data)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(30):
            result = await session.prompt("start", model=model)
        sessions = await rt.sessions.list()
    assert len(sessions) == 1 + MAX_DEPTH
    assert f"the most tether allows is {MAX_DEPTH}" in result.text


async def test_a_subagent_runs_with_its_configured_model_else_the_parents(
    tmp_path: Path, project: Path
) -> None:
    from tether.session.internal import Children, ChildRequest
    from tether.testing import ScriptedModel

    data = {"agent": {"reviewer": {"mode": "subagent", "model": "other/reviewer-model"}}}
    other = ScriptedModel(["reviewed by the other model"])
    parent_model = ScriptedModel(["hello", "explored with the parent's model"])
    async with Runtime(data_dir=tmp_path / "data", config=config(project, data)) as rt:
        specs: list[str] = []

        def resolve(spec: str) -> Any:
            specs.append(spec)
            return other

        children = Children(
            sessions=rt.sessions, info=rt.store.get_session, agents=rt.agents, resolve_model=resolve
        )
        parent = await rt.sessions.create(project)
        with anyio.fail_after(20):
            await parent.prompt("hi", model=parent_model)  # the parent's model is that of its (last) turn
            reviewed = await children.run(
                ChildRequest(
                    parent_session=parent.id, parent_call="c1", agent="reviewer", prompt="x", description="d"
                )
            )
            explored = await children.run(
                ChildRequest(
                    parent_session=parent.id, parent_call="c2", agent="explore", prompt="y", description="d"
                )
            )
    assert specs == ["other/reviewer-model"]
    assert reviewed.model == other.name and reviewed.text == "reviewed by the other model"
    assert explored.model == parent_model.name and explored.text == "explored with the parent's model"


async def test_a_child_keeps_the_parent_sessions_denials(tmp_path: Path, project: Path) -> None:
    # the parent session denies this edit; general (which may edit) must not write it through a child session either
    convo = Conversations(
        {
            "go": [[task("write a file", "general", id="t1")], "done"],
            "write a file": [[tool_call("write", {"path": "canary.txt", "content": "x"})], "tried"],
        }
    )
    async with Runtime(data_dir=tmp_path / "data", config=config(project)) as rt:
        session = await rt.sessions.create(
            project, rules=[("edit", "canary.txt", "deny"), ("read", "notes.txt", "allow")]
        )
        with anyio.fail_after(20):
            await session.prompt("go", model=convo.model)
        child = await rt.sessions.get((await parts(session))[0].metadata["session_id"])
        (write,) = await parts(child)
    assert write.state == "error" and write.error_kind == "blocked"
    assert not (project / "canary.txt").exists()
    inherited = {(r.action, r.resource, r.effect) for r in child.info.rules}
    assert ("edit", "canary.txt", "deny") in inherited and (
        "read",
        "notes.txt",
        "allow",
    ) not in inherited  # denies only
    assert {("task", "*", "deny"), ("todowrite", "*", "deny")} <= inherited

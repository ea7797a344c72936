"""Handle retention: a session handle lives while someone holds it, and ``get`` reopens a released one from the store.

Real parts: a SQLite file in tmp_path, scripted turns, and for the ``task`` child a real Runtime.
"""

from __future__ import annotations

import functools
import gc
import inspect
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.config import parse_config
from tether.llm import AssistantMessage, ModelRequest, TextContent, UserMessage
from tether.session import Session, ToolPart
from tether.testing import FunctionModel, ScriptedModel, tool_call
from tether.tools import Text, Tool, ToolContext

from .conftest import Harness

pytestmark = pytest.mark.anyio


def texts(request: ModelRequest) -> list[str]:
    """The user and assistant texts the model was sent, in order."""
    found: list[str] = []
    for message in request.messages:
        if isinstance(message, UserMessage | AssistantMessage):
            found.extend(p.text for p in message.content if isinstance(p, Text | TextContent))
    return found


def handles() -> int:
    """Every ``Session`` object this process still has, after a full collection (whoever holds them)."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Session))


async def test_a_session_nobody_holds_is_released_and_reopens_with_its_history(harness: Harness) -> None:
    sessions = harness.sessions
    session = await sessions.create(harness.loc, deps={"db": "handle"})
    model = ScriptedModel(["first answer", "second answer", "third answer"])
    with anyio.fail_after(5):
        await session.prompt("first question", model=model)
    session_id = session.id
    assert sessions.info(session_id) is not None
    del session
    gc.collect()
    assert session_id not in sessions._live  # pyright: ignore[reportPrivateUsage]
    assert sessions.info(session_id) is None  # permission resolution then reads the store

    reopened = await sessions.get(session_id)
    assert reopened.deps is None  # deps lived on the released handle only (documented)
    assert sessions.info(session_id) == reopened.info
    with anyio.fail_after(5):
        result = await reopened.prompt("second question", model=model)
    assert result.stop == "done" and result.text == "second answer"
    # the next turn's model saw the whole recorded conversation, replayed once from the store
    assert texts(model.requests[1]) == ["first question", "first answer", "second question"]
    with model, anyio.fail_after(5):
        await reopened.prompt("third question", model=model)
    # replayed once: the third turn appends to the in-memory history, nothing doubled
    assert texts(model.requests[2]) == [
        "first question",
        "first answer",
        "second question",
        "second answer",
        "third question",
    ]
    assert [m.info.role for m in await reopened.messages()] == ["user", "assistant"] * 3


async def test_a_held_session_is_never_duplicated(harness: Harness) -> None:
    sessions = harness.sessions
    held = await sessions.create(harness.loc)
    gc.collect()
    assert await sessions.get(held.id) is held

    dropped = (await sessions.create(harness.loc)).id
    gc.collect()
    assert dropped not in sessions._live  # pyright: ignore[reportPrivateUsage]
    got: list[Session] = []

    async def get() -> None:
        got.append(await sessions.get(dropped))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:  # both miss the live map, both read the store
            for _ in range(4):
                tg.start_soon(get)
    assert len(got) == 4 and all(s is got[0] for s in got)
    assert await sessions.get(dropped) is got[0]


async def test_a_session_running_a_turn_is_not_released_mid_turn(harness: Harness) -> None:
    sessions = harness.sessions
    started, release = anyio.Event(), anyio.Event()

    async def wait(input: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        await release.wait()
        return "released"

    harness.tools.register({"wait": Tool(description="wait", input={"type": "object"}, execute=wait)})
    model = ScriptedModel([[tool_call("wait", {}, id="w1")], "done"])
    session = await sessions.create(harness.loc)
    session_id = session.id
    with model, anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                functools.partial(session.prompt, "go", model=model)
            )  # the turn holds it from here on
            del session
            await started.wait()
            gc.collect()
            running = await sessions.get(session_id)
            assert running.busy and sessions.info(session_id) is not None
            del running
            release.set()
    gc.collect()
    assert session_id not in sessions._live  # pyright: ignore[reportPrivateUsage]
    (part,) = [
        p for m in await harness.store.load_messages(session_id) for p in m.parts if isinstance(p, ToolPart)
    ]
    assert part.state == "completed"


async def test_a_thousand_prompted_then_dropped_sessions_hold_no_handles(harness: Harness) -> None:
    sessions = harness.sessions
    before = handles()
    counts: list[int] = []
    with anyio.fail_after(120):
        for n in range(1, 1001):
            session = await sessions.create(harness.loc)
            await session.prompt("hi", model=ScriptedModel([f"reply {n}"]))
            del session
            if n % 250 == 0:
                counts.append(handles() - before)
    assert counts == [0, 0, 0, 0]
    assert len(sessions._live) == 0  # pyright: ignore[reportPrivateUsage]
    stored = await harness.store.list_sessions(limit=2000)
    assert len(stored) == 1000  # released, not lost


async def test_a_resumed_task_child_takes_its_parents_deps_again(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = parse_config(
        {"agent": {"explore": {"permission": {"whose": "allow"}}}}, file=str(project / "tether.json")
    )
    seen: list[Any] = []

    def whose(input: dict[str, Any], ctx: ToolContext[Any]) -> str:
        seen.append(ctx.deps)
        return "noted"

    def step(request: ModelRequest) -> Any:
        first, last = texts(request)[0], request.messages[-1]
        asked = texts(request)[-1] if isinstance(last, UserMessage) else None
        if first == "parent":  # the parent starts the task, then resumes it by its id in its next turn
            if asked is None:
                return "parent done"
            resume = (
                {"prompt": "again", "task_id": child_ids[0]} if asked == "resume" else {"prompt": "child"}
            )
            args = {"description": "d", "subagent_type": "explore", **resume}
            return [tool_call("task", args)]
        return [tool_call("whose", {})] if asked is not None else "child done"

    child_ids: list[str] = []
    model = FunctionModel(step)
    deps = {"db": "the application's"}
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        with rt.tools.register({"whose": Tool(description="whose", input={"type": "object"}, execute=whose)}):
            parent = await rt.sessions.create(project, deps=deps)
            with anyio.fail_after(20):
                await parent.prompt("parent", model=model)
            (call,) = [p for m in await parent.messages() for p in m.parts if isinstance(p, ToolPart)]
            child_ids.append(call.metadata["session_id"])
            gc.collect()
            assert rt.sessions.service.info(child_ids[0]) is None  # the child was released after its turn
            with anyio.fail_after(20):
                await parent.prompt("resume", model=model)
    assert seen == [deps, deps]


async def test_a_child_whose_ancestors_were_released_still_reads_their_retained_outputs(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with Runtime(
        data_dir=tmp_path / "data", config=parse_config({}, file=str(project / "t.json"))
    ) as rt:
        grandparent = await rt.sessions.create(project)
        parent = await rt.sessions.create(project, parent_id=grandparent.id)
        child = await rt.sessions.create(project, parent_id=parent.id)
        chain = [child.id, parent.id, grandparent.id]
        del grandparent, parent
        gc.collect()
        assert [rt.sessions.service.info(i) is None for i in chain] == [False, True, True]
        resolved = rt._resolve_rules(child.id, None)  # pyright: ignore[reportPrivateUsage]
        if inspect.isawaitable(resolved):  # an ancestor is not open here: read from the store
            resolved = await resolved
        assert resolved is not None
        allowed = {
            r.resource
            for ruleset in resolved.rulesets
            for r in ruleset.rules
            if r.action == "external_directory" and r.effect == "allow"
        }
        for session_id in chain:
            assert f"{rt.output.session_directory(session_id).as_posix()}/*" in allowed
        assert [c.session_id for c in resolved.callers] == chain[1:]

"""Attack tests (review 2, hole 1): a subagent never does what the agent that called it may not.

A child session is decided as the stricter of its own rules and every caller's whole resolved rules (agent, config,
agent-config, project and session layers; parent, grandparent, ...): a caller's ``deny`` or ``ask`` is never loosened.
"""

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
from tether.testing import FunctionModel, tool_call
from tether.tools import Text

pytestmark = pytest.mark.anyio


def _first_user_text(request: ModelRequest) -> str:
    for message in request.messages:
        if isinstance(message, UserMessage):
            return "".join(p.text for p in message.content if isinstance(p, Text))
    return ""


def _conversations(scripts: Mapping[str, Sequence[Any | Callable[[ModelRequest], Any]]]) -> FunctionModel:
    """One model for every session: each conversation (by its first user message) plays its own steps in order."""
    steps = {key: list(value) for key, value in scripts.items()}

    def step(request: ModelRequest) -> Any:
        key = _first_user_text(request)
        if isinstance(request.messages[-1], ToolMessage) and not steps[key]:
            return "done"
        return steps[key].pop(0)

    return FunctionModel(step)


def _write(path: str) -> Any:
    return tool_call("write", {"path": path, "content": "written by a subagent\n"})


def _task(prompt: str, agent: str = "general") -> Any:
    return tool_call("task", {"description": "tidy up", "prompt": prompt, "subagent_type": agent})


def _config(project: Path, data: dict[str, Any] | None = None) -> Config:
    return parse_config(data or {}, file=str(project / "tether.json"))


async def _calls(session: Session) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]


async def _child_calls(rt: Runtime, session: Session) -> list[ToolPart]:
    (task,) = [p for p in await _calls(session) if p.tool == "task"]
    assert task.state == "completed", task.error
    return await _calls(await rt.sessions.get((task.metadata or {})["session_id"]))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def test_plan_agents_subagent_cannot_write(tmp_path: Path, project: Path) -> None:
    model = _conversations({"go": [[_task("tidy")]], "tidy": [[_write("pwned.txt")]]})
    async with Runtime(data_dir=tmp_path / "data", config=_config(project)) as rt:
        session = await rt.sessions.create(project, agent="plan")
        with anyio.fail_after(30):
            await session.prompt("go", model=model)
        (write,) = await _child_calls(rt, session)
    assert not (project / "pwned.txt").exists()
    assert write.state == "error"
    assert 'by the rule edit "*" -> deny (calling agent plan: agent)' in (write.error or "")


async def test_user_config_deny_of_the_calling_agent_binds_its_subagent(
    tmp_path: Path, project: Path
) -> None:
    data = {"agent": {"build": {"permission": {"edit": "deny", "bash": "deny"}}}}
    model = _conversations({"go": [[_task("tidy")]], "tidy": [[_write("pwned.txt")]]})
    async with Runtime(data_dir=tmp_path / "data", config=_config(project, data)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(30):
            await session.prompt("go", model=model)
        (write,) = await _child_calls(rt, session)
    assert not (project / "pwned.txt").exists()
    assert "(calling agent build: agent-config)" in (write.error or "")


async def test_a_subagent_still_writes_what_its_caller_may(tmp_path: Path, project: Path) -> None:
    model = _conversations({"go": [[_task("tidy")]], "tidy": [[_write("fine.txt")]]})
    async with Runtime(data_dir=tmp_path / "data", config=_config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(30):
            await session.prompt("go", model=model)
        (write,) = await _child_calls(rt, session)
    assert write.state == "completed", write.error
    assert (project / "fine.txt").read_text() == "written by a subagent\n"


async def test_a_grandchild_is_bound_by_its_grandparent(tmp_path: Path, project: Path) -> None:
    # helper may run subagents and edit; its caller (plan) may not edit: neither helper nor its general child writes
    data = {"agent": {"helper": {"mode": "subagent", "permission": {"task": "allow", "edit": "allow"}}}}
    model = _conversations(
        {
            "go": [[_task("delegate", "helper")]],
            "delegate": [[_write("by-helper.txt"), _task("tidy")]],
            "tidy": [[_write("by-grandchild.txt")]],
        }
    )
    async with Runtime(data_dir=tmp_path / "data", config=_config(project, data)) as rt:
        session = await rt.sessions.create(project, agent="plan")
        with anyio.fail_after(30):
            await session.prompt("go", model=model)
        helper_calls = await _child_calls(rt, session)
        (write, task) = helper_calls
        assert write.state == "error" and "calling agent plan" in (write.error or "")
        (grandchild_write,) = await _calls(await rt.sessions.get((task.metadata or {})["session_id"]))
    assert grandchild_write.state == "error" and "calling agent plan" in (grandchild_write.error or "")
    assert not (project / "by-helper.txt").exists() and not (project / "by-grandchild.txt").exists()


async def test_a_callers_session_ask_is_asked_in_the_child(tmp_path: Path, project: Path) -> None:
    # the parent session asks before writing *.md; the child's own rules allow it: the child must ask too
    model = _conversations({"go": [[_task("tidy")]], "tidy": [[_write("notes.md")]]})
    asked: list[PermissionAsked] = []
    async with Runtime(data_dir=tmp_path / "data", config=_config(project)) as rt:
        session = await rt.sessions.create(project, rules=[("edit", "*.md", "ask")])

        def reject(event: PermissionAsked) -> None:
            asked.append(event)
            tg.start_soon(rt.permissions.reply, event.request.id, "reject")

        with rt.bus.subscribe(PermissionAsked, reject), anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                await session.prompt("go", model=model)
        (write,) = await _child_calls(rt, session)
    (event,) = asked
    assert event.request.request.agent == "general" and event.request.request.action == "edit"
    assert write.state == "error" and not (project / "notes.md").exists()


async def test_a_child_prompted_on_its_own_later_is_still_bound(tmp_path: Path, project: Path) -> None:
    # the child reopened in a new runtime (its parent not open there): the caller's rules come from the store
    model = _conversations({"go": [[_task("tidy")]], "tidy": ["nothing yet", [_write("later.txt")]]})
    async with Runtime(data_dir=tmp_path / "data", config=_config(project)) as rt:
        session = await rt.sessions.create(project, agent="plan")
        with anyio.fail_after(30):
            await session.prompt("go", model=model)
        (task,) = await _calls(session)
        child_id = (task.metadata or {})["session_id"]
    async with Runtime(data_dir=tmp_path / "data", config=_config(project)) as rt:
        child = await rt.sessions.get(child_id)
        with anyio.fail_after(30):
            await child.prompt("again", model=model)
        (write,) = [p for p in await _calls(child) if p.tool == "write"]
    assert write.state == "error" and "calling agent plan" in (write.error or "")
    assert not (project / "later.txt").exists()

"""Runtime: wiring of stores, permissions, Locations with built-ins and sessions, end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.errors import UsageError
from tether.permissions import PermissionAsked
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call
from tether.tools import Text


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("hello from the project\n")
    return root


async def tool_parts(session: Any) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]


@pytest.mark.anyio
async def test_a_session_runs_built_in_tools_in_its_location(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        loc = await rt.location(project)
        assert await rt.location(str(project) + "/") is loc
        assert {"read", "write", "edit", "glob", "grep"} <= set(loc.builtins)
        assert loc.tools.parent is rt.tools
        session = await rt.sessions.create(loc)
        model = ScriptedModel([[tool_call("read", {"path": "notes.txt"})], "read it"])
        with model, anyio.fail_after(10):
            result = await session.prompt("read the notes", model=model)
        assert result.stop == "done" and result.text == "read it"
        (part,) = await tool_parts(session)
        assert part.state == "completed" and "hello from the project" in part.content[0].text  # type: ignore[union-attr]
        assert [s.id for s in await rt.sessions.list(project=str(loc.root))] == [session.id]
    assert (tmp_path / "data" / "tether.db").exists()


@pytest.mark.anyio
async def test_permission_decisions_are_recorded_on_the_tool_part(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, rules=[("read", "*", "ask")])
        send, receive = anyio.create_memory_object_stream[PermissionAsked](10)
        rt.bus.subscribe(PermissionAsked, send.send_nowait)
        model = ScriptedModel([[tool_call("read", {"path": "notes.txt"}, id="c1")], "done"])

        async def approve() -> None:
            asked = await receive.receive()
            await rt.permissions.reply(asked.request.id, "once")

        with model, send, receive, anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(approve)
                await session.prompt("read", model=model)
        (part,) = await tool_parts(session)
        assert part.state == "completed"
        events = [record["event"] for record in part.permissions]
        assert events == ["permission.asked", "permission.replied"]
        asked, replied = part.permissions
        assert asked["action"] == "read" and asked["resources"] == ["notes.txt"]
        verdict = asked["decision"]["verdicts"][0]
        assert verdict["effect"] == "ask" and verdict["source"] == "session"
        assert replied["reply"] == "once"


@pytest.mark.anyio
async def test_rule_decisions_without_asking_are_recorded_with_their_rule(
    tmp_path: Path, project: Path
) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, rules=[("read", "secret*", "deny")])
        (project / "secret.txt").write_text("top secret\n")
        model = ScriptedModel(
            [
                [
                    tool_call("read", {"path": "notes.txt"}, id="ok"),
                    tool_call("read", {"path": "secret.txt"}, id="no"),
                ],
                "done",
            ]
        )
        with model, anyio.fail_after(10):
            await session.prompt("read both", model=model)
        allowed, denied = await tool_parts(session)
        assert allowed.state == "completed" and denied.state == "error" and denied.error_kind == "blocked"
        (allow_record,) = allowed.permissions
        assert allow_record["event"] == "permission.decided" and allow_record["decision"]["effect"] == "allow"
        (deny_record,) = denied.permissions
        verdict = deny_record["decision"]["verdicts"][0]
        assert verdict["effect"] == "deny" and verdict["source"] == "session"
        assert verdict["rule"]["resource"] == "secret*"
        assert "top secret" not in (denied.error or "")


@pytest.mark.anyio
async def test_rejected_doom_loop_stops_the_turn(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)
        send, receive = anyio.create_memory_object_stream[PermissionAsked](10)
        rt.bus.subscribe(PermissionAsked, send.send_nowait)
        same = {"path": "notes.txt"}
        model = ScriptedModel(
            [[tool_call("read", same)], [tool_call("read", same)], [tool_call("read", same)]]
        )

        async def reject() -> None:
            asked = await receive.receive()
            assert asked.request.request.action == "doom_loop"
            await rt.permissions.reply(asked.request.id, "reject")

        with model, send, receive, anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(reject)
                result = await session.prompt("loop", model=model)
        assert result.stop == "declined"
        last = (await tool_parts(session))[-1]
        assert last.state == "error" and last.error_kind == "declined"
        assert [r["event"] for r in last.permissions] == ["permission.asked", "permission.replied"]


@pytest.mark.anyio
async def test_a_stored_session_is_reopened_by_a_new_runtime(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)
        first = ScriptedModel([[tool_call("read", {"path": "notes.txt"})], "first"])
        with first, anyio.fail_after(10):
            await session.prompt("one", model=first)
    async with Runtime(data_dir=tmp_path / "data") as rt:
        reopened = await rt.sessions.get(session.id)
        assert reopened.info.title == "one"
        second = ScriptedModel(["second"])
        with second, anyio.fail_after(10):
            await reopened.prompt("two", model=second)
        history = second.requests[0].messages
        assert len(history) == 5  # user, assistant call, tool result, assistant text, user
        assert history[-1].content == (Text("two"),)  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_unknown_agent_and_missing_directory_are_usage_errors(tmp_path: Path, project: Path) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        with pytest.raises(UsageError, match="Agent not found"):
            await rt.sessions.create(project, agent="nobody")
        with pytest.raises(UsageError):
            await rt.location(tmp_path / "missing")


def test_importing_tether_stays_light() -> None:
    code = "import sys, tether; print(sorted(m for m in sys.modules if m.startswith('tether')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert (
        out.strip() == "['tether', 'tether._version']"
    )  # the version string's ground-floor module, no imports


@pytest.mark.anyio
async def test_a_session_rule_with_an_invalid_effect_is_refused_not_ignored(
    tmp_path: Path, project: Path
) -> None:
    async with Runtime(data_dir=tmp_path / "data") as rt:
        with pytest.raises(UsageError, match=r"Invalid session rule \('bash', '\*', 'Deny'\)"):
            await rt.sessions.create(project, rules=[("bash", "*", "Deny")])
        assert await rt.sessions.list() == []

"""Retained outputs belong to their session: another project's session cannot read them without asking.

Two sessions in two projects share one runtime (one data directory). Each produces an output too large for the model,
so settle retains it under the data directory; each session then tries to read its own retained output and the other
one's with the real ``read`` tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tether import Runtime
from tether.config import parse_config
from tether.permissions import PermissionAsked
from tether.session import ToolPart
from tether.testing import ScriptedModel, tool_call
from tether.tools import Tool

pytestmark = pytest.mark.anyio


class Empty(BaseModel):
    pass


LOUD = Tool(description="Print many lines", input=Empty, execute=lambda _input, _ctx: "line\n" * 5000)


async def parts(session: Any) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]


async def run(session: Any, *calls: Any) -> list[ToolPart]:
    """One turn whose single step makes ``calls``; returns this turn's tool parts."""
    before = len(await parts(session))
    model = ScriptedModel([list(calls), "done"])
    with model, anyio.fail_after(20):
        await session.prompt("go", model=model)
    return (await parts(session))[before:]


def projects(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b


async def retained_by(session: Any) -> Path:
    (loud,) = await run(session, tool_call("loud", {}))
    assert loud.state == "completed" and len(loud.output_paths) == 1
    return Path(loud.output_paths[0])


async def test_a_session_reads_its_own_output_but_not_another_projects(tmp_path: Path) -> None:
    a, b = projects(tmp_path)
    config = parse_config({"permission": {"external_directory": "deny"}}, file="tether.json")
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        with rt.tools.register({"loud": LOUD}):
            first = await rt.sessions.create(a)
            second = await rt.sessions.create(b)
            mine = await retained_by(first)
            assert mine.parent.name == first.id
            (own,) = await run(first, tool_call("read", {"path": str(mine)}))
            assert own.state == "completed", own.error
            (theirs, store) = await run(
                second,
                tool_call("read", {"path": str(mine)}, id="c1"),
                tool_call("read", {"path": str(tmp_path / "data" / "tether.db")}, id="c2"),
            )
            assert theirs.state == "error" and "external_directory" in (theirs.error or "")
            assert store.state == "error" and "external_directory" in (store.error or "")
            second_own = await retained_by(second)
            (own,) = await run(second, tool_call("read", {"path": str(second_own)}))
            assert own.state == "completed", own.error


async def test_reading_another_sessions_output_asks_external_directory(tmp_path: Path) -> None:
    a, b = projects(tmp_path)
    async with Runtime(data_dir=tmp_path / "data") as rt:
        with rt.tools.register({"loud": LOUD}):
            first = await rt.sessions.create(a)
            second = await rt.sessions.create(b)
            mine = await retained_by(first)
            send, receive = anyio.create_memory_object_stream[PermissionAsked](10)
            asked: list[PermissionAsked] = []

            async def reject() -> None:
                event = await receive.receive()
                asked.append(event)
                await rt.permissions.reply(event.request.id, "reject", "not yours")

            with rt.bus.subscribe(PermissionAsked, send.send_nowait), send, receive:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(reject)
                    (theirs,) = await run(
                        second, tool_call("grep", {"pattern": "line", "path": str(mine.parent)})
                    )
            assert theirs.state == "error"
            (event,) = asked
            request = event.request.request
            assert request.action == "external_directory" and request.session_id == second.id
            assert request.resources == (f"{mine.parent.resolve().as_posix()}/*",)

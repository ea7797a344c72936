"""Code Mode inside whole turns: parallel inner calls, cancellation, a declined call, permission asks and how
``tether session show`` nests the inner calls under their execute call."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.errors import StoreError
from tether.permissions import PermissionAsked
from tether.session import PartUpdated, ToolPart
from tether.store import SQLiteStore
from tether.tools import AfterEvent, BeforeEvent, Tool, ToolContext

from .conftest import Script, codemode_config, execute, last_tool_text, tool_parts

pytestmark = pytest.mark.anyio

_EMPTY = {"type": "object", "properties": {}}


async def test_calls_the_code_awaits_together_run_in_parallel(tmp_path: Path, project: Path) -> None:
    # each call waits until both have started: run one after the other, the first would wait forever
    arrived: list[str] = []
    both = anyio.Event()

    async def meet(input: dict[str, Any], ctx: ToolContext) -> str:
        arrived.append(ctx.call_id)
        if len(arrived) == 2:
            both.set()
        await both.wait()
        return "met"

    code = "import asyncio\nawait asyncio.gather(tools.meet(), tools.meet())"
    script = Script([execute(code)], last_tool_text)
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        with rt.tools.register({"meet": Tool(description="Meet", input=_EMPTY, execute=meet)}):
            session = await rt.sessions.create(project)
            with anyio.fail_after(20):
                result = await session.prompt("go", model=script.model)
    assert result.text == 'Result: [\n "met",\n "met"\n]'
    assert len(set(arrived)) == 2  # two inner calls, two call ids


async def test_cancelling_the_turn_cancels_the_sandbox_and_its_inner_calls(
    tmp_path: Path, project: Path
) -> None:
    started = anyio.Event()

    async def wait(input: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("never")

    script = Script([execute("print('waiting')\nawait tools.wait()")])
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        with rt.tools.register({"wait": Tool(description="Wait", input=_EMPTY, execute=wait)}):
            session = await rt.sessions.create(project)
            result = None

            async def run() -> None:
                nonlocal result
                result = await session.prompt("go", model=script.model)

            with anyio.fail_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run)
                    await started.wait()
                    session.cancel()
        assert result is not None and result.stop == "cancelled"
        (call,) = await tool_parts(session)
        assert call.tool == "execute" and call.state == "error" and call.interrupted
        (child,) = [s for s in await rt.sessions.list() if s.parent_id == session.id]
        (inner,) = await tool_parts(await rt.sessions.get(child.id))
        assert inner.tool == "wait" and inner.state == "error" and inner.error_kind == "aborted"


async def test_a_cancelled_cpu_loop_kills_the_worker(tmp_path: Path, project: Path) -> None:
    script = Script([execute("while True:\n    pass")])
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        session = await rt.sessions.create(project)
        running = anyio.Event()

        def seen(event: PartUpdated) -> None:
            if isinstance(event.part, ToolPart) and event.part.state == "running":
                running.set()

        # far below the 60 s interpreter limit: the worker was killed, not timed out
        with rt.bus.subscribe(PartUpdated, seen), anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(session.prompt, "go", model=script.model))
                await running.wait()
                session.cancel()
        (call,) = await tool_parts(session)
        assert call.state == "error" and call.interrupted


async def test_an_inner_call_asks_with_the_calling_session_and_a_decline_stops_the_turn(
    tmp_path: Path, project: Path
) -> None:
    code = "await tools.bash(command='mkdir made', description='make a dir')\nprint('after')"
    script = Script([execute(code)], "never asked for")
    asked: list[PermissionAsked] = []
    # every command asks (under the sandbox, mkdir would run without a question)
    config = codemode_config(project, permission={"bash": {"*": "ask"}})
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        session = await rt.sessions.create(project)

        def decline(event: PermissionAsked) -> None:
            asked.append(event)
            tg.start_soon(rt.permissions.reply, event.request.id, "reject")

        with rt.bus.subscribe(PermissionAsked, decline), anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                result = await session.prompt("go", model=script.model)
        (event,) = asked
        assert event.request.request.session_id == session.id and event.request.request.action == "bash"
        assert result.stop == "declined" and len(script.steps) == 1  # the model was not called again
        (call,) = await tool_parts(session)
        assert call.state == "error" and call.error_kind == "declined"
        assert not (project / "made").exists()
        (child,) = [s for s in await rt.sessions.list() if s.parent_id == session.id]
        (bash,) = await tool_parts(await rt.sessions.get(child.id))
        assert bash.error_kind == "declined" and bash.permissions  # the ask and its reply, on the inner call


def test_session_show_nests_the_inner_calls_under_the_execute_call(tmp_path: Path, project: Path) -> None:
    async def turn() -> str:
        script = Script([execute("await tools.read(path='f0.txt')", id="ex1")], "done")
        async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
            session = await rt.sessions.create(project)
            await session.prompt("go", model=script.model)
            return session.id

    session_id = anyio.run(turn)
    env = {**os.environ, "TETHER_DATA_DIR": str(tmp_path / "data"), "NO_COLOR": "1", "COLUMNS": "160"}
    env["TETHER_CONFIG_DIR"] = str(tmp_path / "config")
    argv = [sys.executable, "-m", "tether.cli", "session", "show", session_id]
    shown = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, check=True).stdout
    document = json.loads(shown)
    (step,) = [item for item in document["timeline"] if item["type"] == "step" and item["parts"]][:1]
    (execute_part,) = [p for p in step["parts"] if p.get("tool") == "execute"]
    (nested,) = execute_part["subsessions"]
    inner = [p for item in nested["timeline"] if item["type"] == "step" for p in item["parts"]]
    assert [p["tool"] for p in inner] == ["read"] and inner[0]["state"] == "completed"
    text = subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout
    assert "execute" in text and "read" in text


async def test_task_is_not_callable_from_code(tmp_path: Path, project: Path) -> None:
    code = "await tools.task(description='look', prompt='say the word', subagent_type='explore')"
    script = Script([execute(code)], last_tool_text)
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        session = await rt.sessions.create(project)
        with anyio.fail_after(30):
            result = await session.prompt("go", model=script.model)
    assert "tools.task is not available inside execute" in result.text
    assert "- task(" not in script.requests[0].tools[0].description


async def test_hooks_run_around_execute_and_around_each_inner_call(tmp_path: Path, project: Path) -> None:
    seen: list[tuple[str, str, str]] = []

    def before(event: BeforeEvent) -> None:
        seen.append(("before", event.tool, event.session_id))
        if event.tool == "read":
            event.input = {**event.input, "path": "f2.txt"}  # a hook may rewrite an inner call's input

    def after(event: AfterEvent) -> None:
        seen.append(("after", event.tool, event.session_id))

    code = "out = await tools.read(path='f0.txt')\nout.count(': line')"
    script = Script([execute(code)], last_tool_text)
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        with rt.tools.before(before), rt.tools.after(after):
            session = await rt.sessions.create(project)
            with anyio.fail_after(20):
                result = await session.prompt("go", model=script.model)
    assert result.text == "Result: 3"  # f2.txt has three lines, f0.txt one
    assert seen == [
        ("before", "execute", session.id),
        ("before", "read", session.id),  # the calling session: rules and approvals apply as to a direct call
        ("after", "read", session.id),
        ("after", "execute", session.id),
    ]


async def test_a_refused_write_of_an_inner_call_stops_the_code_and_the_turn(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # law 12 (nothing runs unrecorded): the store fails writing the first inner call's result, as a full disk
    # would, and keeps failing, as SQLiteStore does; the code's next call must not run
    ran: list[str] = []
    real = SQLiteStore.append
    failed: list[StoreError] = []

    def append(store: SQLiteStore, event: Any) -> None:
        part = getattr(event, "part", None)
        if not failed and isinstance(part, ToolPart) and part.tool == "touch" and part.state == "completed":
            failed.append(StoreError("disk full"))
        if failed:
            raise failed[0]
        real(store, event)

    def touch(input: dict[str, Any], ctx: ToolContext) -> str:
        ran.append(input["text"])
        return "touched"

    monkeypatch.setattr(SQLiteStore, "append", append)
    code = "for t in ['first', 'second']:\n    try:\n        await tools.touch(text=t)\n    except Exception:\n        pass"
    script = Script([execute(code)], "never asked")
    async with Runtime(data_dir=tmp_path / "data", config=codemode_config(project)) as rt:
        with rt.tools.register({"touch": Tool(description="Touch", input=_EMPTY, execute=touch)}):
            session = await rt.sessions.create(project)
            with anyio.fail_after(20), pytest.raises(StoreError, match="disk full"):
                await session.prompt("go", model=script.model)
    assert (
        ran == ["first"] and len(script.steps) == 1
    )  # the second call never ran, the model was not asked again

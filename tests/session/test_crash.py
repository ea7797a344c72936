"""Crash recovery: a process killed with SIGKILL mid-tool leaves nothing running after the store is reopened."""

from __future__ import annotations

import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether.bus import Bus
from tether.llm import ToolMessage
from tether.session import INTERRUPTED_ERROR, AssistantInfo, Sessions, SQLiteStore, ToolPart
from tether.testing import ScriptedModel
from tether.tools import Text

from .conftest import Agent, Loc

CHILD = textwrap.dedent(
    """
    import sys
    from dataclasses import dataclass
    from pathlib import Path

    import anyio
    from pydantic import BaseModel

    from tether.bus import Bus
    from tether.output import OutputStore
    from tether.session import PartUpdated, Sessions, SQLiteStore, ToolPart
    from tether.testing import ScriptedModel, tool_call
    from tether.tools import Tool, ToolRegistry, ToolResponse


    class Echo(BaseModel):
        text: str


    @dataclass(frozen=True)
    class Agent:
        name: str = "build"
        rules: tuple = ()
        steps: int | None = None
        prompt: str | None = None


    @dataclass
    class Loc:
        tools: ToolRegistry
        root: Path
        directory: Path


    async def main(root: Path) -> None:
        async with SQLiteStore(root / "tether.db") as store:
            bus = Bus()
            first_done = anyio.Event()

            def on_part(event: PartUpdated) -> None:
                part = event.part
                if isinstance(part, ToolPart) and part.call_id == "c1" and part.state == "completed":
                    first_done.set()

            bus.subscribe(PartUpdated, on_part)

            async def quick(i: Echo, ctx) -> ToolResponse:
                return ToolResponse(content="finished " + i.text)

            async def hang(i: Echo, ctx) -> ToolResponse:
                await first_done.wait()
                await store.flush()
                print("READY", ctx.session_id, flush=True)
                await anyio.sleep_forever()

            registry = ToolRegistry(output=OutputStore(root / "tool-output"))
            registry.register(
                {"quick": Tool(description="q", input=Echo, execute=quick), "hang": Tool(description="h", input=Echo, execute=hang)}
            )
            sessions = Sessions(store=store, bus=bus, agents={"build": Agent()})
            session = await sessions.create(Loc(registry, root, root))
            model = ScriptedModel([[tool_call("quick", {"text": "a"}, id="c1"), tool_call("hang", {"text": "b"}, id="c2")]])
            await session.prompt("go", model=model)


    anyio.run(main, Path(sys.argv[1]))
    """
)


@pytest.mark.anyio
async def test_sigkill_mid_tool_then_reopen_recovers_interrupted_calls(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    with anyio.fail_after(30):
        async with await anyio.open_process([sys.executable, str(script), str(tmp_path)]) as proc:
            assert proc.stdout is not None
            line = b""
            async for chunk in proc.stdout:
                line += chunk
                if b"\n" in line:
                    break
            assert line.startswith(b"READY"), line
            session_id = line.split()[1].decode()
            proc.send_signal(signal.SIGKILL)
            assert await proc.wait() == -signal.SIGKILL

    async with SQLiteStore(tmp_path / "tether.db") as store:
        assert store.recovered == 1
        messages = await store.load_messages(session_id)
        quick, hung = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
        assert (quick.state, quick.content) == ("completed", (Text("finished a"),))
        assert (hung.state, hung.error, hung.interrupted) == ("error", INTERRUPTED_ERROR, True)
        assistant = messages[-1].info
        assert isinstance(assistant, AssistantInfo) and assistant.completed is not None
        assert assistant.error is not None and assistant.error.kind == "interrupted"

        # Reopening again finds nothing left to recover.
        assert await store.recover() == 0

        async def locate(directory: str) -> Any:
            from tether.tools import ToolRegistry

            return Loc(tools=ToolRegistry(), root=tmp_path, directory=tmp_path)

        sessions = Sessions(store=store, bus=Bus(), agents={"build": Agent()}, locate=locate)
        session = await sessions.get(session_id)
        model = ScriptedModel(["ok"])
        with model, anyio.fail_after(5):
            await session.prompt("continue", model=model)
        tool_message = model.requests[0].messages[2]
        assert isinstance(tool_message, ToolMessage)
        assert [(r.call_id, r.is_error, r.content) for r in tool_message.results] == [
            ("c1", False, (Text("finished a"),)),
            ("c2", True, (Text(INTERRUPTED_ERROR),)),
        ]
        sessions.close()

"""Crash recovery with real processes: a store opened beside a live process leaves its running calls alone; after
the process is killed with SIGKILL, reopening the store interrupts them and the next step's history is consistent."""

from __future__ import annotations

import signal
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from tests.postgres.fixtures import OpenStore, query

from tether.bus import Bus
from tether.llm import ToolMessage
from tether.session import AssistantInfo, Sessions, ToolPart
from tether.store import StoredMessage
from tether.store.internal import INTERRUPTED_ERROR
from tether.testing import ScriptedModel
from tether.tools import Text

from .conftest import Agent, Loc

CHILD = textwrap.dedent(
    """
    import sys
    from dataclasses import dataclass, field
    from pathlib import Path

    import anyio
    from pydantic import BaseModel

    from tether.bus import Bus
    from tether.output import OutputStore
    from tether.session import PartUpdated, PostgresStore, Sessions, SQLiteStore, ToolPart
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
        options: dict = field(default_factory=dict)


    @dataclass
    class Loc:
        tools: ToolRegistry
        root: Path
        directory: Path


    async def main(root: Path, target: str) -> None:
        opened = PostgresStore(target) if target.startswith("postgresql://") else SQLiteStore(target)
        async with opened as store:
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
                # Blocked until the parent writes a line (or kills this process).
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                return ToolResponse(content="released " + line.strip())

            registry = ToolRegistry(output=OutputStore(root / "tool-output"))
            registry.register(
                {"quick": Tool(description="q", input=Echo, execute=quick), "hang": Tool(description="h", input=Echo, execute=hang)}
            )
            sessions = Sessions(store=store, bus=bus, agents={"build": Agent()})
            session = await sessions.create(Loc(registry, root, root))
            model = ScriptedModel(
                [[tool_call("quick", {"text": "a"}, id="c1"), tool_call("hang", {"text": "b"}, id="c2")], "done"]
            )
            await session.prompt("go", model=model)
        print("DONE", flush=True)


    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
    """
)


async def _read_line(proc: Process) -> bytes:
    assert proc.stdout is not None
    line = b""
    async for chunk in proc.stdout:
        line += chunk
        if b"\n" in line:
            break
    return line


async def _start_holder(tmp_path: Path, target: str) -> tuple[Process, str]:
    """Start the child on the store ``target``; return it once its ``hang`` call is running and committed, with the
    session id."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = await anyio.open_process([sys.executable, str(script), str(tmp_path), target])
    line = await _read_line(proc)
    assert line.startswith(b"READY"), line
    return proc, line.split()[1].decode()


def _tool_parts(messages: Sequence[StoredMessage]) -> list[ToolPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolPart)]


@pytest.mark.anyio
async def test_opening_the_store_beside_a_live_process_leaves_its_running_call_alone(
    tmp_path: Path, open_store: OpenStore, store_target: Callable[[str], str]
) -> None:
    with anyio.fail_after(30):
        proc, session_id = await _start_holder(tmp_path, store_target("tether.db"))
        async with proc:
            # `tether sessions` in another terminal: opening the shared file must not interrupt the live call.
            async with open_store() as store:
                assert store.recovered == 0
                assert await store.recover() == 0
                quick, hung = _tool_parts(await store.load_messages(session_id))
                assert (quick.state, hung.state, hung.interrupted) == ("completed", "running", False)
                assistant = (await store.load_messages(session_id))[1].info
                assert isinstance(assistant, AssistantInfo) and assistant.completed is None
            assert proc.stdin is not None
            await proc.stdin.send(b"now\n")
            assert (await _read_line(proc)).startswith(b"DONE")
            assert await proc.wait() == 0

    async with open_store() as store:
        assert store.recovered == 0
        _, hung = _tool_parts(await store.load_messages(session_id))
        assert (hung.state, hung.content, hung.interrupted) == ("completed", (Text("released now"),), False)
        states = [
            data.get("state") for _, _, data in await store.events(session_id) if data.get("call_id") == "c2"
        ]
        # never "error": nothing interrupted it (pending and running may share one transaction, so one log entry)
        assert states[-1] == "completed" and "error" not in states and "running" in states


@pytest.mark.anyio
async def test_sigkill_mid_tool_then_reopen_recovers_interrupted_calls(
    tmp_path: Path, open_store: OpenStore, store_target: Callable[[str], str], store_kind: str
) -> None:
    with anyio.fail_after(30):
        proc, session_id = await _start_holder(tmp_path, store_target("tether.db"))
        async with proc:
            async with open_store() as neighbour:
                assert neighbour.recovered == 0  # the holder is alive
                proc.send_signal(signal.SIGKILL)
                assert await proc.wait() == -signal.SIGKILL

    async with open_store() as store:
        recovered = store.recovered
        with anyio.fail_after(10):
            # PostgreSQL drops the killed holder's connection (and its lease lock) as it notices the closed socket,
            # a moment after the process is gone.
            while recovered == 0 and store_kind == "postgresql":
                await anyio.sleep(0.05)
                recovered = await store.recover()
        assert recovered == 1
        messages = await store.load_messages(session_id)
        quick, hung = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
        assert (quick.state, quick.content) == ("completed", (Text("finished a"),))
        assert (hung.state, hung.error, hung.interrupted) == ("error", INTERRUPTED_ERROR, True)
        assistant = messages[-1].info
        assert isinstance(assistant, AssistantInfo) and assistant.completed is not None
        assert assistant.error is not None and assistant.error.kind == "interrupted"

        # Recovering again finds nothing left, and the killed holder's owner row is gone.
        assert await store.recover() == 0
        assert query(store_target("tether.db"), "SELECT id FROM owners") == [(store.owner,)]

        async def locate(directory: str, project: str) -> Any:
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

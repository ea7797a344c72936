"""Nothing runs unrecorded (law 12): any text is storable, a failing write stops the turn, a big input is stored once,
and several processes can open one fresh store together."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from tests.postgres.fixtures import OpenStore, query

from tether.errors import StoreError
from tether.llm import AssistantMessage, ModelRequest, TextDelta, TextEnd, TextStart, ToolCallContent
from tether.session import (
    AssistantInfo,
    MessageUpdated,
    PartUpdated,
    SessionInfo,
    SessionUpdated,
    TextPart,
    ToolPart,
)
from tether.store import SQLiteStore
from tether.testing import FunctionModel, ScriptedModel, Step, tool_call
from tether.tools import Text, Tool, ToolContext, ToolResponse

from .conftest import Harness


class Echo(BaseModel):
    text: str


ODD = "a\ud800b\udcff"
SHOWN = "a\\ud800b\\xff"


@pytest.mark.anyio
async def test_lone_surrogates_from_user_model_and_tools_are_made_visible_and_never_run(
    harness: Harness, tmp_path: Path
) -> None:
    ran: list[str] = []

    def lister(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        ran.append(i.text)
        return ToolResponse(content=[Text("file " + ODD)], metadata={"name": ODD}, title="list " + ODD)

    harness.tools.register({"lister": Tool(description="l", input=Echo, execute=lister)})
    session = await harness.sessions.create(harness.loc, agent="build")
    model = ScriptedModel(
        [
            [tool_call("lister", {"text": ODD}, id="c1"), tool_call("lister", {"text": "plain"}, id="c2")],
            Step(TextStart(id="t"), TextDelta(id="t", text="done " + ODD), TextEnd(id="t")),
        ]
    )
    with model, anyio.fail_after(10):
        result = await session.prompt("prompt " + ODD, model=model)
        await harness.store.flush()
    assert ran == ["plain"]  # the call whose argument is not valid Unicode never executed
    assert result.text == "done " + SHOWN
    # The next request can be sent: the rejected arguments are replayed as a visible copy.
    replayed = [
        c
        for m in model.requests[1].messages
        if isinstance(m, AssistantMessage)
        for c in m.content
        if isinstance(c, ToolCallContent)
    ]
    assert [c.input for c in replayed] == [{"text": SHOWN}, {"text": "plain"}]
    await harness.store.aclose()
    async with SQLiteStore(tmp_path / "tether.db") as reopened:
        messages = await reopened.load_messages(session.id)
    parts = [p for m in messages for p in m.parts]
    c1, c2 = [p for p in parts if isinstance(p, ToolPart)]
    # stored as the model was shown it (law 12): a refused input is outside text like any other
    assert (c1.state, c1.error_kind, c1.input) == ("error", "invalid_input", {"text": SHOWN})
    assert "not valid Unicode" in (c1.error or "")
    assert (c2.state, c2.content, c2.metadata, c2.title) == (
        "completed",
        (Text("file " + SHOWN),),
        {"name": SHOWN},
        "list " + SHOWN,
    )
    assert [p.text for p in parts if isinstance(p, TextPart)] == ["prompt " + SHOWN, "done " + SHOWN]


@pytest.mark.anyio
async def test_the_store_keeps_any_text_exactly_even_lone_surrogates(open_store: OpenStore) -> None:
    weird = {ODD: [ODD, {"k": "\udfff\ud800"}], "nested": "é" + ODD + "\x00"}
    async with open_store() as store:
        store.append(
            SessionUpdated(
                SessionInfo(
                    id="ses_1",
                    project="/p" + ODD,
                    directory="/p" + ODD,
                    title=ODD,
                    agent="build",
                    created=1,
                    updated=1,
                )
            )
        )
        store.append(
            MessageUpdated(
                AssistantInfo(
                    id="msg_1", session_id="ses_1", parent_id="msg_0", agent="b", model="m", created=1
                )
            )
        )
        store.append(PartUpdated(_part("prt_1", "running", weird)))
        store.append(PartUpdated(TextPart(id="prt_2", session_id="ses_1", message_id="msg_1", text=ODD)))
        with anyio.fail_after(5):
            await store.flush()
        assert [s.id for s in await store.list_sessions(project="/p" + ODD)] == ["ses_1"]
    async with open_store() as store:
        (message,) = await store.load_messages("ses_1")
        info = await store.get_session("ses_1")
    assert (info.title, info.project, info.directory) == (ODD, "/p" + ODD, "/p" + ODD)
    tool, text = message.parts
    assert isinstance(tool, ToolPart) and tool.input == weird
    assert isinstance(text, TextPart) and text.text == ODD


FAULT = "CREATE TRIGGER fault_{name} BEFORE {op} ON parts WHEN NEW.call_id = 'c1' AND NEW.state = 'completed' BEGIN SELECT RAISE(ABORT, 'injected fault: disk on fire'); END"


def _inject_fault(path: Path) -> None:
    conn = sqlite3.connect(path)
    for name, op in (("insert", "INSERT"), ("update", "UPDATE")):
        conn.execute(FAULT.format(name=name, op=op))
    conn.commit()
    conn.close()


@pytest.mark.anyio
async def test_a_failing_write_fails_the_turn_and_no_further_call_executes(
    harness: Harness, tmp_path: Path
) -> None:
    _inject_fault(tmp_path / "tether.db")  # a real SQLite refusal: the row c1 completes with is rejected
    ran: list[str] = []

    async def touch(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        ran.append(i.text)
        return ToolResponse(content="touched " + i.text)

    async def script(request: ModelRequest) -> Any:
        if len(request.messages) == 1:
            return [tool_call("touch", {"text": "first"}, id="c1")]
        # A model answers long after a commit window: by now the store knows c1's completion was refused.
        with pytest.raises(StoreError):
            await harness.store.flush()
        return [tool_call("touch", {"text": "second"}, id="c2")]

    harness.tools.register({"touch": Tool(description="touch", input=Echo, execute=touch)})
    session = await harness.sessions.create(harness.loc, agent="build")
    with anyio.fail_after(10), pytest.raises(StoreError, match="injected fault: disk on fire"):
        await session.prompt("go", model=FunctionModel(script))
    assert ran == ["first"]
    with pytest.raises(StoreError, match="injected fault"):
        await session.prompt("again", model=ScriptedModel([[tool_call("touch", {"text": "third"}, id="c3")]]))
    assert ran == ["first"]
    # Reads still answer, and the refused batch left nothing half-written: c1 was recorded running, never completed
    # (reopening the file later recovers it as interrupted).
    with anyio.fail_after(5):
        messages = await harness.store.load_messages(session.id)
    (c1,) = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    assert (c1.call_id, c1.state, c1.input) == ("c1", "running", {"text": "first"})


@pytest.mark.anyio
async def test_a_refused_write_keeps_exactly_the_events_appended_before_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tether.db"
    async with SQLiteStore(path) as store:
        store.append(
            MessageUpdated(
                AssistantInfo(
                    id="msg_1", session_id="ses_1", parent_id="msg_0", agent="b", model="m", created=1
                )
            )
        )
        store.append(PartUpdated(_part("prt_1", "running", {"a": 1})))
        await store.flush()
        # Another connection makes every later write fail for real: the schema refuses new part rows.
        conn = sqlite3.connect(path)
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON parts BEGIN SELECT RAISE(FAIL, 'no space left'); END"
        )
        conn.commit()
        conn.close()
        store.append(PartUpdated(_part("prt_2", "running", {"b": 2})))
        store.append(PartUpdated(_part("prt_1", "completed", {"a": 1})))
        with anyio.fail_after(5), pytest.raises(StoreError, match="no space left"):
            await store.flush()
        with pytest.raises(StoreError, match="no space left"):
            store.append(PartUpdated(_part("prt_3", "running", {})))
        with anyio.fail_after(5):
            (message,) = await store.load_messages("ses_1")
        # The whole refused batch was rolled back: prt_1 is still running, prt_2 never appeared.
        assert [(p.id, p.state) for p in message.parts if isinstance(p, ToolPart)] == [("prt_1", "running")]


def _part(part_id: str, state: Any, value: Any) -> ToolPart:
    return ToolPart(
        id=part_id,
        session_id="ses_1",
        message_id="msg_1",
        call_id=part_id,
        tool="t",
        state=state,
        input=value,
    )


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


@pytest.mark.anyio
async def test_a_50_mb_tool_argument_is_stored_once(harness: Harness, tmp_path: Path) -> None:
    big = "x" * (50 * 1024 * 1024)
    seen: list[int] = []

    def measure(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        seen.append(len(i.text))
        return ToolResponse(content="measured")

    harness.tools.register({"measure": Tool(description="m", input=Echo, execute=measure)})
    session = await harness.sessions.create(harness.loc, agent="build")
    await harness.store.flush()
    before = _size(tmp_path / "tether.db")
    model = ScriptedModel([[tool_call("measure", {"text": big}, id="c1")], "done"])
    with model, anyio.fail_after(60):
        await session.prompt("go", model=model)
    await harness.store.aclose()  # checkpoints the WAL into the file
    grown = _size(tmp_path / "tether.db") - before
    print(f"database growth for a 50 MiB argument: {grown / 2**20:.1f} MiB")
    assert seen == [len(big)]
    assert grown < 2 * len(big), f"the database grew by {grown / 2**20:.0f} MiB for a 50 MiB argument"
    async with SQLiteStore(tmp_path / "tether.db") as reopened:
        messages = await reopened.load_messages(session.id)
    (call,) = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    assert call.state == "completed"
    assert call.input == {"text": big}


OPENER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import anyio

    from tether import Runtime


    async def main(data: Path) -> None:
        sys.stdin.readline()  # every child starts opening at the same moment
        async with Runtime(data_dir=data) as rt:
            await rt.store.flush()
        print("OPENED", flush=True)


    anyio.run(main, Path(sys.argv[1]))
    """
)


@pytest.mark.anyio
async def test_processes_opening_one_fresh_data_directory_together_all_succeed(tmp_path: Path) -> None:
    script = tmp_path / "opener.py"
    script.write_text(OPENER)
    data = tmp_path / "data"
    procs = [
        await anyio.open_process([sys.executable, str(script), str(data)], stderr=None) for _ in range(6)
    ]
    try:
        for proc in procs:
            assert proc.stdin is not None
            await proc.stdin.send(b"go\n")
        with anyio.fail_after(60):
            for proc in procs:
                assert proc.stdout is not None
                out = b"".join([chunk async for chunk in proc.stdout])
                assert await proc.wait() == 0
                assert out.strip() == b"OPENED"
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    conn = sqlite3.connect(data / "tether.db")
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    owners = conn.execute("SELECT count(*) FROM owners").fetchone()[0]
    conn.close()
    assert {"sessions", "parts", "inputs", "claims", "owners"} <= tables
    assert owners == 0


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 600 KiB file system (tmpfs), where the machine lets this process mount one (root); skipped elsewhere."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.anyio
async def test_a_full_disk_fails_the_store_keeps_what_was_committed_and_never_hangs(tiny_disk: Path) -> None:
    async with SQLiteStore(tiny_disk / "tether.db") as store:
        store.append(
            MessageUpdated(
                AssistantInfo(
                    id="msg_1", session_id="ses_1", parent_id="msg_0", agent="b", model="m", created=1
                )
            )
        )
        committed = 0
        with anyio.fail_after(30), pytest.raises(StoreError, match="full"):
            for n in range(1000):
                store.append(PartUpdated(_part(f"prt_{n:04}", "running", {"x": "y" * 50_000})))
                await store.flush()
                committed += 1
        with pytest.raises(StoreError, match="full"):
            store.append(PartUpdated(_part("prt_late", "running", {})))
        with anyio.fail_after(5):
            (message,) = await store.load_messages("ses_1")
        assert len(message.parts) == committed > 0


@pytest.mark.anyio
async def test_a_large_input_survives_recovery_and_small_ones_stay_inline(
    open_store: OpenStore, store_target: Callable[[str], str]
) -> None:
    big = {"text": "z" * 100_000}
    async with open_store() as store:
        store.append(
            MessageUpdated(
                AssistantInfo(
                    id="msg_1", session_id="ses_1", parent_id="msg_0", agent="b", model="m", created=1
                )
            )
        )
        store.append(PartUpdated(_part("prt_1", "running", big)))
        store.append(PartUpdated(_part("prt_2", "running", {"small": 1})))
    async with open_store() as store:  # the first store closed with both calls running: recovered
        assert store.recovered == 2
        (message,) = await store.load_messages("ses_1")
    first, second = message.parts
    assert isinstance(first, ToolPart) and isinstance(second, ToolPart)
    assert (first.state, first.interrupted, first.input) == ("error", True, big)
    assert (second.state, second.input) == ("error", {"small": 1})
    assert query(store_target("tether.db"), "SELECT part_id FROM inputs") == [("prt_1",)]

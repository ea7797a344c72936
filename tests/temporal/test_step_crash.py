"""A ``tether worker`` process SIGKILLed at an exact point of a turn (``$TETHER_TEMPORAL_FAULT``), then a second
worker finishes the turn: a stored step is never asked again, a call is started at most once, no part stays
``running``, and a call whose worker died after it acted is reported interrupted once.

The worker kills itself at the named point (``tether.temporal._faults``), so the test lands in the window every run:
a kill from outside could not tell "the step's message is committed" from "the activity has returned". The model is
a script (``scripted:PATH``): it plays the step its history is at, so a step asked again would store a second
assistant message for it, which the test counts. The calls are bash commands appending to a ledger file: its lines
count the side effects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import pytest

from tether.session import AssistantInfo, StepStartPart, ToolPart, UserInfo
from tether.store import SQLiteStore
from tether.temporal import TurnHandle, connect, submit_turn
from tether.temporal._faults import FAULT_ENV

pytestmark = pytest.mark.anyio


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config"
    config.mkdir()
    # the user's own config (trusted): bash runs without asking, so the turn needs no one at a terminal
    (config / "tether.json").write_text(json.dumps({"permission": {"bash": "allow"}}))
    found = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp_path / "data"),
        "TETHER_CONFIG_DIR": str(config),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "NO_COLOR": "1",
    }
    for name in ("TETHER_PERMISSION", "TETHER_TRUST", "TETHER_STORE_URL", FAULT_ENV):
        found.pop(name, None)
    return found


@contextmanager
def tether_worker(
    target: str, queue: str, project: Path, env: dict[str, str], fault: str | None = None
) -> Iterator[subprocess.Popen[str]]:
    command = [sys.executable, "-m", "tether.cli", "worker", "--temporal", target, "--task-queue", queue]
    command += ["--dir", str(project), "--allow-test-models"]
    process = subprocess.Popen(
        command,
        env={**env, FAULT_ENV: fault} if fault else env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        seen = ""
        while (
            "serving task queue" not in seen
        ):  # the worker says so once it serves the queue (after any warning)
            line = process.stderr.readline()
            assert line, f"the worker exited: {seen}"
            seen += line
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(30)
        process.stderr.close()


def bash(command: str) -> dict[str, object]:
    return {"name": "bash", "arguments": {"command": command, "description": "append to the ledger"}}


async def died(process: subprocess.Popen[str]) -> int:
    with anyio.fail_after(120):
        while process.poll() is None:
            await anyio.sleep(0.05)
    return process.returncode


async def events(handle: TurnHandle) -> list[tuple[str, dict[str, object]]]:
    return [(e.kind, e.data) async for e in handle.events()]


@pytest.mark.parametrize(
    ("fault", "steps"),
    [
        ("begin-stored", [{"tool_calls": [bash("echo a >> ledger")]}]),
        ("step-stored", [{"tool_calls": [bash("echo a >> ledger"), bash("echo b >> ledger")]}]),
        ("call-started", [{"tool_calls": [bash("echo a >> ledger")]}]),
        ("call-ran", [{"tool_calls": [bash("echo a >> ledger")]}]),
        (
            "call-stored",
            [{"tool_calls": [bash("echo a >> ledger")]}, {"tool_calls": [bash("echo b >> ledger")]}],
        ),
    ],
)
async def test_a_worker_killed_at_a_fault_point_leaves_a_turn_another_worker_finishes_exactly_once(
    temporal_server: str, tmp_path: Path, env: dict[str, str], fault: str, steps: list[dict[str, object]]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([*steps, {"text": "Finished."}]))
    queue = f"q-{uuid.uuid4().hex}"
    data = Path(env["TETHER_DATA_DIR"])
    client = await connect(temporal_server, data_dir=data)
    with ExitStack() as stack:
        first = stack.enter_context(tether_worker(temporal_server, queue, project, env, fault))
        handle = await submit_turn(
            client,
            "go",
            model=f"scripted:{script}",
            directory=project,
            task_queue=queue,
            heartbeat_timeout=2.0,
        )
        assert await died(first) == -9  # SIGKILL, by its own hand, at the point
        stack.enter_context(tether_worker(temporal_server, queue, project, env))
        with anyio.fail_after(120):
            result = await handle.result()
            seen = await events(handle)
    assert (result.stop, result.text) == ("done", "Finished.")
    ledger = (project / "ledger").read_text().splitlines() if (project / "ledger").exists() else []
    async with SQLiteStore(data / "tether.db", recover=False) as store:
        sessions = await store.list_sessions()
        messages = await store.load_messages(result.session_id)
    assert [s.id for s in sessions] == [result.session_id]  # one session, even when begin ran twice
    assert [type(m.info) for m in messages].count(UserInfo) == 1  # the prompt stored once
    stepped = [
        p.step
        for m in messages
        if isinstance(m.info, AssistantInfo)
        for p in m.parts
        if isinstance(p, StepStartPart)
    ]
    assert stepped == list(range(1, len(steps) + 2))  # one answer stored per step: no step was asked again
    tools = [p for m in messages for p in m.parts if isinstance(p, ToolPart)]
    assert all(p.settled for p in tools)  # nothing left running or pending
    calls = [data for kind, data in seen if kind == "call"]
    assert sorted(c["call_id"] for c in calls) == sorted(p.call_id for p in tools)  # each call reported once
    if fault in ("call-started", "call-ran"):
        # the dead worker had started the call: it may have acted (call-ran: it did), so it is never run again
        [part] = tools
        assert (part.state, part.error_kind, part.interrupted) == ("error", "interrupted", True)
        assert calls[0]["error"] == "Tool execution interrupted"
        assert ledger == (["a"] if fault == "call-ran" else [])
    else:
        assert [p.state for p in tools] == ["completed"] * len(tools), [
            (p.error, p.error_kind) for p in tools
        ]
        assert sorted(ledger) == ["a", "b"][: len(tools)]  # every call ran, once

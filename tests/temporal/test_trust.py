"""The trust boundary of Temporal turns (docs/temporal.md): attacks by a local user who reaches the server without the
key, turns for models and directories a worker does not serve, and asks routed to the call that asked."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.client import Client, WorkflowHandle

from tether import Runtime
from tether.config import parse_config
from tether.errors import TetherError, UsageError
from tether.llm import ModelRequest, UserMessage
from tether.temporal import AskInfo, TurnHandle, connect, worker
from tether.temporal._codec import KEY_ENV, key_path, load_key
from tether.temporal._types import AnswerInput, TurnInput
from tether.temporal._workflow import WORKFLOW
from tether.testing import FunctionModel, Step, tool_call
from tether.tools import Tool, ToolContext

from .conftest import Turns
from .support import MODEL, count, plan, tools, wait_for

pytestmark = pytest.mark.anyio


async def _refusal(handle: WorkflowHandle[Any, Any]) -> str:
    """Why the worker refused the workflow: its failed workflow task, or the workflow's failure (with causes)."""
    with anyio.fail_after(30):
        while True:
            async for event in handle.fetch_history_events():
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                    return _messages(event.workflow_task_failed_event_attributes.failure)
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
                    return _messages(event.workflow_execution_failed_event_attributes.failure)
            await anyio.sleep(0.1)


def _messages(failure: Failure) -> str:
    found = [failure.message]
    while failure.HasField("cause"):
        failure = failure.cause
        found.append(failure.message)
    return "\n".join(found)


async def _asks(handle: TurnHandle) -> list[AskInfo]:
    with anyio.fail_after(60):
        while True:
            try:
                return await handle.asks()
            except TetherError as exc:
                if "cannot be read now" not in exc.message:
                    raise
            await anyio.sleep(0.2)


@pytest.mark.parametrize("who", ["unsigned", "another-key"])
async def test_review3_a_turn_started_without_the_key_never_runs(turns: Turns, who: str) -> None:
    if who == "unsigned":
        attacker = await Client.connect(turns.target)
    else:
        attacker = await connect(turns.target, key=b"k" * 40)
    turn = TurnInput(prompt=json.dumps([["fast", {"n": 1}]]), model=MODEL, directory=str(turns.directory))
    async with turns.worker():
        handle = await attacker.start_workflow(
            WORKFLOW, turn, id=f"attack-{uuid.uuid4().hex}", task_queue=turns.queue
        )
        assert "without a valid tether signature" in await _refusal(handle)
        if (await handle.describe()).close_time is None:
            await handle.terminate()
    assert count(turns.marks, "fast") == 0


async def test_review3_an_answer_without_the_key_does_not_answer_the_ask(turns: Turns) -> None:
    async with turns.worker():
        handle = await turns.submit([["guarded", {}]])
        ask = await wait_for(handle, "ask")
        attacker = await Client.connect(turns.target)
        forged = attacker.get_workflow_handle(handle.workflow_id)
        with anyio.fail_after(60), pytest.raises(Exception, match=r"signature|failed|Update"):
            await forged.execute_update("answer", AnswerInput(ask_id=ask["id"], reply="always"))
        with pytest.raises(Exception, match=r"signature|failed|Query"):
            await forged.query("asks")  # reading the asks needs the key too
        assert count(turns.marks, "guarded") == 0
        # the refused update was rejected before any handler ran: the turn has no trace of it
        assert [a.id for a in await _asks(handle)] == [ask["id"]]  # still waiting for whoever holds the key
        await handle.answer(ask["id"], "reject")
        with anyio.fail_after(60):
            assert (await handle.result()).stop == "declined"
    assert count(turns.marks, "guarded") == 0


async def test_review3_a_worker_refuses_a_client_that_does_not_sign(turns: Turns) -> None:
    async with Runtime(data_dir=turns.data, plugins=False) as rt:
        with pytest.raises(UsageError, match="signs its payloads"):
            worker(rt, await Client.connect(turns.target), task_queue=turns.queue)


async def test_review3_a_test_model_is_refused_unless_the_worker_allows_it(
    turns: Turns, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    call = {"name": "bash", "arguments": {"command": f"touch {canary}", "description": "x"}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [call]}, {"text": "owned"}]))
    async with turns.worker():
        for name in (f"scripted:{script}", "replay"):
            handle = await turns.submit("hi", model=name)
            with anyio.fail_after(60), pytest.raises(TetherError, match="does not run test models"):
                await handle.result()
    assert not canary.exists()


async def test_review3_a_directory_outside_the_worker_s_roots_is_refused(
    turns: Turns, tmp_path: Path
) -> None:
    elsewhere = tmp_path.parent / f"elsewhere-{uuid.uuid4().hex}"
    elsewhere.mkdir()
    async with turns.worker() as rt:
        for directory in (elsewhere, turns.directory / ".." / elsewhere.name):
            handle = await turns.submit([["fast", {"n": 1}]], directory=directory)
            with anyio.fail_after(60), pytest.raises(TetherError, match="does not run turns in"):
                await handle.result()
        assert await rt.store.list_sessions() == []  # refused before anything was written
    assert count(turns.marks, "fast") == 0


async def test_review3_a_code_mode_agent_fails_the_turn_with_a_clear_error(turns: Turns) -> None:
    config = parse_config({"agent": {"build": {"codemode": True}}}, file=str(turns.directory / "tether.json"))
    async with Runtime(data_dir=turns.data, plugins=False, config=config) as rt:
        rt.tools.register(tools(turns.marks))
        async with worker(
            rt,
            turns.client,
            task_queue=turns.queue,
            models={MODEL: FunctionModel(plan)},
            roots=[turns.directory],
        ):
            handle = await turns.submit([["fast", {"n": 1}]])
            with (
                anyio.fail_after(60),
                pytest.raises(TetherError, match="Code Mode does not run on Temporal yet"),
            ):
                await handle.result()
    assert count(turns.marks, "fast") == 0


def _same_ids(request: ModelRequest) -> Step:
    """As ``plan``, with every call's id ``call_shared`` (ids are unique within a message, not across sessions)."""
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        calls = json.loads("".join(getattr(p, "text", "") for p in last.content))
        return Step(*(tool_call(name, args, id="call_shared") for name, args in calls))
    return plan(request)


def _held(marks: Path) -> dict[str, Tool[Any, Any]]:
    async def held(value: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.ask("deploy", "prod")  # answered once, then held until the test releases it
        (marks / "held-started").touch()
        while not (marks / "release").exists():
            await anyio.sleep(0.05)
        return "held done"

    return {
        "held": Tool(description="Asks, then waits", input={"type": "object"}, execute=held, timeout=None)
    }


async def test_review3_an_answer_for_one_session_never_answers_another_s_call_with_the_same_id(
    turns: Turns,
) -> None:
    async with turns.worker(models={"same": FunctionModel(_same_ids)}, extra=lambda rt: _held(turns.marks)):
        first = await turns.submit([["held", {}]], model="same")
        ask = await wait_for(first, "ask")
        await first.answer(ask["id"], "once")  # the re-run holds this answer while it waits
        with anyio.fail_after(30):
            while not (turns.marks / "held-started").exists():
                await anyio.sleep(0.05)
        second = await turns.submit([["guarded", {}]], model="same")  # asks the same thing, same call id
        asked = await wait_for(second, "ask")
        assert asked["call_id"] == "call_shared"
        assert count(turns.marks, "guarded") == 0  # the first turn's answer did not let it run
        (turns.marks / "release").touch()
        with anyio.fail_after(60):
            done = await first.result()
        assert done.stop == "done"
        assert done.text == "done: held=held done"
        assert await first.asks() == []
        await second.answer(asked["id"], "reject")
        with anyio.fail_after(60):
            assert (await second.result()).stop == "declined"
    assert count(turns.marks, "guarded") == 0


def test_review3_the_key_file_is_private_and_a_shared_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    data = tmp_path / "data"
    key = load_key(data)
    path = key_path(data)
    assert len(key) == 64
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    assert load_key(data) == key  # the same key on every use
    path.chmod(0o644)
    with pytest.raises(UsageError, match="open to other users"):
        load_key(data)
    path.chmod(0o600)
    path.parent.chmod(0o755)
    with pytest.raises(UsageError, match="open to other users"):
        load_key(data)
    monkeypatch.setenv(KEY_ENV, "short")
    with pytest.raises(UsageError, match="at least 32 characters"):
        load_key(data)
    monkeypatch.setenv(KEY_ENV, "s" * 32)
    assert load_key(data) == b"s" * 32

"""Turns on a real Temporal server with an in-process worker: parallel calls, the store, asks, cancellation."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.session import ToolPart
from tether.temporal import TurnHandle, connect, submit_turn, worker

from .support import MODEL, count, model, tools

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running_worker(target: str, queue: str, data_dir: Path, marks: Path) -> AsyncIterator[Runtime]:
    async with Runtime(data_dir=data_dir, plugins=False) as rt:
        rt.tools.register(tools(marks))
        client = await connect(target)
        async with worker(rt, client, task_queue=queue, models={MODEL: model()}):
            yield rt


async def wait_for(handle: TurnHandle, kind: str) -> dict[str, object]:
    with anyio.fail_after(30):
        async for event in handle.events():
            if event.kind == kind:
                return event.data
    raise AssertionError(f"the turn ended without a {kind} event")


async def test_parallel_calls_settle_in_activities_and_the_store_shows_them(
    temporal_server: str, tmp_path: Path
) -> None:
    queue = f"q-{uuid.uuid4().hex}"
    marks = tmp_path / "marks"
    marks.mkdir()
    async with running_worker(temporal_server, queue, tmp_path / "data", marks) as rt:
        client = await connect(temporal_server)
        prompt = json.dumps([["fast", {"n": 1}], ["fast", {"n": 2}], ["fast", {"n": 3}]])
        handle = await submit_turn(client, prompt, model=MODEL, directory=tmp_path, task_queue=queue)
        with anyio.fail_after(60):
            result = await handle.result()
        assert result.stop == "done"
        assert result.steps == 2
        assert result.tool_calls == 3
        assert [c.content for c in result.calls] == ["fast 1", "fast 2", "fast 3"]
        assert result.text == "done: fast=fast 1; fast=fast 2; fast=fast 3"
        assert count(marks, "fast") == 3
        messages = await rt.store.load_messages(result.session_id)
        assert [m.info.role for m in messages] == ["user", "assistant", "assistant"]
        parts = [p for p in messages[1].parts if isinstance(p, ToolPart)]
        assert [(p.tool, p.state, p.input) for p in parts] == [
            ("fast", "completed", {"n": 1}),
            ("fast", "completed", {"n": 2}),
            ("fast", "completed", {"n": 3}),
        ]
        assert all(m.info.completed for m in messages[1:])  # type: ignore[union-attr]

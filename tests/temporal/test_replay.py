"""Deterministic replay (issue 36 item 3): recorded turns replay on today's workflow code, and a worker restart
mid-turn leaves a history that replays.

Every test of this folder also replays the turns it ran (``conftest.pytest_runtest_call``); the histories under
``histories/`` (recorded by ``histories/record.py``) pin the shapes of turn a change of ``_workflow.py`` must still
replay, or guard with ``workflow.patched``.

The restart: the only worker is SIGKILLed while a call runs; on the next worker the call's activity and the session's
``hold`` activity are retried at once, while the turn goes on. A second ``hold`` update accepted there lands beside
the turn's next command in one workflow task, which Temporal's SDK does not replay (``TMPRL1100 ... Update machine
does not handle this event``): a follower's next query failed with it, and so would every later workflow task. A retried
hold now asks the turn (the ``hold_state`` query) instead of telling it again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter
from temporalio.worker import Replayer

from tether.temporal import TurnEvent, TurnWorkflow, connect, submit_turn
from tether.temporal._codec import data_converter
from tether.temporal._worker import workflow_runner

from .support import MODEL, count
from .test_strangers import HISTORIES, HISTORY_KEY

pytestmark = pytest.mark.anyio

_SUPPORT = Path(__file__).with_name("support.py")


async def replay(history: WorkflowHistory, converter: DataConverter) -> str | None:
    """The replay failure of ``history`` on today's workflow code, or ``None``."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        replayer = Replayer(
            workflows=[TurnWorkflow],
            data_converter=converter,
            workflow_runner=workflow_runner(),
            workflow_task_executor=pool,
        )
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    return None if result.replay_failure is None else str(result.replay_failure)


@pytest.mark.parametrize("path", sorted(HISTORIES.glob("*.json")), ids=lambda p: p.stem)
async def test_every_recorded_turn_replays_on_today_s_workflow(path: Path) -> None:
    recorded = json.loads(path.read_text())
    workflow_id = recorded["events"][0]["workflowExecutionStartedEventAttributes"]["workflowId"]
    history = WorkflowHistory.from_json(workflow_id, recorded)
    assert await replay(history, data_converter(HISTORY_KEY)) is None


def worker(target: str, queue: str, data: Path, marks: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, str(_SUPPORT), target, queue, str(data), str(marks)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


async def test_a_turn_whose_only_worker_was_killed_mid_call_replays_and_its_follower_reads_it(
    temporal_server: str, tmp_path: Path
) -> None:
    queue, data, marks = f"q-{uuid.uuid4().hex}", tmp_path / "data", tmp_path / "marks"
    data.mkdir(mode=0o700)
    marks.mkdir()
    client = await connect(temporal_server, data_dir=data)
    processes = [worker(temporal_server, queue, data, marks)]
    try:
        handle = await submit_turn(
            client,
            json.dumps([["slow", {}]]),
            model=MODEL,
            directory=tmp_path,
            task_queue=queue,
            heartbeat_timeout=2.0,
        )
        with anyio.fail_after(60):
            while count(marks, "slow-started") == 0:
                await anyio.sleep(0.05)
        processes[0].kill()
        processes[0].wait()
        processes.append(worker(temporal_server, queue, data, marks))
        seen: list[TurnEvent] = []
        failed: list[Exception] = []  # reads that failed while the next worker came up (retried)
        with anyio.fail_after(120):
            async for event in handle.events(reconnecting=failed.append):
                seen.append(event)
            result = await handle.result()
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
            assert process.stdout is not None
            process.stdout.close()
    assert (result.stop, result.text) == ("done", "done: slow=error:Tool execution interrupted")
    assert [e.kind for e in seen] == ["session", "step", "call", "step", "text", "done"]
    assert not [e for e in failed if "TMPRL1100" in str(e)]
    history = await handle._handle.fetch_history()  # pyright: ignore[reportPrivateUsage]
    holds = [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert len(holds) == 1  # the retried hold asked the turn instead of telling it again
    assert await replay(history, client.data_converter) is None

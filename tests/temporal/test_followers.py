"""A follower never cancels what it follows (issue 36 item 2): ``tether run --temporal`` keeps following through a
Temporal server restart ("still running, reconnecting"), and one that gives up exits 1 without touching the turn,
which another follower then sees finish. Only Ctrl-C cancels (tests/temporal/test_cli.py).

The Temporal dev server here is this test's own, so it can be stopped and started again on the same port and
database while a turn runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from tether.temporal import TemporalRunner

from .conftest import _BIN, OFFLINE, _free_port


@dataclass
class Server:
    """A dev server that can be stopped and started again with its database (its turns survive)."""

    db: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(_BIN), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(self.port),
             "--ui-port", str(_free_port()), "--db-filename", str(self.db), "--log-level", "error", *OFFLINE],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:  # until it answers (a workflow list query)
            done = subprocess.run(
                [str(_BIN), "workflow", "list", "--address", self.target, "--limit", "1"],
                capture_output=True,
                timeout=30,
            )
            if done.returncode == 0:
                return
            assert time.monotonic() < deadline, done.stderr
            time.sleep(0.2)

    def stop(self) -> None:
        assert self.process is not None
        self.process.terminate()
        self.process.wait(30)
        self.process = None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    found = Server(tmp_path / "temporal.db")
    found.start()
    try:
        yield found
    finally:
        if found.process is not None:
            found.stop()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config"
    config.mkdir()
    (config / "tether.json").write_text(json.dumps({"permission": {"bash": "allow"}}))
    found = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp_path / "data"),
        "TETHER_CONFIG_DIR": str(config),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "NO_COLOR": "1",
    }
    for name in ("TETHER_PERMISSION", "TETHER_TRUST", "TETHER_STORE_URL", "TETHER_TEMPORAL_FAULT"):
        found.pop(name, None)
    return found


def tether(*args: str) -> list[str]:
    return [sys.executable, "-m", "tether.cli", *args]


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert process.poll() is None, "the follower exited"
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.05)


def read_until(stream: object, word: str) -> str:
    """Lines of the follower's stderr up to the first that holds ``word`` (the stream is a pipe: a hang guard is the
    test's own timeout)."""
    seen = ""
    while word not in seen:
        line = stream.readline()  # type: ignore[attr-defined]
        assert line, f"the follower's stderr ended before {word!r}:\n{seen}"
        seen += line
    return seen


@pytest.mark.parametrize("gives_up", [False, True], ids=["reconnects", "gives-up"])
def test_a_follower_outlives_a_server_restart_or_gives_up_without_cancelling_the_turn(
    server: Server, env: dict[str, str], tmp_path: Path, gives_up: bool
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    command = "touch started; while [ ! -f release ]; do sleep 0.1; done; echo done"
    call = {"name": "bash", "arguments": {"command": command, "description": "wait for the test"}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [call]}, {"text": "Finished."}]))
    queue = f"q-{uuid.uuid4().hex}"
    log = (tmp_path / "worker.log").open("w")  # a file, not a pipe: a worker logging a lot never blocks on it
    worker = subprocess.Popen(
        tether("worker", "--temporal", server.target, "--task-queue", queue, "--dir", str(project),
               "--allow-test-models"),
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, text=True,
    )  # fmt: skip
    follower_env = {**env, "TETHER_TEMPORAL_PATIENCE": "2"} if gives_up else env
    follower = subprocess.Popen(
        tether("run", "--temporal", server.target, "--task-queue", queue, "--model", f"scripted:{script}",
               "--dir", str(project), "go"),
        env=follower_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert follower.stderr is not None
        submitted = read_until(follower.stderr, "submitted")
        found = re.search(r"turn (\S+) submitted", submitted)
        assert found is not None
        wait_for(project / "started", follower)  # the call runs on the worker
        server.stop()
        if gives_up:
            rest = follower.stderr.read()
            assert follower.wait(120) == 1, rest
            assert "still running, reconnecting" in rest
            assert f"gave up following turn {found.group(1)}" in rest and "was not cancelled" in rest
            assert "Traceback" not in rest
            server.start()
        else:
            read_until(follower.stderr, "still running, reconnecting")
            server.start()
        (project / "release").touch()
        if not gives_up:
            out = follower.stdout.read() if follower.stdout is not None else ""
            rest = follower.stderr.read()
            assert follower.wait(120) == 0, rest
            assert "Finished." in out and "Traceback" not in rest

        async def stop() -> str:
            runner = await TemporalRunner.connect(server.target, data_dir=Path(env["TETHER_DATA_DIR"]))
            with anyio.fail_after(120):  # another follower sees the turn finish: it was never cancelled
                return (await runner.turn(found.group(1)).result()).stop

        assert anyio.run(stop) == "done"
        assert (project / "started").exists()
    finally:
        for process in (follower, worker):
            if process.poll() is None:
                process.terminate()
            process.wait(30)
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        log.close()

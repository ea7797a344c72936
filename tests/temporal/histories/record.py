"""Record the turn histories under ``tests/temporal/histories/`` (``test_replay.py`` replays them on today's workflow).

Run from the repository root: ``.venv/bin/python tests/temporal/histories/record.py [NAME ...]``. It starts a dev
server of its own, runs each scenario with workers signing with the fixtures' key (``HISTORY_KEY``) and writes
``<name>.json``. A recorded history is a promise: a later ``_workflow.py`` must replay it (or guard its change with
``workflow.patched``), so record a new one only for a new shape of turn, never to make a failing replay pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.temporal.conftest import _BIN, OFFLINE, _free_port  # noqa: E402
from tests.temporal.support import MODEL, count  # noqa: E402
from tests.temporal.test_strangers import HISTORY_KEY  # noqa: E402

from tether.temporal import TurnHandle, connect, submit_turn  # noqa: E402
from tether.temporal._faults import FAULT_ENV  # noqa: E402

HERE = Path(__file__).parent
SUPPORT = ROOT / "tests" / "temporal" / "support.py"


class Scene:
    """One recording: a fresh queue, data directory and marks; worker processes that sign with ``HISTORY_KEY``."""

    def __init__(self, target: str, base: Path) -> None:
        self.target = target
        self.queue = f"q-{uuid.uuid4().hex}"
        self.base = base
        self.marks = base / "marks"
        self.marks.mkdir()
        self.data = base / "data"
        self.data.mkdir(mode=0o700)
        self.workers: list[subprocess.Popen[str]] = []

    def worker(self, fault: str | None = None) -> subprocess.Popen[str]:
        env = {**os.environ, "TETHER_TEMPORAL_KEY": HISTORY_KEY.decode()}
        if fault:
            env[FAULT_ENV] = fault
        process = subprocess.Popen(
            [sys.executable, str(SUPPORT), self.target, self.queue, str(self.data), str(self.marks)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        self.workers.append(process)
        return process

    async def submit(self, calls: list[object]) -> TurnHandle:
        client = await connect(self.target, key=HISTORY_KEY)
        return await submit_turn(
            client,
            json.dumps(calls),
            model=MODEL,
            directory=self.base,
            task_queue=self.queue,
            heartbeat_timeout=2.0,
        )

    def close(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.kill()
            process.wait()


async def until(check: Callable[[], bool]) -> None:
    with anyio.fail_after(120):
        while not check():
            await anyio.sleep(0.05)


async def parallel_calls_and_an_answer(scene: Scene) -> TurnHandle:
    scene.worker()
    handle = await scene.submit([["guarded", {}], ["fast", {"n": 1}]])
    async for event in handle.events():
        if event.kind == "ask":
            await handle.answer(str(event.data["id"]), "once")
    return handle


async def a_step_stored_then_its_worker_killed(scene: Scene) -> TurnHandle:
    first = scene.worker(fault="step-stored")
    handle = await scene.submit([["fast", {"n": 1}], ["fast", {"n": 2}]])
    await until(lambda: first.poll() is not None)
    scene.worker()
    return handle


async def the_only_worker_killed_mid_call(scene: Scene) -> TurnHandle:
    first = scene.worker()
    handle = await scene.submit([["slow", {}]])
    await until(lambda: count(scene.marks, "slow-started") == 1)
    first.kill()
    first.wait()
    scene.worker()  # the call and the session's hold are retried here at once
    return handle


async def cancelled_mid_call(scene: Scene) -> TurnHandle:
    scene.worker()
    handle = await scene.submit([["slow", {}]])
    await until(lambda: count(scene.marks, "slow-started") == 1)
    await handle.cancel()
    return handle


SCENES: dict[str, Callable[[Scene], Awaitable[TurnHandle]]] = {
    "parallel-calls-and-an-answer": parallel_calls_and_an_answer,
    "step-stored-then-its-worker-killed": a_step_stored_then_its_worker_killed,
    "only-worker-killed-mid-call": the_only_worker_killed_mid_call,
    "cancelled-mid-call": cancelled_mid_call,
}


async def main(names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        target = f"127.0.0.1:{port}"
        server = subprocess.Popen(
            [str(_BIN), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
             "--ui-port", str(_free_port()), "--db-filename", f"{tmp}/temporal.db", "--log-level", "error", *OFFLINE],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            with anyio.fail_after(60):
                while True:
                    try:
                        await (await connect(target, key=HISTORY_KEY)).count_workflows()
                        break
                    except Exception:
                        await anyio.sleep(0.2)
            for name in names or list(SCENES):
                base = Path(tmp) / name
                base.mkdir()
                scene = Scene(target, base)
                try:
                    handle = await SCENES[name](scene)
                    with anyio.fail_after(120):
                        result = await handle.result()
                    history = await handle._handle.fetch_history()  # pyright: ignore[reportPrivateUsage]
                finally:
                    scene.close()
                (HERE / f"{name}.json").write_text(history.to_json())
                print(f"{name}: {result.stop}, {len(history.events)} events")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])

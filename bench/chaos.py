"""Chaos: durable turns through one failure at a time, any time (issue 36; ARCHITECTURE.md law 14).

Three worker processes share one PostgreSQL store and one Temporal dev server (both started here). The driver runs N
turns of mixed sequential steps and parallel calls: ``ledger`` calls are not idempotent (each appends its call id to a
ledger file, the side effect counted at the end), ``lookup`` calls are (``Tool(idempotent=True)``: a re-run is
allowed). Meanwhile a killer SIGKILLs a random worker every few seconds and starts it again; once (a third of the
way) it restarts PostgreSQL (every worker's store loses its connection: the workers stop, their supervisor here starts
them again) and once (two thirds of the way) the Temporal server. A model step is a ``FunctionModel`` that logs each
time it is asked.

At the end it counts from the store, the ledger and the ask log:

- turns finished / failed (with the reason) / cancelled;
- calls planned, reported (of them interrupted: after acting, per the ledger, or before), lost (planned, never
  reported), reported more than once;
- side effects duplicated (a ledger call id twice) or missing (a call reported completed whose effect is absent);
- tool parts left ``pending``/``running`` in the store;
- model steps asked twice: a step whose answer was stored whole asked again (must be 0), and steps asked again
  because their answer was cut off mid-stream (allowed: nothing of it was kept).

Run: ``.venv/bin/python bench/chaos.py [--turns 200] [--concurrency 8] [--kill-every 4] [--seed 1]``.
``tests/temporal/test_chaos.py`` runs a short form (10 turns, a few kills, both restarts).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KEY = "chaos-bench-key-" + "0" * 32
MODEL = "chaos"
QUEUE = "chaos"
BIN = Path(sys.executable).parent / "temporal"
OFFLINE = ("--dynamic-config-value", "frontend.enableServerVersionCheck=false")


# -- the plan: what each turn asks for, and the model that plays it --------------------------------------------------


def plan_for(turn: int, rng: random.Random) -> list[list[list[Any]]]:
    """A turn's steps: one to three sequential steps of one to three parallel calls, ledger (not idempotent) and lookup
    (idempotent) mixed."""
    steps: list[list[list[Any]]] = []
    for step in range(rng.randint(1, 3)):
        calls = []
        for index in range(rng.randint(1, 3)):
            tool = "ledger" if rng.random() < 0.7 else "lookup"
            calls.append([tool, {"turn": turn, "step": step, "index": index}])
        steps.append(calls)
    return steps


def _model(asks: Path) -> Any:
    from tether.llm import AssistantMessage, ModelRequest, UserMessage
    from tether.testing import FunctionModel, Step, tool_call

    def plan(request: ModelRequest) -> Step:
        first = next(m for m in request.messages if isinstance(m, UserMessage))
        spec = json.loads("".join(getattr(p, "text", "") for p in first.content))
        step = sum(1 for m in request.messages if isinstance(m, AssistantMessage))
        with asks.open("a") as f:
            f.write(f"{spec['turn']} {step}\n")
        steps: list[list[list[Any]]] = spec["steps"]
        if step >= len(steps):
            return Step(f"done {spec['turn']}")
        return Step(
            *(tool_call(name, args, id=f"call_{uuid.uuid4().hex[:16]}") for name, args in steps[step])
        )

    return FunctionModel(plan)


def _tools(files: Path) -> dict[str, Any]:
    from tether.tools import Tool, ToolContext

    def append(name: str, line: str) -> None:
        fd = os.open(files / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())  # one write: whole lines, even from several processes
        finally:
            os.close(fd)

    async def ledger(value: dict[str, Any], ctx: ToolContext) -> str:
        await anyio.sleep(
            random.uniform(0.0, 0.6)
        )  # the window a kill may land in, before and after the effect
        append("ledger", ctx.call_id)
        await anyio.sleep(random.uniform(0.0, 0.2))
        return "written"

    async def lookup(value: dict[str, Any], ctx: ToolContext) -> str:
        await anyio.sleep(random.uniform(0.0, 0.4))
        append("lookups", ctx.call_id)
        return "found"

    schema = {"type": "object"}
    return {
        "ledger": Tool(description="Appends to the ledger (not idempotent)", input=schema, execute=ledger),
        "lookup": Tool(description="Looks up (idempotent)", input=schema, execute=lookup, idempotent=True),
    }


def worker_main(target: str, data: str, files: str, root: str) -> None:
    """A worker process (``chaos.py worker ...``): the store comes from ``$TETHER_STORE_URL``; prints ``ready``."""
    from tether import Runtime
    from tether.errors import StoreError
    from tether.temporal import run_worker

    async def main() -> None:
        async with Runtime(data_dir=data, plugins=False) as rt:
            rt.tools.register(_tools(Path(files)))
            await run_worker(
                rt,
                target,
                task_queue=QUEUE,
                models={MODEL: _model(Path(files) / "asks")},
                ready=lambda: print("ready", flush=True),
                roots=[root],
            )

    try:
        anyio.run(main)
    except (
        StoreError
    ) as exc:  # the store failed (PostgreSQL restarted): exit, the supervisor starts a new one
        print(f"worker stopped: {exc.message}", file=sys.stderr, flush=True)
        sys.exit(3)


# -- the parts the killer breaks -------------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Temporal:
    """A dev server that can be restarted on its port and database (its turns survive)."""

    def __init__(self, base: Path) -> None:
        self.db = base / "temporal.db"
        self.port = _free_port()
        self.target = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(BIN), "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(self.port),
             "--ui-port", str(_free_port()), "--db-filename", str(self.db), "--log-level", "error", *OFFLINE],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(30)
            self.process = None


class Fleet:
    """The worker processes, started again whenever one is gone (killed, or stopped by its failed store)."""

    def __init__(self, size: int, target: str, base: Path, files: Path, root: Path, url: str) -> None:
        self.target = target
        self.base = base
        self.files = files
        self.root = root
        self.env = {**os.environ, "TETHER_STORE_URL": url, "TETHER_TEMPORAL_KEY": KEY}
        self.env.pop("TETHER_TEMPORAL_FAULT", None)
        self.processes: list[subprocess.Popen[str] | None] = [None] * size
        self.started = 0
        self.logs: list[Any] = []

    def start(self, index: int) -> None:
        old = self.processes[index]
        if old is not None and old.stdout is not None:
            old.stdout.close()
        data = self.base / f"worker-{index}"
        data.mkdir(mode=0o700, exist_ok=True)
        log = (self.base / f"worker-{index}.log").open("a")
        self.logs.append(log)
        process = subprocess.Popen(
            [sys.executable, __file__, "worker", self.target, str(data), str(self.files), str(self.root)],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=self.env,
        )
        self.processes[index] = process
        self.started += 1

    async def ready(self, index: int) -> bool:
        process = self.processes[index]
        assert process is not None and process.stdout is not None
        line = await anyio.to_thread.run_sync(process.stdout.readline, abandon_on_cancel=True)
        return line.strip() == "ready"

    def kill(self, index: int) -> None:
        process = self.processes[index]
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()

    def gone(self) -> list[int]:
        return [i for i, p in enumerate(self.processes) if p is None or p.poll() is not None]

    def close(self) -> None:
        for index in range(len(self.processes)):
            self.kill(index)
            process = self.processes[index]
            if process is not None and process.stdout is not None:
                process.stdout.close()
        for log in self.logs:
            log.close()


# -- the run ---------------------------------------------------------------------------------------------------------


@dataclass
class Report:
    turns: int
    finished: int = 0
    failed: dict[str, int] = field(default_factory=dict[str, int])
    cancelled: int = 0
    calls_planned: int = 0
    calls_reported: int = 0
    calls_lost: int = 0
    calls_reported_twice: int = 0
    interrupted_after_acting: int = 0
    interrupted_before_acting: int = 0
    idempotent_reruns: int = 0
    duplicated_side_effects: int = 0
    missing_side_effects: int = 0
    parts_left_running: int = 0
    stored_steps_asked_again: int = 0
    cut_steps_asked_again: int = 0
    worker_kills: int = 0
    worker_starts: int = 0
    postgres_restarts: int = 0
    temporal_restarts: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        failed = ", ".join(f"{n} {why}" for why, n in self.failed.items()) or "0"
        return [
            f"turns: {self.turns} submitted, {self.finished} finished, failed: {failed}, cancelled: {self.cancelled}",
            f"calls: {self.calls_planned} planned, {self.calls_reported} reported ({self.interrupted_after_acting} "
            f"interrupted after acting, {self.interrupted_before_acting} before; {self.idempotent_reruns} idempotent "
            f"re-runs), {self.calls_lost} lost, {self.calls_reported_twice} reported twice",
            f"side effects: {self.duplicated_side_effects} duplicated, {self.missing_side_effects} missing",
            f"parts left running: {self.parts_left_running}",
            f"model steps asked again: {self.stored_steps_asked_again} with a stored answer, "
            f"{self.cut_steps_asked_again} cut off mid-stream",
            f"chaos: {self.worker_kills} worker kills ({self.worker_starts} starts), PostgreSQL restarted "
            f"{self.postgres_restarts}x, Temporal restarted {self.temporal_restarts}x, {self.seconds:.0f} s",
        ]

    @property
    def clean(self) -> bool:
        return (
            self.finished == self.turns
            and self.calls_lost == 0
            and self.calls_reported_twice == 0
            and self.duplicated_side_effects == 0
            and self.missing_side_effects == 0
            and self.parts_left_running == 0
            and self.stored_steps_asked_again == 0
        )


async def run(
    turns: int = 200,
    *,
    concurrency: int = 8,
    kill_every: float = 4.0,
    workers: int = 3,
    seed: int = 1,
    heartbeat: float = 3.0,
    restart_postgres: bool = True,
    restart_temporal: bool = True,
    log: Any = None,
) -> Report:
    """Run the chaos (see the module docstring) and count what happened."""
    from tests.postgres.server import start_server

    from tether.temporal import TurnHandle, TurnUnreadable, connect, submit_turn
    from tether.temporal._types import TurnOutput

    say = log or (lambda text: None)
    rng = random.Random(seed)
    report = Report(turns=turns)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tether-chaos-") as tmp:
        base = Path(tmp)
        files, root = base / "files", base / "project"
        files.mkdir()
        root.mkdir()
        postgres = start_server()
        temporal = Temporal(base)
        temporal.start()
        fleet = Fleet(workers, temporal.target, base, files, root, postgres.database())
        plans = {i: plan_for(i, rng) for i in range(turns)}
        results: dict[int, Any] = {}
        failures: dict[int, str] = {}
        try:
            with anyio.fail_after(120):
                while True:
                    try:
                        client = await connect(temporal.target, key=KEY.encode())
                        await client.count_workflows()
                        break
                    except Exception:
                        await anyio.sleep(0.2)
            for index in range(workers):
                fleet.start(index)
            for index in range(workers):
                assert await fleet.ready(index), (
                    f"worker {index} did not start (see {base}/worker-{index}.log)"
                )
            finished = anyio.Event()
            limit = anyio.Semaphore(concurrency)

            async def one(turn: int) -> None:
                async with limit:
                    workflow_id = f"chaos-{turn}-{uuid.uuid4().hex[:8]}"
                    prompt = json.dumps({"turn": turn, "steps": plans[turn]})
                    while (
                        True
                    ):  # a submit that fails (the server restarting) is sent again, under the same id
                        try:
                            await submit_turn(
                                client, prompt, model=MODEL, directory=root, task_queue=QUEUE,
                                workflow_id=workflow_id, heartbeat_timeout=heartbeat,
                            )  # fmt: skip
                            break
                        except Exception as exc:
                            if "is busy" in str(exc):  # the first send got through
                                break
                            await anyio.sleep(0.5)
                    handle = client.get_workflow_handle(workflow_id, result_type=TurnOutput)
                    try:
                        results[turn] = await TurnHandle(handle).result(patience=600)
                    except TurnUnreadable as exc:
                        failures[turn] = f"unreadable: {exc.message}"
                    except Exception as exc:
                        failures[turn] = f"{type(exc).__name__}: {exc}"[:200]
                    say(f"turn {turn}: {results[turn].stop if turn in results else failures[turn]}")

            replacing: set[int] = set()  # killed workers whose successor is not serving yet

            async def supervise() -> None:
                while True:
                    for index in fleet.gone():
                        fleet.start(index)
                        await fleet.ready(index)
                        replacing.discard(index)
                    await anyio.sleep(0.2)

            async def kill() -> None:
                # A kill every few seconds of serving: the last kill's successor serves before the clock runs again.
                # A busy machine starts a worker slowly; kills on the wall clock alone could kill each successor
                # before it serves, and the run would stall instead of being tested.
                while True:
                    while replacing:
                        await anyio.sleep(0.2)
                    await anyio.sleep(kill_every * rng.uniform(0.5, 1.5))
                    index = rng.randrange(workers)
                    say(f"killing worker {index}")
                    replacing.add(index)
                    fleet.kill(index)
                    report.worker_kills += 1

            async def restart() -> None:  # each server once, a third and two thirds of the way
                while True:
                    await anyio.sleep(0.2)
                    done = len(results) + len(failures)
                    if restart_postgres and not report.postgres_restarts and done >= turns / 3:
                        say("restarting PostgreSQL")
                        await anyio.to_thread.run_sync(postgres.restart)
                        report.postgres_restarts += 1
                    elif restart_temporal and not report.temporal_restarts and done >= 2 * turns / 3:
                        say("restarting Temporal")
                        temporal.stop()
                        await anyio.sleep(1.0)
                        temporal.start()
                        report.temporal_restarts += 1

            async with anyio.create_task_group() as chaos:
                chaos.start_soon(supervise)
                chaos.start_soon(kill)
                chaos.start_soon(restart)
                async with anyio.create_task_group() as tg:
                    for turn in range(turns):
                        tg.start_soon(one, turn)
                finished.set()
                chaos.cancel_scope.cancel()
            report.worker_starts = fleet.started
            await _count(report, plans, results, failures, files, fleet.env["TETHER_STORE_URL"])
        finally:
            fleet.close()
            temporal.stop()
            postgres.stop()
    report.seconds = time.monotonic() - started
    return report


async def _count(
    report: Report,
    plans: dict[int, list[list[list[Any]]]],
    results: dict[int, Any],
    failures: dict[int, str],
    files: Path,
    url: str,
) -> None:
    from tests.postgres.fixtures import query

    from tether.session import AssistantInfo, StepFinishPart, StepStartPart
    from tether.store import PostgresStore

    def lines(name: str) -> list[str]:
        path = files / name
        return path.read_text().split() if path.exists() else []

    ledger = Counter(lines("ledger"))
    lookups = Counter(lines("lookups"))
    asked = len(lines("asks")) // 2  # one "turn step" line per time a model was asked
    report.duplicated_side_effects = sum(n - 1 for n in ledger.values() if n > 1)
    for reason in failures.values():
        key = reason.split(":", 1)[0]
        report.failed[key] = report.failed.get(key, 0) + 1
    stored_answers: Counter[tuple[int, int]] = Counter()
    async with PostgresStore(
        url, recover=False
    ) as store:  # read as it is: recovering would hide what is left
        for turn, result in results.items():
            planned = sum(len(step) for step in plans[turn])
            report.calls_planned += planned
            if result.stop == "cancelled":
                report.cancelled += 1
            else:
                report.finished += 1
            ids = Counter(call.call_id for call in result.calls)
            report.calls_reported += len(ids)
            report.calls_reported_twice += sum(n - 1 for n in ids.values() if n > 1)
            report.calls_lost += max(0, planned - len(ids))
            for call in result.calls:
                if call.error_kind == "interrupted":
                    if ledger.get(call.call_id):
                        report.interrupted_after_acting += 1
                    else:
                        report.interrupted_before_acting += 1
                elif call.outcome == "completed" and call.name == "ledger" and not ledger.get(call.call_id):
                    report.missing_side_effects += 1
                if call.name == "lookup" and lookups.get(call.call_id, 0) > 1:
                    report.idempotent_reruns += lookups[call.call_id] - 1
            for message in await store.load_messages(result.session_id):
                info = message.info
                start = next((p for p in message.parts if isinstance(p, StepStartPart)), None)
                finished = any(isinstance(p, StepFinishPart) for p in message.parts)
                if isinstance(info, AssistantInfo) and start is not None and finished:
                    stored_answers[(turn, start.step)] += 1
        for turn in failures:
            report.calls_planned += sum(len(step) for step in plans[turn])
    report.parts_left_running = int(
        query(url, "SELECT count(*) FROM parts WHERE type = 'tool' AND state IN ('pending', 'running')")[0][0]
    )
    report.stored_steps_asked_again = sum(n - 1 for n in stored_answers.values() if n > 1)
    # every ask of a finished turn's model either stored its answer whole or was cut off mid-stream (kept nothing)
    report.cut_steps_asked_again = max(0, asked - sum(stored_answers.values()))


def main(argv: Sequence[str]) -> int:
    if argv and argv[0] == "worker":
        worker_main(*argv[1:5])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--kill-every", type=float, default=4.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    parser.add_argument("-v", "--verbose", action="store_true")
    options = parser.parse_args(argv)
    report = anyio.run(
        lambda: run(
            options.turns,
            concurrency=options.concurrency,
            kill_every=options.kill_every,
            workers=options.workers,
            seed=options.seed,
            log=(lambda text: print(text, file=sys.stderr, flush=True)) if options.verbose else None,
        )
    )
    if options.json:
        print(json.dumps(asdict(report)))
    else:
        print("\n".join(report.lines()))
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

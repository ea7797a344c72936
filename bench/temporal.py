"""Per-call overhead of the Temporal path (``tether.temporal``) vs the in-process runner, side by side.

Both run the same turns with a ``FunctionModel`` and a no-op tool on the SQLite store; the Temporal path runs them
on a worker in this process against a local dev server (``temporal server start-dev``, started here on a free port
with its own SQLite file), so what differs is the workflow, the activities and the store reads they do:

- ``seq``: N sequential calls (one call per step), then a final text step: a model activity and a tool activity per
  call, each a round trip through the server;
- ``par``: one step with N parallel calls, then a final text step: the calls' activities run at once.

Per-call overhead = (wall time of the turn with N calls - wall time of a turn with no call) / N, median of the
repeats, so the turn's fixed cost (the workflow start, the first model step) is not counted per call. The ratio is
Temporal / in-process. Run: ``.venv/bin/python bench/temporal.py [--calls 10] [--repeats 5] [--unsynced-server]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tether import Runtime
from tether.llm import ModelRequest, ToolMessage, UserMessage
from tether.testing import FunctionModel, Step, tool_call
from tether.tools import Tool, ToolContext


def _plan(request: ModelRequest) -> Step:
    """The prompt is ``{"calls": N, "parallel": bool}``; sequential turns make one call per step."""
    first = next(m for m in request.messages if isinstance(m, UserMessage))
    spec = json.loads("".join(getattr(p, "text", "") for p in first.content))
    done = sum(len(m.results) for m in request.messages if isinstance(m, ToolMessage))
    calls: int = spec["calls"]
    if done >= calls:
        return Step("done")
    if spec["parallel"]:
        return Step(*(tool_call("noop", {"i": i}, id=f"call_{uuid.uuid4().hex[:12]}") for i in range(calls)))
    return Step(tool_call("noop", {"i": done}, id=f"call_{uuid.uuid4().hex[:12]}"))


async def _noop(value: dict[str, Any], ctx: ToolContext) -> str:
    return "ok"


PRAGMAS: list[str] = []

NOOP = Tool(description="Does nothing", input={"type": "object"}, execute=_noop)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spread(values: list[float]) -> float:
    """Half the interquartile range (the median absolute deviation's cheap cousin): how much one run swings."""
    if len(values) < 4:
        return (max(values) - min(values)) / 2
    q = statistics.quantiles(values, n=4)
    return (q[2] - q[0]) / 2


def _figure(value: float, noise: float) -> str:
    """``value`` ms, or "below noise" when the empty turn's own swing hides it (a negative difference included)."""
    return "below noise" if value <= noise else f"{value:.3f}"


def _ratio(figures: dict[str, float], noise: dict[str, float]) -> str:
    if figures["in-process"] <= noise["in-process"] or figures["temporal"] <= noise["temporal"]:
        return "n/a"  # a ratio to a figure below noise would be noise
    return f"{figures['temporal'] / figures['in-process']:.0f}x"


async def _breakdown(client: Any, turn_on_temporal: Any, calls: int) -> None:
    """Where a sequential call's time goes, from one turn's history (the server's timestamps) and a codec timing."""
    from temporalio.api.enums.v1 import EventType as E

    from tether.temporal._codec import SigningCodec

    started = time.time()
    await turn_on_temporal(calls, False)()
    async for found in client.list_workflows(f"StartTime >= '{_iso(started)}'"):
        history = await client.get_workflow_handle(found.id, run_id=found.run_id).fetch_history()
    at: dict[int, float] = {}
    kinds: dict[int, str] = {}
    spent: dict[str, float] = {"tether.model_step": 0.0, "tether.tool_call": 0.0, "workflow task": 0.0}
    for event in history.events:
        at[event.event_id] = event.event_time.ToMicroseconds() / 1e6
        kind = event.event_type
        if kind == E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            kinds[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif kind == E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            # a retried activity's "started" event is written with its completion: schedule to completion it is
            scheduled = event.activity_task_completed_event_attributes.scheduled_event_id
            if kinds[scheduled] in spent:
                spent[kinds[scheduled]] += at[event.event_id] - at[scheduled]
        elif kind == E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            scheduled = event.workflow_task_completed_event_attributes.scheduled_event_id
            spent["workflow task"] += at[event.event_id] - at[scheduled]
    total = at[max(at)] - at[min(at)]
    codec = SigningCodec(b"k" * 32)
    payload = client.data_converter.payload_converter.to_payloads([{"input": "x" * 200}])[0]
    rounds = 2000
    clock = time.perf_counter()
    for _ in range(rounds):
        await codec.decode(await codec.encode([payload]))
    sign_us = (time.perf_counter() - clock) / rounds * 1e6
    per = 1000 / calls
    rest = total - sum(spent.values())
    print(f"one sequential turn of {calls} calls on the server's clock, divided by {calls} (ms per call):")
    print(f"  model step activities, scheduled to completed: {spent['tether.model_step'] * per:8.1f}")
    print(f"  tool call activities, scheduled to completed:  {spent['tether.tool_call'] * per:8.1f}")
    print(f"  workflow tasks, scheduled to completed:        {spent['workflow task'] * per:8.1f}")
    print(f"  between them (the server's own hand-offs):     {rest * per:8.1f}")
    print(f"  the whole turn, first to last event:           {total * per:8.1f}")
    print(f"  signing and checking one payload: {sign_us:.0f} us (a call moves ~8 payloads)")


def _iso(seconds: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def _timed(run: Any) -> float:
    start = time.perf_counter()
    await run()
    return time.perf_counter() - start


async def main(calls: int, repeats: int) -> None:
    from tether.temporal import connect, submit_turn, worker

    tmp = Path(tempfile.mkdtemp(prefix="tether-bench-temporal-"))
    port = _free_port()
    binary = str(Path(sys.executable).parent / "temporal")
    server = subprocess.Popen(
        [binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
         "--db-filename", str(tmp / "temporal.db"), "--log-level", "error", *PRAGMAS,
         "--dynamic-config-value", "frontend.enableServerVersionCheck=false"],  # no version-check lookup
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    target = f"127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                # a signing client (docs/temporal.md, Trust boundary): the worker refuses any other
                client = await connect(target, data_dir=tmp / "data")
                await client.count_workflows()
                break
            except Exception:
                await asyncio.sleep(0.1)
        model = FunctionModel(_plan)
        async with Runtime(data_dir=tmp / "data", plugins=False) as rt:
            rt.tools.register({"noop": NOOP})
            queue = "bench"
            async with worker(rt, client, task_queue=queue, models={"plan": model}, roots=[tmp]):

                def turn_in_process(n: int, parallel: bool) -> Any:
                    async def run() -> None:
                        result = await rt.run(json.dumps({"calls": n, "parallel": parallel}), model=model)
                        assert result.tool_calls == n, result

                    return run

                def turn_on_temporal(n: int, parallel: bool) -> Any:
                    async def run() -> None:
                        handle = await submit_turn(
                            client,
                            json.dumps({"calls": n, "parallel": parallel}),
                            model="plan",
                            directory=tmp,
                            task_queue=queue,
                        )
                        result = await handle.result()
                        assert result.tool_calls == n and all(c.ok for c in result.calls), result

                    return run

                for make in (turn_in_process, turn_on_temporal):  # warm both paths once
                    await make(2, False)()
                print(
                    f"{calls} calls per turn, median of {repeats} repeats; per call = (turn - empty turn) / calls"
                )
                print(f"{'shape':6} {'in-process ms/call':>20} {'temporal ms/call':>18} {'ratio':>8}")
                for shape, parallel in (("seq", False), ("par", True)):
                    figures: dict[str, float] = {}
                    noise: dict[str, float] = {}
                    for name, make in (("in-process", turn_in_process), ("temporal", turn_on_temporal)):
                        empties = [await _timed(make(0, parallel)) for _ in range(repeats)]
                        fulls = [await _timed(make(calls, parallel)) for _ in range(repeats)]
                        figures[name] = (statistics.median(fulls) - statistics.median(empties)) / calls * 1000
                        # what the per-call figure cannot resolve: the spread of the empty turn, per call
                        noise[name] = _spread(empties) / calls * 1000
                    print(
                        f"{shape:6} {_figure(figures['in-process'], noise['in-process']):>20} "
                        f"{_figure(figures['temporal'], noise['temporal']):>18} {_ratio(figures, noise):>8}"
                    )
                print()
                await _breakdown(client, turn_on_temporal, calls)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--unsynced-server",
        action="store_true",
        help="run the dev server's SQLite with synchronous=OFF (what the server's own commits cost, for comparison)",
    )
    args = parser.parse_args()
    if args.unsynced_server:
        PRAGMAS[:] = ["--sqlite-pragma", "synchronous=OFF", "--sqlite-pragma", "journal_mode=WAL"]
    asyncio.run(main(args.calls, args.repeats))

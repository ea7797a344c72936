"""Scale: 1,000 concurrent sessions across 4 worker processes sharing one PostgreSQL, next to one process on SQLite.

Each session claims itself (one session, one writer) and runs one turn with a scripted model (``tether.testing``):
``--calls`` sequential no-op tool calls (distinct inputs), then a final text step. All sessions of a worker run at
once in its event loop; the workers start together (a "go" line on their stdin after setup) and share one database.

Reported, for each store:

- errors (exceptions in turns, parts in ``error``) and the verification by counting in the database: every session
  has exactly ``--calls`` completed tool parts with distinct call ids (0 lost, 0 duplicated);
- throughput: calls / wall seconds from "go" until every worker has flushed its store;
- per-call overhead: the workers' process CPU (event loop and store writer thread, every process summed) per call;
- call-to-call latency, p50 and p99: within one session, the time from one call's execution to the next call's
  (settle + recording + the next scripted model step + dispatch) while every other session of the worker runs too,
  so it grows with the sessions per process: a measure of fairness under load, not of the cost of one call.

The PostgreSQL server is the tests' (``tests/postgres/server.py``: ``initdb`` in a temp directory, ``fsync=off``, like
SQLite's ``synchronous=NORMAL`` no fsync per commit). Run: ``.venv/bin/python bench/scale.py [--sessions 1000]
[--workers 4] [--calls 10] [--only postgresql|sqlite]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from runner import (  # bench/runner.py: the same no-op tool, agent and Location stand-ins
    NoopInput,
    _Agent,
    _Loc,
)

ROOT = Path(__file__).resolve().parents[1]


async def run_sessions(target: str, sessions: int, calls: int, wait_for_go: bool) -> dict[str, Any]:
    """Run ``sessions`` concurrent turns of ``calls`` calls each on the store ``target`` (a path or a URL)."""
    from tether.bus import Bus
    from tether.output import OutputStore
    from tether.session import Sessions
    from tether.store import PostgresStore, SQLiteStore
    from tether.testing import ScriptedModel, Step, tool_call
    from tether.tools import Tool, ToolRegistry, ToolResponse

    entered: dict[str, list[float]] = {}

    async def noop(value: NoopInput, ctx: Any) -> ToolResponse[Any]:
        entered.setdefault(ctx.session_id, []).append(time.perf_counter())
        return ToolResponse(content="ok")

    store: SQLiteStore | PostgresStore = (
        PostgresStore(target) if target.startswith("postgresql://") else SQLiteStore(target)
    )
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with store:
            registry = ToolRegistry(output=OutputStore(Path(tmp) / "tool-output"))
            registry.register({"noop": Tool(description="Do nothing", input=NoopInput, execute=noop)})
            service = Sessions(store=store, bus=Bus(), agents={"build": _Agent(steps=calls + 1)})
            loc = _Loc(registry, Path(tmp), Path(tmp))
            handles = [await service.create(loc) for _ in range(sessions)]
            for handle in handles:
                await store.claim(handle.id)
            await store.flush()
            if wait_for_go:
                print("ready", flush=True)
                await anyio.to_thread.run_sync(sys.stdin.readline)
            start, cpu = time.time(), time.process_time()

            async def turn(handle: Any, index: int) -> None:
                steps = [Step(tool_call("noop", {"text": f"s{index}c{i}"})) for i in range(calls)]
                try:
                    result = await handle.prompt("go", model=ScriptedModel([*steps, Step("done")]))
                    if result.tool_calls != calls:
                        errors.append(f"{handle.id}: {result.tool_calls} calls")
                except Exception as exc:  # counted and reported: the bench's verdict is "0 errors"
                    errors.append(f"{handle.id}: {exc!r}")

            async with anyio.create_task_group() as tg:
                for index, handle in enumerate(handles):
                    tg.start_soon(turn, handle, index)
            await store.flush()
            end, cpu = time.time(), time.process_time() - cpu
            service.close()
    gaps = [b - a for times in entered.values() for a, b in itertools.pairwise(times)]
    executed = sum(map(len, entered.values()))
    return {"start": start, "end": end, "cpu": cpu, "errors": errors, "gaps": gaps, "executed": executed}


def count(target: str) -> tuple[int, int, int, int]:
    """``(completed tool parts, distinct (session, call id), other tool parts, sessions)`` in the store."""
    query = (
        "SELECT (SELECT count(*) FROM parts WHERE type = 'tool' AND state = 'completed'), "
        "(SELECT count(*) FROM (SELECT DISTINCT session_id, call_id FROM parts WHERE type = 'tool' "
        "AND state = 'completed') AS d), "
        "(SELECT count(*) FROM parts WHERE type = 'tool' AND state <> 'completed'), (SELECT count(*) FROM sessions)"
    )
    if target.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(target) as conn:
            row = conn.execute(query).fetchone()  # pyright: ignore[reportArgumentType]
    else:
        import sqlite3

        conn = sqlite3.connect(target)
        row = conn.execute(query).fetchone()
        conn.close()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def report(name: str, target: str, results: list[dict[str, Any]], sessions: int, calls: int) -> None:
    start = min(r["start"] for r in results)
    end = max(r["end"] for r in results)
    errors = [e for r in results for e in r["errors"]]
    gaps = sorted(g for r in results for g in r["gaps"])
    executed = sum(r["executed"] for r in results)
    cpu_ms = sum(r["cpu"] for r in results) / max(1, executed) * 1000
    completed, distinct, other, stored_sessions = count(target)
    expected = sessions * calls
    lost = expected - distinct
    duplicated = completed - distinct
    p50 = gaps[len(gaps) // 2] * 1000 if gaps else float("nan")
    p99 = gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))] * 1000 if gaps else float("nan")
    print(
        f"{name:<34} sessions {stored_sessions:>5}  calls {completed:>6}/{expected}  executed {executed:>6}  "
        f"errors {len(errors) + other}  lost {lost}  duplicated {duplicated}  "
        f"{expected / (end - start):>6.0f} calls/s  tether CPU/call {cpu_ms:.2f} ms  "
        f"call-to-call p50 {p50:.0f} ms  p99 {p99:.0f} ms"
    )
    for error in errors[:5]:
        print("   ", error)


def worker_main(url: str, sessions: int, calls: int) -> None:
    result = anyio.run(run_sessions, url, sessions, calls, True)
    print(json.dumps(result), flush=True)


def run_postgres(sessions: int, workers: int, calls: int) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.postgres.server import start_server

    server = start_server()
    try:
        url = server.database()
        share = [sessions // workers + (1 if i < sessions % workers else 0) for i in range(workers)]
        procs = [
            subprocess.Popen(
                [sys.executable, __file__, "--worker", url, "--sessions", str(n), "--calls", str(calls)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            for n in share
        ]
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            assert line == "ready", line
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results: list[dict[str, Any]] = []
        for proc in procs:
            out, _ = proc.communicate()
            results.append(json.loads(out.strip().splitlines()[-1]))
        report(f"postgresql, {workers} worker processes", url, results, sessions, calls)
    finally:
        server.stop()


def run_sqlite(sessions: int, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "tether.db")
        result = anyio.run(run_sessions, path, sessions, calls, False)
        report("sqlite, 1 process", path, [result], sessions, calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--calls", type=int, default=10, help="sequential tool calls per session")
    parser.add_argument("--only", choices=["postgresql", "sqlite"])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker, args.sessions, args.calls)
        return
    print(f"{args.sessions} concurrent sessions x {args.calls} sequential calls, scripted model, no-op tool")
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    if args.only != "sqlite":
        run_postgres(args.sessions, args.workers, args.calls)
    if args.only != "postgresql":
        run_sqlite(args.sessions, args.calls)


if __name__ == "__main__":
    main()

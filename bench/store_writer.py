"""The store's writer thread against an anyio-only writer: what each costs the event loop per tool call.

``SQLiteStore.append`` is synchronous (the session's emitter records a state change the moment it happens, law 7),
so a writer has to run beside the loop: tether's is one thread that owns the connection, drains a queue and commits
whatever accumulated as one transaction. The alternative the issue asks about is anyio only: each durable write
awaited through ``anyio.to_thread.run_sync`` on a dedicated ``CapacityLimiter(1)``, batched (the writes queued while a
batch runs go in the next one, as ``tether._blocking.run_batched`` does). anyio offers no background task outside a
task group, and ``SQLiteStore.open()`` / ``aclose()`` are separate calls, so such a writer is driven by the callers:
every durable write becomes an ``await``.

Both write the same events through the same row code (``Writes``) into the same schema; a call is its three
tool-part states (pending, running, completed). Workloads: ``par100`` (100 concurrent calls) and ``seq100`` (100
calls one after the other). Figures: loop-thread CPU per call and wall time per call until everything is committed,
medians of interleaved repeats.

Run: ``.venv/bin/python bench/store_writer.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread

from tether.content import Text
from tether.ids import ascending
from tether.records._events import PartUpdated
from tether.records._model import ToolPart, now_ms
from tether.store import SQLiteStore
from tether.store._rows import Writes  # the store's own row code: the comparison is the writer alone

CALLS = 100


def _states(session_id: str, i: int) -> list[PartUpdated]:
    part = ToolPart(
        id=ascending("prt"),
        session_id=session_id,
        message_id="msg_bench",
        call_id=f"call_{i}",
        tool="noop",
        state="pending",
        input={"text": f"x{i}"},
    )
    running = ToolPart(**{**_fields(part), "state": "running", "started": now_ms()})
    done = ToolPart(**{**_fields(running), "state": "completed", "ended": now_ms(), "content": (Text("ok"),)})
    return [PartUpdated(part), PartUpdated(running), PartUpdated(done)]


def _fields(part: ToolPart) -> dict[str, object]:
    return {name: getattr(part, name) for name in ToolPart.__dataclass_fields__}


class AnyioWriter:
    """Writes awaited by their callers: one worker-thread hand-off (dedicated limiter) per batch of queued writes."""

    def __init__(self, conn: sqlite3.Connection, owner: str) -> None:
        self._conn = conn
        self._owner = owner
        self._limiter = anyio.CapacityLimiter(1)
        self._queued: list[PartUpdated] = []
        self._appended = 0  # events queued so far
        self._committed = 0  # events committed so far (the first ``_committed`` appended)
        self._written: dict[str, tuple[object, object]] = {}
        self._running: anyio.Event | None = None

    async def write(self, event: PartUpdated) -> None:
        self._queued.append(event)
        self._appended += 1
        mine = self._appended
        while self._running is not None:
            await self._running.wait()
            if self._committed >= mine:
                return
        done = self._running = anyio.Event()
        try:
            while self._queued:
                batch, self._queued = self._queued, []
                await anyio.to_thread.run_sync(self._commit, batch, limiter=self._limiter)
                self._committed += len(batch)
        finally:
            self._running = None
            done.set()

    def _commit(self, batch: list[PartUpdated]) -> None:
        writes = Writes(self._owner, self._written)
        self._conn.execute("BEGIN IMMEDIATE")
        now = now_ms()
        for event in batch:
            writes.add(event, now)
        writes.execute(self._conn)
        self._conn.execute("COMMIT")


async def _thread_writer(root: Path, parallel: bool) -> tuple[float, float]:
    async with SQLiteStore(root / "thread.db") as store:
        session = "ses_thread"
        calls = [_states(session, i) for i in range(CALLS)]
        await store.flush()
        cpu, start = time.thread_time(), time.perf_counter()
        if parallel:
            for states in calls:  # the emitter's appends: a parallel step's calls interleave, nothing awaited
                for event in states:
                    store.append(event)
        else:
            for states in calls:
                for event in states:
                    store.append(event)
                await anyio.lowlevel.checkpoint()  # a step boundary: the loop turns between calls
        await store.flush()
        return time.thread_time() - cpu, time.perf_counter() - start


async def _anyio_writer(root: Path, parallel: bool) -> tuple[float, float]:
    conn = sqlite3.connect(root / "anyio.db", isolation_level=None, check_same_thread=False)
    async with SQLiteStore(root / "anyio.db"):  # the same schema, migrated
        pass
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    writer = AnyioWriter(conn, "owner_bench")
    session = "ses_anyio"
    calls = [_states(session, i) for i in range(CALLS)]

    async def one(states: list[PartUpdated]) -> None:
        for event in states:
            await writer.write(event)

    cpu, start = time.thread_time(), time.perf_counter()
    if parallel:
        async with anyio.create_task_group() as tg:
            for states in calls:
                tg.start_soon(one, states)
    else:
        for states in calls:
            await one(states)
    elapsed = time.thread_time() - cpu, time.perf_counter() - start
    conn.close()
    return elapsed


Writer = Callable[[Path, bool], Awaitable[tuple[float, float]]]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    writers: dict[str, Writer] = {"thread (tether)": _thread_writer, "anyio to_thread": _anyio_writer}
    with open("/proc/loadavg") as f:
        print(f"load average before: {' '.join(f.read().split()[:3])}")
    print(f"{'workload':<9}{'writer':<17}{'loop cpu µs/call':>18}{'wall µs/call':>14}")
    for name, parallel in (("par100", True), ("seq100", False)):
        cpu: dict[str, list[float]] = {w: [] for w in writers}
        wall: dict[str, list[float]] = {w: [] for w in writers}
        for i in range(args.repeat):
            for w in list(writers) if i % 2 == 0 else reversed(list(writers)):
                with tempfile.TemporaryDirectory() as tmp:
                    c, t = anyio.run(writers[w], Path(tmp), parallel)
                cpu[w].append(c / CALLS * 1e6)
                wall[w].append(t / CALLS * 1e6)
        for w in writers:
            print(f"{name:<9}{w:<17}{statistics.median(cpu[w]):>18.1f}{statistics.median(wall[w]):>14.1f}")
    with open("/proc/loadavg") as f:
        print(f"load average after: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()

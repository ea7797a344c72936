"""The SQLite writer's batch cap: how much a large parallel step's versions fold, in writer CPU per call.

The writer writes each record once per transaction in its last version (``Writes``), so the number of events one
transaction may take from the queue (``tether.store._sqlite._MAX_BATCH``) decides how much folding a burst gets.
This records the durable events of real turns (``runner.TetherBench``: ``N`` no-op calls in one parallel step
through ``Session.prompt``, the store on), then replays them into fresh stores through the writer's own
``_apply``, in batches of the old cap (4,096) and of the current one, in the same run: thread CPU per call, no event
loop competing for the GIL, so the figure is the writer's work alone (medians of interleaved repeats).

Run: ``.venv/bin/python bench/writer_batch.py [--calls N] [--repeat R]``

Issue 14, 2026-12-03 (10,000 calls, 30,016 events a turn): 4,096 -> 27.6 us, 32,768 -> 17.6 us of writer CPU per
call (1.6x); with SQLite's automatic checkpoint turned off as well, 19.0 and 15.3 us (the checkpoint is ~8 us of the
rest at the old cap, run by the committing writer).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from runner import TetherBench
from tether.store import SQLiteStore
from tether.store import _sqlite as writer  # pyright: ignore[reportPrivateUsage]

OLD_CAP = 4096


async def _record(calls: int, turns: int) -> list[list[Any]]:
    """The durable events of ``turns`` turns of ``calls`` parallel calls (after one warm-up turn), in append order."""
    turns_seen: list[list[Any]] = []
    recording = False
    append = SQLiteStore.append

    def recorded(self: SQLiteStore, event: Any) -> None:
        if recording:
            turns_seen[-1].append(event)
        append(self, event)

    SQLiteStore.append = recorded  # type: ignore[method-assign]
    try:
        async with TetherBench() as bench:
            await bench.turn(calls, True)
            recording = True
            for _ in range(turns):
                turns_seen.append([])
                await bench.turn(calls, True)
    finally:
        SQLiteStore.append = append  # type: ignore[method-assign]
    return turns_seen


def _replay(turns: list[list[Any]], cap: int, calls: int) -> float:
    """Writer thread CPU per call to write ``turns`` into a fresh store, ``cap`` events per transaction."""
    with tempfile.TemporaryDirectory() as root:
        store = SQLiteStore(Path(root) / "tether.db")
        conn = store._connect()  # pyright: ignore[reportPrivateUsage]
        try:
            start = time.thread_time()
            for events in turns:
                for i in range(0, len(events), cap):
                    store._apply(conn, events[i : i + cap])  # pyright: ignore[reportPrivateUsage]
            return (time.thread_time() - start) / (len(turns) * calls) * 1e6
        finally:
            conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--calls", type=int, default=10_000, help="parallel calls in the step (default 10,000)"
    )
    parser.add_argument("--repeat", type=int, default=5, help="interleaved replays of each cap (default 5)")
    args = parser.parse_args()
    turns = anyio.run(_record, args.calls, 2)
    events = len(turns[0])
    caps = {"old": OLD_CAP, "now": writer._MAX_BATCH}  # pyright: ignore[reportPrivateUsage]
    figures: dict[str, list[float]] = {name: [] for name in caps}
    for _ in range(args.repeat):
        for name, cap in caps.items():
            figures[name].append(_replay(turns, cap, args.calls))
    old, now = (statistics.median(figures[name]) for name in caps)
    print(f"{args.calls} parallel calls, {events} durable events a turn; writer thread CPU per call, medians")
    print(f"  cap {OLD_CAP:>6}: {old:6.1f} us")
    print(f"  cap {caps['now']:>6}: {now:6.1f} us   ({old / now:.2f}x less)")


if __name__ == "__main__":
    main()

"""``tether._blocking.run_batched`` against one ``anyio.to_thread.run_sync`` per call, for short filesystem work.

A parallel step of 100 ``read`` calls asks for 100 short pieces of blocking work at once (resolve a path, read a
page). ``run_batched`` hands all the work waiting at that moment to one worker thread; the plain anyio way is one
hand-off per piece. Each piece here is a real ``os.stat`` plus a 4 KiB read of a file in a temp directory. Figures:
loop-thread CPU and wall time per piece for a burst of 100 concurrent pieces, medians of interleaved repeats.

Run: ``.venv/bin/python bench/blocking.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread

from tether._blocking import run_batched

BURST = 100


def _work(path: Path) -> int:
    os.stat(path)
    with open(path, "rb") as f:
        return len(f.read(4096))


async def _burst(
    hand_off: Callable[[Callable[[Path], int], Path], Awaitable[int]], paths: list[Path]
) -> None:
    async with anyio.create_task_group() as tg:
        for path in paths:
            tg.start_soon(hand_off, _work, path)


async def _batched(func: Callable[[Path], int], path: Path) -> int:
    return await run_batched(func, path)


async def _each(func: Callable[[Path], int], path: Path) -> int:
    return await anyio.to_thread.run_sync(func, path)


async def _measure(way: str, paths: list[Path]) -> tuple[float, float]:
    hand_off = _batched if way == "run_batched" else _each
    await _burst(hand_off, paths[:10])  # the worker threads exist
    cpu, start = time.thread_time(), time.perf_counter()
    await _burst(hand_off, paths)
    return time.thread_time() - cpu, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args()
    ways = ["run_batched", "to_thread each"]
    cpu: dict[str, list[float]] = {w: [] for w in ways}
    wall: dict[str, list[float]] = {w: [] for w in ways}
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(BURST):
            path = Path(tmp) / f"f{i}.txt"
            path.write_text("x" * 8192)
            paths.append(path)
        for i in range(args.repeat):
            for way in ways if i % 2 == 0 else reversed(ways):
                c, t = anyio.run(_measure, way, paths)
                cpu[way].append(c / BURST * 1e6)
                wall[way].append(t / BURST * 1e6)
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")
    print(
        f"{'way':<16}{'loop cpu µs/piece':>19}{'wall µs/piece':>15}   (a burst of {BURST} concurrent pieces)"
    )
    for way in ways:
        print(f"{way:<16}{statistics.median(cpu[way]):>19.1f}{statistics.median(wall[way]):>15.1f}")


if __name__ == "__main__":
    main()

"""Startup of the ``tether`` command: ``tether --help`` wall time against ``python -c pass``, side by side.

Usage: .venv/bin/python bench/startup.py [--runs N]

Each sample is a fresh process (the real cost a person pays). Runs alternate between the two commands so machine
noise hits both; the medians and the difference are printed. Target: ``tether --help`` under 300 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_MS = 300.0


def _time(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    script = Path(sys.executable).with_name("tether")
    tether = [str(script), "--help"] if script.exists() else [sys.executable, "-m", "tether.cli", "--help"]
    baseline = [sys.executable, "-c", "pass"]
    _time(tether), _time(baseline)  # warm the file cache
    ours: list[float] = []
    base: list[float] = []
    for _ in range(args.runs):
        ours.append(_time(tether))
        base.append(_time(baseline))
    ours_ms, base_ms = statistics.median(ours), statistics.median(base)
    print(f"runs: {args.runs} (median of fresh processes)")
    print(f"python -c pass      {base_ms:8.1f} ms")
    print(f"tether --help       {ours_ms:8.1f} ms   (min {min(ours):.1f}, max {max(ours):.1f})")
    print(
        f"tether's own cost   {ours_ms - base_ms:8.1f} ms   ratio {ours_ms / base_ms:.1f}x the bare interpreter"
    )
    verdict = "meets" if ours_ms < TARGET_MS else "MISSES"
    print(f"target < {TARGET_MS:.0f} ms: {verdict}")


if __name__ == "__main__":
    main()

"""Bounding a very large text: peak memory growth and write rate, next to copying the same bytes as a file.

Run: .venv/bin/python bench/bounding.py [MiB]
Targets (issue 2): peak memory growth under 64 MiB for 1 GiB; write rate comparable to copying the file.
Peak RSS is read from /proc/self/status (VmHWM) after resetting it through /proc/self/clear_refs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from tether.output import OutputStore
from tether.tools import Text


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(key)


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def run(mib: int, char: str) -> None:
    unit = (("x" * 79) + "\n") if char == "x" else ((char * 39) + "\n")
    text = unit * ((mib << 20) // len(unit.encode()))
    size = len(text.encode()) if mib <= 64 else None
    work = Path(tempfile.mkdtemp())
    try:
        store = OutputStore(work / "tool-output")
        _reset_peak()
        before = _status("VmRSS")
        start = time.perf_counter()
        bounded = store.bound_sync([Text(text)])
        elapsed = time.perf_counter() - start
        growth = _status("VmHWM") - before
        saved = Path(bounded.output_paths[0])
        nbytes = saved.stat().st_size
        assert size is None or nbytes == size
        copy_start = time.perf_counter()
        shutil.copyfile(saved, work / "copy")
        copy = time.perf_counter() - copy_start
        preview = bounded.content[0].text  # type: ignore[union-attr]
        print(
            f"{mib:5d} MiB {'ascii' if char == 'x' else 'utf-8'}: bound {elapsed:6.2f} s "
            f"({nbytes / elapsed / 2**20:7.0f} MiB/s), copy {copy:6.2f} s ({nbytes / copy / 2**20:7.0f} MiB/s), "
            f"ratio {elapsed / copy:5.2f}x, peak memory growth {growth / 2**20:6.1f} MiB, preview {len(preview)} chars"
        )
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    run(mib, "x")
    run(max(mib // 4, 1), "é")

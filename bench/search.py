"""grep and glob through the full settle path vs raw ripgrep with the same flags, on a generated 50,000-file tree,
and grep on one file made of a single 40 MB line (the long-line case: it must stay linear).

Run: .venv/bin/python bench/search.py [--files 50000] [--runs 7] [--long-mb 40]

Prints the median wall time of each and the ratio tool / raw rg (target <= 1.2x). Raw rg runs to completion as a
subprocess from Python (subprocess.run), so both sides pay a process start. The tools stop ripgrep once they hold
limit + 1 results, so broad searches can come out below 1.0x.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from tether.builtins import BuiltinDeps, glob, grep
from tether.builtins._rg import find_rg
from tether.location import Location
from tether.output import OutputStore
from tether.tools import Completed, ToolCall, ToolContext, ToolRegistry

CTX = ToolContext(session_id="ses_bench", agent="build", message_id="msg_bench", call_id="call_bench")


class AllowAll:
    async def assert_(self, request: Any) -> None:
        return None


def generate(root: Path, files: int) -> None:
    per_dir = 100
    (root / ".gitignore").write_text("*.log\n")
    for i in range(files):
        d = root / f"pkg{i // per_dir // 20:03}" / f"mod{i // per_dir:04}"
        if i % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        ext = ".py" if i % 3 else ".txt"
        body = f"import os\n\ndef function_{i}(x):\n    return x + {i}\n"
        if i % 5000 == 0:
            body += f"needle_{i} = True\n"
        (d / f"file{i:05}{ext}").write_text(body)


def raw_rg(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [find_rg(), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - start


async def settle(registry: ToolRegistry, name: str, input: dict[str, Any], n: int) -> float:
    step = registry.materialize(rules=[])
    start = time.perf_counter()
    outcome = await step.settle(ToolCall(call_id=f"call_{n}", name=name, input=input), CTX)
    elapsed = time.perf_counter() - start
    assert isinstance(outcome, Completed), outcome
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--long-mb", type=int, default=40, help="size of the one-line file (0: skip the case)"
    )
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as tmp:
        root = Path(tmp) / "tree"
        root.mkdir()
        print(f"generating {opts.files} files ...", flush=True)
        generate(root, opts.files)
        if opts.long_mb:
            long_dir = root / "long"
            long_dir.mkdir()
            with (long_dir / "one-line.txt").open("w") as f:
                f.write("abc " * (opts.long_mb * 250_000))
                f.write("needle_long\n")
        deps = BuiltinDeps(
            location=Location(root), permissions=AllowAll(), output=OutputStore(Path(tmp) / "out")
        )  # type: ignore[arg-type]
        registry = ToolRegistry(output=OutputStore(Path(tmp) / "out"))
        registry.register({"grep": grep.make(deps), "glob": glob.make(deps)})
        cases = [
            ("grep rare", "grep", {"pattern": r"needle_\d+"}, grep.grep_args(r"needle_\d+")),
            ("grep broad", "grep", {"pattern": "import os"}, grep.grep_args("import os")),
            ("glob rare", "glob", {"pattern": "**/file4999*.txt"}, glob.glob_args()),
            ("glob broad", "glob", {"pattern": "**/*.py"}, glob.glob_args()),
        ]
        if opts.long_mb:
            long_args = grep.grep_args("needle_long", target="long/one-line.txt")
            cases.append(
                (
                    f"grep {opts.long_mb}MB line",
                    "grep",
                    {"pattern": "needle_long", "path": "long/one-line.txt"},
                    long_args,
                )
            )
        print(f"{'case':<18} {'tool (ms)':>10} {'raw rg (ms)':>12} {'ratio':>7}")
        n = 0
        for label, name, input, args in cases:
            tool_times: list[float] = []
            rg_times: list[float] = []
            for _ in range(opts.runs):  # interleaved, so drift hits both sides alike
                n += 1
                tool_times.append(await settle(registry, name, input, n))
                rg_times.append(raw_rg(args, root))
            t, r = statistics.median(tool_times), statistics.median(rg_times)
            print(f"{label:<18} {t * 1000:>10.1f} {r * 1000:>12.1f} {t / r:>6.2f}x", flush=True)


if __name__ == "__main__":
    anyio.run(main)

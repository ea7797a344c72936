"""The bash tool's overhead against running the same command with ``subprocess`` directly.

Run: .venv/bin/python bench/bash.py [--calls N] [--mib M] [--repeat R] [--dir DIR] [--analysis-only]
Targets (issue 5): ≤ 1.3x for 1 GiB of output; peak memory growth under 64 MiB.

- ``true``: median wall time per call, the tool settled through a registry (allow-all permission fake, so the
  permission service is not measured) against ``subprocess.run([shell, "-c", "true"])``; once with the sandbox the
  machine offers (the default: bubblewrap here) and once without (``sandbox=None``), calls interleaved, and the
  difference of the medians: what the sandbox adds per call (issue 35's target: at most 10 ms). Then the same for
  ``printenv HOME``, a command not known to stay offline, which under the default network ``proxy`` also gets the
  call's proxy and the bridge (a Python start-up inside the sandbox, in front of the command).
- 1 GiB: ``yes | head -c 1073741824`` inside the sandbox; the tool spills everything to its managed file under ``--dir`` (default: the
  system temp directory) and keeps 1 MiB in memory. Baselines: ``subprocess.run`` capturing stdout in memory (what
  "running it directly" usually means), and ``subprocess.run`` with stdout redirected to a file (the same disk work
  as the tool, no capture). Ratios are against the capture baseline; the file baseline is printed for context.
- analysis: the permission analysis (tree-sitter parse, normalized forms, paths; pure, no file system) of a
  200-command script (pipelines, ``cd`` chains, redirects, wrappers, ``sh -c``, loops), median of 50 runs.
Peak memory growth is read from /proc/self/status (VmHWM) after resetting it through /proc/self/clear_refs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from tether.builtins import BuiltinDeps
from tether.builtins._shell_parse import analyze
from tether.builtins._shell_run import default_shell
from tether.builtins.bash import make
from tether.location import Location
from tether.output import OutputStore
from tether.permissions import PermissionRequest
from tether.tools import Completed, ToolCall, ToolContext, ToolRegistry

SHELL = default_shell()
NETWORKED = "printenv HOME"
"""A cheap program not known to stay offline: under the default network ``proxy`` it gets tether's proxy and the
bridge (``sandbox/_network.py``, ``may_use_network``), ``true`` does not."""
CTX = ToolContext(session_id="ses_bench", agent="build", message_id="msg_bench", call_id="call_bench")


class AllowAll:
    async def assert_(self, request: PermissionRequest) -> None:
        return None


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(key)


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


async def _atime(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def _registry(root: Path, data: Path, *, sandboxed: bool = True) -> ToolRegistry:
    store = OutputStore(data / "tool-output")
    deps = BuiltinDeps(
        location=Location(root),
        permissions=AllowAll(),  # type: ignore[arg-type]
        output=store,
        sandbox="auto" if sandboxed else None,
    )
    registry = ToolRegistry(output=store)
    registry.register({"bash": make(deps)})
    return registry


async def _settle(registry: ToolRegistry, command: str) -> Completed:
    outcome = await registry.materialize(rules=[]).settle(
        ToolCall(call_id="call_bench", name="bash", input={"command": command, "timeout": 600_000}), CTX
    )
    assert isinstance(outcome, Completed), outcome
    return outcome


async def bench_true(registry: ToolRegistry, bare: ToolRegistry, calls: int) -> None:
    from tether.sandbox import detect

    for _ in range(10):
        await _settle(registry, "true")
        await _settle(bare, "true")
        subprocess.run([SHELL, "-c", "true"], check=True)
    tool: list[float] = []
    unsandboxed: list[float] = []
    base: list[float] = []
    bridged: list[float] = []
    bridged_bare: list[float] = []
    for _ in range(calls):  # interleaved, so a machine that slows down meanwhile weighs on all of them alike
        tool.append(await _atime(lambda: _settle(registry, "true")))
        unsandboxed.append(await _atime(lambda: _settle(bare, "true")))
        base.append(_time(lambda: subprocess.run([SHELL, "-c", "true"], check=True)))
        bridged.append(await _atime(lambda: _settle(registry, NETWORKED)))
        bridged_bare.append(await _atime(lambda: _settle(bare, NETWORKED)))
    t, u, b = statistics.median(tool), statistics.median(unsandboxed), statistics.median(base)
    n, nu = statistics.median(bridged), statistics.median(bridged_bare)
    print(
        f"true ({calls} calls, median): tool {t * 1e3:.2f} ms in the sandbox ({detect().mechanism}), "
        f"{u * 1e3:.2f} ms without, subprocess.run {b * 1e3:.2f} ms; ratio {t / b:.2f}x; "
        f"the sandbox adds {(t - u) * 1e3:.2f} ms per call"
    )
    print(
        f"{NETWORKED} (a command that may use the network: the proxy and its bridge start, network proxy): "
        f"{n * 1e3:.2f} ms in the sandbox, {nu * 1e3:.2f} ms without; the sandbox adds {(n - nu) * 1e3:.2f} ms"
    )


async def bench_output(registry: ToolRegistry, data: Path, mib: int, repeat: int) -> None:
    size = mib << 20
    command = f"yes | head -c {size}"
    tools: list[float] = []
    captures: list[float] = []
    files: list[float] = []
    growth: list[int] = []
    for _ in range(repeat):
        before = _status("VmRSS")
        measurable = _reset_peak()
        start = time.perf_counter()
        outcome = await _settle(registry, command)
        tools.append(time.perf_counter() - start)
        if measurable:
            growth.append(_status("VmHWM") - before)
        assert outcome.metadata is not None and outcome.metadata["bytes"] == size
        Path(outcome.metadata["outputPath"]).unlink()
        for path in outcome.output_paths:
            Path(path).unlink(missing_ok=True)

        def capture() -> None:
            result = subprocess.run([SHELL, "-c", command], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            assert len(result.stdout) == size

        captures.append(_time(capture))
        target = data / "baseline.out"
        with open(target, "wb") as fh:
            files.append(
                _time(
                    lambda fh=fh: subprocess.run([SHELL, "-c", command], stdout=fh, stderr=subprocess.STDOUT)
                )
            )
        target.unlink()
    t, c, f = statistics.median(tools), statistics.median(captures), statistics.median(files)
    print(
        f"{mib} MiB of output (median of {repeat}): tool {t:.2f} s, subprocess.run capture {c:.2f} s, "
        f"subprocess.run to file {f:.2f} s"
    )
    print(f"  ratio vs capture: {t / c:.2f}x (target <= 1.3x); vs file: {t / f:.2f}x")
    if growth:
        print(f"  tool peak memory growth: {max(growth) / (1 << 20):.1f} MiB (target < 64 MiB)")


SCRIPT_LINES = (
    "git status --short && git diff --stat HEAD~1 | tail -n 5",
    "cd src && rm -rf build/*.o && make -j4 > ../build.log 2>&1",
    "sudo -u www nice -n 5 timeout 30 python3 -m http.server 8000 &",
    'for f in *.py; do black "$f" || echo "failed $f" >> errors.txt; done',
    "find . -name '*.pyc' -exec rm {} + ; ls -la ~/projects/{a,b,c}",
    "bash -c 'cd /tmp && tar -czf backup.tgz -C /srv data' && cp -t /mnt/backup backup.tgz",
    "echo \"$(date +%s)\" | tee -a stamps.txt | sed -i.bak 's/a/b/' notes.md",
    "env A=1 B=2 command grep -rn 'TODO' src/ tests/ 2>/dev/null | sort | uniq -c | head -20",
)
"""Eight lines of 2-5 simple commands each; repeated to reach 200 simple commands."""


def bench_analysis(commands: int, runs: int = 50) -> None:
    lines: list[str] = []
    counted = 0
    while counted < commands:
        # Each line distinct (as in a real script), so no work is shared between repeated lines.
        line = SCRIPT_LINES[len(lines) % len(SCRIPT_LINES)].replace("src", f"src{len(lines)}")
        lines.append(line)
        counted += len(analyze(line, cwd="/p", home="/h").commands)
    script = "\n".join(lines)
    analyze(script, cwd="/p/w", home="/h")  # warm the parser and caches
    times = [_time(lambda: analyze(script, cwd="/p/w", home="/h")) for _ in range(runs)]
    t = statistics.median(times)
    print(
        f"analysis of a {len(lines)}-line script ({counted} simple commands, {len(script)} bytes, "
        f"median of {runs}): {t * 1e3:.2f} ms ({t / max(counted, 1) * 1e6:.0f} µs per command)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where the managed output files go")
    parser.add_argument("--analysis-only", action="store_true", help="only the 200-command analysis line")
    args = parser.parse_args()
    bench_analysis(200)
    if args.analysis_only:
        return
    data = Path(tempfile.mkdtemp(prefix="tether-bench-bash-", dir=args.dir))
    root = data / "project"
    root.mkdir()
    print(f"shell {SHELL}, output files under {data} ({os.cpu_count()} CPUs)")
    registry = _registry(root, data)
    bare = _registry(root, data, sandboxed=False)
    try:
        await bench_true(registry, bare, args.calls)
        await bench_output(registry, data, args.mib, args.repeat)
    finally:
        for path in sorted(data.rglob("*"), reverse=True):
            path.unlink() if not path.is_dir() else path.rmdir()
        data.rmdir()


if __name__ == "__main__":
    anyio.run(main)

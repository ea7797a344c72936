"""Start-up of the ``tether`` command: what a script or CI job pays per call, against baselines in the same run.

Usage: .venv/bin/python bench/startup.py [--runs N] [--against DIR]

Each sample is a fresh process (the real cost a person pays). Four commands run interleaved, round after round, so a
burst of load from elsewhere hits them all:

* ``python -c pass``: the bare interpreter;
* ``tether --version``: the interpreter, ``tether`` and the command line's parser (the baseline of issue 38);
* ``tether --help``: the whole command tree;
* ``tether run`` with a scripted model (``--model scripted:FILE``, one text answer, no tool call) in a project with no
  config file, its data directory made by the warm-up run: config, store, Location, one step, its durable record,
  shutdown (what a script or CI job calling tether per task pays);
* the same run with a new data directory each time (a first run on a machine: the store's tables are created).

``--against DIR`` measures a change A/B in the same run: ``tether --version`` and the scripted run are also timed
with ``DIR/src`` first on ``$PYTHONPATH`` (a copy of the code before the change: ``git archive BASE src | tar -x -C
DIR``), interleaved with the rest, and the ratios of the two are printed.

Byte code is cached as an installed package has it: when ``$PYTHONDONTWRITEBYTECODE`` is set (the test machines set
it), the children get a private ``$PYTHONPYCACHEPREFIX`` instead, warmed by a first round that is not counted.
Medians, minima and CPU time (user + system of the child, ``RUSAGE_CHILDREN``; steadier than wall time on a shared
machine) are printed with the load average before and after.

Targets (issue 38): ``tether run`` with a scripted model and no tool call at most 0.25 s wall and at most 2.5x
``tether --version`` in the same run; ``tether --help`` under 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUN_TARGET_S = 0.25
RUN_RATIO = 2.5
HELP_TARGET_S = 0.3


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], env: dict[str, str], pythonpath: str | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process running ``argv`` to its end (exit 0 required)."""
    if pythonpath is not None:
        env = {**env, "PYTHONPATH": pythonpath}
    cpu = _cpu()
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start, _cpu() - cpu


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", type=Path, help="a source tree (DIR/src/tether) to time A/B against")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tether-startup-"))
    env = dict(os.environ)
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    env["TETHER_CONFIG_DIR"] = str(work / "config")  # no user config or trusted projects from this machine
    script = Path(sys.executable).with_name("tether")
    tether = [str(script)] if script.exists() else [sys.executable, "-m", "tether.cli"]
    answer = work / "script.json"
    answer.write_text(json.dumps([{"text": "done"}]))
    project = work / "project"
    project.mkdir()

    def run_argv(data: Path) -> list[str]:
        model = f"scripted:{answer}"
        return [*tether, "--data-dir", str(data), "run", "go", "--dir", str(project), "--model", model]

    commands = {
        "python -c pass": lambda i: [sys.executable, "-c", "pass"],
        "tether --version": lambda i: [*tether, "--version"],
        "tether --help": lambda i: [*tether, "--help"],
        "tether run (scripted)": lambda i: run_argv(work / "data"),
        "  new data directory": lambda i: run_argv(work / f"data-{i}"),
    }
    against: dict[str, str] = {}
    if args.against is not None:
        base = str((args.against / "src").resolve())
        commands["A: tether --version"] = commands["tether --version"]
        commands["A: tether run (scripted)"] = lambda i: run_argv(work / "data-against")
        against = {"A: tether --version": base, "A: tether run (scripted)": base}
    load_before = _load()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    try:
        for name, argv in commands.items():  # warm the file cache and the byte code
            _time(argv(-1), env, against.get(name))
        for i in range(args.runs):
            names = list(commands) if i % 2 == 0 else list(reversed(commands))
            for name in names:
                samples[name].append(_time(commands[name](i), env, against.get(name)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"runs: {args.runs} fresh processes each, interleaved; load average {load_before} before, {_load()} after"
    )
    print(f"{'':24}{'median':>10}{'min':>10}{'max':>10}{'cpu median':>12}")
    wall: dict[str, float] = {}
    for name, values in samples.items():
        walls = [w for w, _ in values]
        wall[name] = statistics.median(walls)
        cpu = statistics.median(c for _, c in values)
        print(
            f"{name:24}{wall[name] * 1e3:8.1f}ms{min(walls) * 1e3:8.1f}ms{max(walls) * 1e3:8.1f}ms{cpu * 1e3:10.1f}ms"
        )
    run, version = wall["tether run (scripted)"], wall["tether --version"]
    ratio = run / version
    print(f"tether run / tether --version: {ratio:.2f}x (median over median)")
    verdicts = [
        f"run <= {RUN_TARGET_S:g} s: {'met' if run <= RUN_TARGET_S else 'MISSED'}",
        f"run <= {RUN_RATIO:g}x --version: {'met' if ratio <= RUN_RATIO else 'MISSED'}",
        f"--help < {HELP_TARGET_S:g} s: {'met' if wall['tether --help'] < HELP_TARGET_S else 'MISSED'}",
    ]
    print("targets: " + "; ".join(verdicts))
    if against:
        before, before_version = wall["A: tether run (scripted)"], wall["A: tether --version"]
        cpus = {name: statistics.median(c for _, c in values) for name, values in samples.items()}
        print(
            f"A/B (A: {args.against}): run {before * 1e3:.1f} -> {run * 1e3:.1f} ms wall, "
            f"{cpus['A: tether run (scripted)'] * 1e3:.1f} -> {cpus['tether run (scripted)'] * 1e3:.1f} ms CPU; "
            f"run / --version {before / before_version:.2f}x -> {ratio:.2f}x"
        )


if __name__ == "__main__":
    main()

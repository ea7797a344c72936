"""Code Mode vs direct tool calls: a 50-call data-gathering task (read 50 files, sum their line counts).

Three runs of the same task, each a real tether turn (Runtime, SQLite store, real files) against the scripted
OpenAI-compatible server on 127.0.0.1 (``bench/opencode_peer/scripted_openai_server.py``, which logs every request
body):

- ``sequential``: 50 steps of one ``read`` call each, then the answer (a model that reads one file per step);
- ``parallel``: one step of 50 ``read`` calls, then the answer;
- ``codemode``: one step of one ``execute`` call whose code reads the 50 files in parallel and sums the lines, then
  the answer (agent ``build`` with ``"codemode": true``).

For each: model requests (steps), the bytes of all request bodies (re-serialized JSON as the server logged them,
about 4 bytes a token), and wall time (median of ``--runs``). Ratios are printed against ``codemode``.

Usage: .venv/bin/python bench/codemode.py [--runs 3] [--files 50]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from peer import SERVER, _free_port, _wait_port  # pyright: ignore[reportPrivateUsage]
from tether import Runtime
from tether.config import parse_config
from tether.llm.providers import resolve_model

CODE = """import asyncio
paths = [f"{root}/f{{i:02d}}.txt" for i in range({n})]
outs = await asyncio.gather(*[tools.read(path=p) for p in paths])
total = 0
for out in outs:
    total += sum(1 for line in out.splitlines() if line.split(":", 1)[0].isdigit())
print("files:", len(outs))
total
"""


def _project(root: Path, n: int) -> int:
    root.mkdir(parents=True)
    for i in range(n):
        (root / f"f{i:02d}.txt").write_text("".join(f"line {j}\n" for j in range(i + 1)))
    return n * (n + 1) // 2


def _script(kind: str, root: Path, n: int) -> list[dict[str, Any]]:
    reads = [{"name": "read", "arguments": {"path": str(root / f"f{i:02d}.txt")}} for i in range(n)]
    if kind == "sequential":
        return [*({"tool_calls": [call]} for call in reads), {"text": "summed"}]
    if kind == "parallel":
        return [{"tool_calls": reads}, {"text": "summed"}]
    code = CODE.format(root=root, n=n)
    return [{"tool_calls": [{"name": "execute", "arguments": {"code": code}}]}, {"text": "summed"}]


async def _turn(kind: str, workdir: Path, n: int) -> tuple[int, int, float, str]:
    root = workdir / f"project-{kind}-{time.monotonic_ns()}"
    expected = _project(root, n)
    port = _free_port()
    script = workdir / f"script-{port}.json"
    script.write_text(json.dumps(_script(kind, root, n)))
    log = workdir / f"log-{port}.jsonl"
    server = subprocess.Popen(
        [sys.executable, str(SERVER), str(port), str(script), str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, server)
        data: dict[str, Any] = {
            "provider": {"peer": {"base_url": f"http://127.0.0.1:{port}/v1", "api_key": "x"}},
            "permission": {"*": "allow"},
            "agent": {"build": {"steps": 1_000, "codemode": kind == "codemode"}},
        }
        config = parse_config(data, file=str(root / "tether.json"))
        async with Runtime(data_dir=workdir / f"data-{port}", config=config, plugins=False) as rt:
            session = await rt.sessions.create(root)
            model = resolve_model("peer/scripted", config.data)
            start = time.perf_counter()
            result = await session.prompt("Sum the line counts of the 50 files", model=model)
            wall = time.perf_counter() - start
            aclose = getattr(model, "aclose", None)  # the provider SDK's connections, before the loop ends
            if aclose is not None:
                await aclose()
        bodies = [json.loads(line)["body"] for line in log.read_text().splitlines()]
        steps = sum(1 for body in bodies if body.get("tools"))
        size = sum(len(json.dumps(body)) for body in bodies)
        calls = [c for c in result.calls if c.name in ("read", "execute")]
        if kind == "codemode":
            (call,) = calls
            assert call.ok and f"Result: {expected}" in call.content, call.content or call.error
        else:
            assert len(calls) == n and all(c.ok for c in calls), [c.error for c in calls if not c.ok]
        return steps, size, wall, result.text
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=50)
    args = parser.parse_args()
    kinds = ("sequential", "parallel", "codemode")
    figures: dict[str, tuple[int, int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="tether-bench-codemode-") as tmp:
        workdir = Path(tmp)
        anyio.run(_turn, "codemode", workdir, args.files)  # warm-up: imports, the first monty worker
        for kind in kinds:
            walls: list[float] = []
            steps = size = 0
            for _ in range(args.runs):
                steps, size, wall, _ = anyio.run(_turn, kind, workdir, args.files)
                walls.append(wall)
            figures[kind] = (steps, size, statistics.median(walls))
    base = figures["codemode"]
    print(f"{args.files}-file line count, median of {args.runs} runs")
    print(f"{'run':<11} {'steps':>6} {'request bytes':>14} {'~tokens':>8} {'wall s':>8}   vs codemode")
    for kind in kinds:
        steps, size, wall = figures[kind]
        ratio = f"steps x{steps / base[0]:.1f}, bytes x{size / base[1]:.1f}, wall x{wall / base[2]:.2f}"
        print(f"{kind:<11} {steps:>6} {size:>14,} {size // 4:>8,} {wall:>8.3f}   {ratio}")


if __name__ == "__main__":
    main()

"""``tether serve`` under load: 1,000 concurrent sessions with scripted models against one server process.

The server runs in its own process (``python bench/server.py --serve``: the real app, guard and event hub, on a
Runtime with the SQLite store and an application ``noop`` tool), the load from this one (async httpx2 clients). Each
turn is 3 steps: two steps that call ``noop`` (a distinct input each) and a final text step.

What is reported:

* **errors**: refused requests, ``error`` events, turns whose calls did not all complete; the target is 0;
* **framework overhead per step**: inside the server, the model records the time of each of its calls; the gap
  between consecutive calls of one turn is everything tether does between two steps (read the stream, record the
  parts, settle the call through the full path, bound, persist, publish to the bus and the SSE hub, build the next
  request). p50/p99 are reported (a) at rest: turns one after another while the 1,000 sessions and an SSE client
  are open, the target being p99 <= 5 ms, and (b) under the load of 1,000 concurrent turns, where on 2 cores the
  gap also holds the time the step waits for the other 999 turns (queueing, not work);
* **server CPU per step** under load (the server process's user+system time / steps);
* **memory per idle session**: the server's RSS growth over 1,000 sessions that each ran one turn, divided by 1,000.

Run: ``.venv/bin/python bench/server.py [--sessions 1000] [--rest 300]``. Nothing here is a test assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

TOKEN = "bench-token-" + "b" * 32


# -- the server process -------------------------------------------------------------------------------------------------


def serve_main(port_file: Path, out: Path) -> None:
    from pydantic import BaseModel

    from tether import Runtime
    from tether.server import bind, serve
    from tether.testing import FunctionModel, Step, tool_call
    from tether.tools import Tool, ToolResponse

    class NoopInput(BaseModel):
        text: str

    async def noop(value: NoopInput, ctx: Any) -> ToolResponse[Any]:
        return ToolResponse(content="ok")

    gaps: list[float] = []
    steps = 0

    def model(name: str | None) -> Any:
        last: list[float] = []  # the time of this turn's previous model call (one model per prompt)

        def step(request: Any) -> Any:
            nonlocal steps
            now = time.perf_counter()
            n = len(last)
            if last:
                gaps.append(now - last[-1])
            last.append(now)
            steps += 1
            if n < 2:
                return Step(tool_call("noop", {"text": f"x{n}"}))
            return Step("done")

        return FunctionModel(step)

    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            project = Path(tmp) / "project"
            project.mkdir()
            async with Runtime(data_dir=Path(tmp) / "data", plugins=False) as rt:
                rt.tools.register({"noop": Tool(description="Do nothing", input=NoopInput, execute=noop)})
                location = await rt.location(project)
                sock = bind("127.0.0.1", 0)
                server: list[Any] = []

                def started(s: Any) -> None:
                    server.append(s)
                    port_file.write_text(str(sock.getsockname()[1]))

                def stop(*_: Any) -> None:
                    server[0].should_exit = True

                signal.signal(signal.SIGTERM, stop)
                # one event-stream client watches all 1,000 sessions here: its queue is sized for that burst (a real
                # client per session would have the default 1,024)
                await serve(
                    rt,
                    location,
                    sock=sock,
                    host="127.0.0.1",
                    token=TOKEN,
                    choose_model=model,
                    started=started,
                    queue_size=1 << 17,
                )
        out.write_text(json.dumps({"gaps": gaps, "steps": steps}))

    anyio.run(main)


# -- the load -----------------------------------------------------------------------------------------------------------


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def load(url: str, pid: int, sessions: int, rest: int) -> dict[str, Any]:
    import httpx2

    headers = {"authorization": f"Bearer {TOKEN}"}
    errors: list[str] = []
    idle: dict[str, anyio.Event] = {}
    limits = httpx2.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=120, limits=limits) as http:
        rss_start = _rss_kib(pid)
        ids: list[str] = []

        async def create() -> None:
            response = await http.post("/api/sessions", json={})
            if response.status_code != 201:
                errors.append(f"create {response.status_code}")
            else:
                ids.append(response.json()["id"])

        async with anyio.create_task_group() as group:
            for _ in range(sessions):
                group.start_soon(create)
        for sid in ids:
            idle[sid] = anyio.Event()

        async def watch(ready: anyio.Event) -> None:
            async with anyio.create_task_group():
                async with http.stream("GET", "/api/events", timeout=None) as response:
                    ready.set()
                    kind = ""
                    async for line in response.aiter_lines():
                        if line.startswith("event: "):
                            kind = line[7:]
                        elif line.startswith("data: ") and kind == "dropped":
                            errors.append("the event stream was dropped (slow client)")
                            for event in idle.values():
                                event.set()
                        elif line.startswith("data: ") and kind in ("status", "error"):
                            data = json.loads(line[6:])
                            if kind == "error":
                                errors.append(f"error event {data['message']}")
                            if data.get("status") == "idle" and data["session"] in idle:
                                idle[data["session"]].set()

        async def turn(sid: str) -> None:
            response = await http.post(f"/api/sessions/{sid}/prompt", json={"text": "go"})
            if response.status_code != 202:
                errors.append(f"prompt {response.status_code} {response.text[:100]}")
                idle[sid].set()
                return
            await idle[sid].wait()
            idle[sid] = anyio.Event()

        async with anyio.create_task_group() as outer:
            ready = anyio.Event()
            outer.start_soon(watch, ready)
            await ready.wait()
            cpu0, t0 = _cpu_seconds(pid), time.perf_counter()
            with anyio.fail_after(600):
                async with anyio.create_task_group() as group:
                    for sid in ids:
                        group.start_soon(turn, sid)
            wall, cpu = time.perf_counter() - t0, _cpu_seconds(pid) - cpu0
            loaded_steps = len(ids) * 3
            health = (await http.get("/api/health")).json()
            rss_idle = _rss_kib(pid)
            # every call of every turn completed (read from the store through the API, a sample of 50 sessions)
            for sid in ids[:50]:
                messages = (await http.get(f"/api/sessions/{sid}/messages")).json()["messages"]
                states = [p["state"] for m in messages for p in m["parts"] if p["type"] == "tool"]
                if states != ["completed", "completed"]:
                    errors.append(f"{sid} calls {states}")
            # at rest: one turn at a time, the 1,000 sessions and the event stream still open
            with anyio.fail_after(600):
                for sid in ids[:rest]:
                    await turn(sid)
            outer.cancel_scope.cancel()
    return {
        "sessions": len(ids),
        "errors": errors,
        "wall_s": wall,
        "steps_per_s": loaded_steps / wall,
        "cpu_ms_per_step": cpu / loaded_steps * 1000,
        "rss_start_kib": rss_start,
        "rss_idle_kib": rss_idle,
        "kib_per_idle_session": (rss_idle - rss_start) / max(1, len(ids)),
        "running_after": health["running"],
        "loaded_turns": len(ids),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--rest", type=int, default=300, help="turns run one at a time for the at-rest figures"
    )
    parser.add_argument("--serve", nargs=2, metavar=("PORT_FILE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_main(Path(args.serve[0]), Path(args.serve[1]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        port_file, out = Path(tmp) / "port", Path(tmp) / "out.json"
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file), str(out)])
        try:
            deadline = time.monotonic() + 60
            while not port_file.exists() or not port_file.read_text():
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.05)  # a benchmark's start-up poll, not a test
            url = f"http://127.0.0.1:{port_file.read_text()}"
            with socket.create_connection(("127.0.0.1", int(port_file.read_text())), timeout=10):
                pass
            result = anyio.run(load, url, server.pid, args.sessions, args.rest)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
        gaps: list[float] = json.loads(out.read_text())["gaps"]
    loaded_gaps = gaps[: result["loaded_turns"] * 2]
    rest_gaps = gaps[result["loaded_turns"] * 2 :]
    print(f"sessions: {result['sessions']}, concurrent turns: {result['loaded_turns']} x 3 steps, errors: "
          f"{len(result['errors'])}")  # fmt: skip
    for error in result["errors"][:10]:
        print(f"  error: {error}")
    print(f"under load: {result['wall_s']:.2f} s, {result['steps_per_s']:.0f} steps/s, server CPU "
          f"{result['cpu_ms_per_step']:.2f} ms/step; step gap p50 {_pct(loaded_gaps, 0.5):.2f} ms, "
          f"p99 {_pct(loaded_gaps, 0.99):.2f} ms (includes waiting for the other turns)")  # fmt: skip
    if rest_gaps:
        print(f"at rest ({len(rest_gaps)} gaps, 1,000 sessions open): framework overhead per step p50 "
              f"{_pct(rest_gaps, 0.5):.2f} ms, p99 {_pct(rest_gaps, 0.99):.2f} ms (target p99 <= 5 ms), mean "
              f"{statistics.fmean(rest_gaps) * 1000:.2f} ms")  # fmt: skip
    print(f"memory: {result['rss_start_kib'] / 1024:.1f} MiB at start, {result['rss_idle_kib'] / 1024:.1f} MiB with "
          f"{result['sessions']} idle sessions: {result['kib_per_idle_session']:.1f} KiB per idle session")  # fmt: skip


if __name__ == "__main__":
    main()

"""Per-call overhead of settle for a no-op typed tool, next to calling the function directly.

Run: .venv/bin/python bench/settle.py [calls]

Three ways of settling the same no-op tool (a ``text: str`` input, content-only response), medians of interleaved
rounds of 100 calls (the event loop turns between rounds, as between a session's steps). Times are the loop thread's
CPU time (``time.thread_time``): on a loaded machine wall time mostly measures waiting for a CPU.

- ``lane``: the default 300 s deadline on a ``Deadlines`` timer, settled on a ``Lane`` (one cancel scope across the
  calls of one task, which a deadline cancels), as a session's call tasks settle their calls: the session's path;
- ``shared timer``: the same deadline on the same timer, each call in a cancel scope of its own;
- ``own timer``: the same deadline on a timer of the call's own (a call settled outside a session);
- ``no deadline``: ``Tool(timeout=None)``, the pipeline alone.

Targets: issue 2, under 30 µs per settle; issue 14, 10 µs for a no-op typed tool (the session's path: ``lane``).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

import anyio
from pydantic import BaseModel

from tether.output import OutputStore
from tether.tools import Tool, ToolCall, ToolContext, ToolRegistry, ToolResponse
from tether.tools.internal import Deadlines, Lane


class Input(BaseModel):
    text: str


RESPONSE: ToolResponse[None] = ToolResponse(content="ok")
ROUND = 100


async def noop(inp: Input, ctx: ToolContext) -> ToolResponse[None]:
    return RESPONSE


async def main(n: int) -> None:
    registry = ToolRegistry(output=OutputStore(tempfile.mkdtemp()))
    registry.register(
        {
            "noop": Tool(description="no-op", input=Input, execute=noop),
            "free": Tool(description="no-op", input=Input, execute=noop, timeout=None),
        }
    )
    step = registry.materialize()
    ctx = ToolContext(session_id="ses", agent="build", message_id="msg", call_id="call")
    timer = Deadlines()
    ways = {"shared timer": ("noop", timer), "own timer": ("noop", None), "no deadline": ("free", None)}
    rounds: dict[str, list[float]] = {way: [] for way in ["lane", *ways, "direct call"]}
    lane = Lane(timer)
    async with anyio.create_task_group() as tg:
        tg.start_soon(timer.run)
        for r in range(max(1, n // ROUND)):
            calls = [ToolCall(call_id=f"c{i}", name="noop", input={"text": "x"}) for i in range(ROUND)]
            with lane.scope:  # one scope across the round's calls, as a call task keeps across its calls
                start = time.thread_time()
                for c in calls:
                    await step.settle(c, ctx, lane=lane)
                if r:
                    rounds["lane"].append((time.thread_time() - start) / ROUND)
            lane.scope = anyio.CancelScope()
            for way, (name, deadlines) in ways.items():
                calls = [ToolCall(call_id=f"c{i}", name=name, input={"text": "x"}) for i in range(ROUND)]
                start = time.thread_time()
                for c in calls:
                    await step.settle(c, ctx, deadlines=deadlines)
                if r:  # the first round warms up
                    rounds[way].append((time.thread_time() - start) / ROUND)
                await anyio.sleep(0)
            start = time.thread_time()
            for c in calls:
                await noop(Input(text=c.input["text"]), ctx)
            if r:
                rounds["direct call"].append((time.thread_time() - start) / ROUND)
        timer.close()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    direct = statistics.median(rounds["direct call"])
    print(f"calls per way          {n}   (load average {load})")
    for way, values in rounds.items():
        median = statistics.median(values)
        print(f"{way:<22} {median * 1e6:8.2f} µs/call   overhead {(median - direct) * 1e6:8.2f} µs")
    print("target: settle < 30 µs (issue 2); ≤ 10 µs on the session's path, the lane (issue 14)")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)

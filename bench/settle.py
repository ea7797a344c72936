"""Per-call overhead of settle for a no-op typed tool, next to calling the function directly.

Run: .venv/bin/python bench/settle.py [calls]
Target (issue 2): under 30 µs per settle on the reference machine; issue 14 asks for 10 µs. About half of a
no-op settle is the per-call deadline (the cancel scope of ``Tool(timeout=...)``, default 300 s): in one run
14.8 µs with it, 8.2 µs for the same tool with ``timeout=None`` (a loaded machine; ~13 µs on a quiet one).
"""

from __future__ import annotations

import sys
import tempfile
import time

import anyio
from pydantic import BaseModel

from tether.output import OutputStore
from tether.tools import Tool, ToolCall, ToolContext, ToolRegistry, ToolResponse


class Input(BaseModel):
    text: str


RESPONSE: ToolResponse[None] = ToolResponse(content="ok")


async def noop(inp: Input, ctx: ToolContext) -> ToolResponse[None]:
    return RESPONSE


async def main(n: int) -> None:
    registry = ToolRegistry(output=OutputStore(tempfile.mkdtemp()))
    registry.register({"noop": Tool(description="no-op", input=Input, execute=noop)})
    step = registry.materialize()
    ctx = ToolContext(session_id="ses", agent="build", message_id="msg", call_id="call")
    calls = [ToolCall(call_id=f"c{i}", name="noop", input={"text": "x"}) for i in range(n)]

    for c in calls[:1000]:  # warm up
        await step.settle(c, ctx)

    best_settle = best_direct = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for c in calls:
            await step.settle(c, ctx)
        best_settle = min(best_settle, (time.perf_counter() - start) / n)

        start = time.perf_counter()
        for c in calls:
            await noop(Input(text=c.input["text"]), ctx)
        best_direct = min(best_direct, (time.perf_counter() - start) / n)

    print(f"calls per run          {n}")
    print(f"direct call (baseline) {best_direct * 1e6:8.2f} µs/call")
    print(f"settle                 {best_settle * 1e6:8.2f} µs/call")
    print(f"settle overhead        {(best_settle - best_direct) * 1e6:8.2f} µs/call")
    print(f"ratio settle/direct    {best_settle / best_direct:8.2f}x   (target: settle < 30 µs)")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)

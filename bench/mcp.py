"""Per-call overhead of an MCP tool call over stdio through tether, next to the bare ``mcp`` client.

Run: .venv/bin/python bench/mcp.py [calls per round] [rounds]

The server is the same process for both sides: ``tests/mcp/broken_server.py`` in its serving mode (raw JSON-RPC
over stdio, its ``echo`` tool answers at once), so what differs is only the client path:

- ``bare mcp``: ``mcp.ClientSession`` over ``stdio_client``, ``call_tool("echo", ...)`` one after another;
- ``tether``: a session turn whose one step makes the same calls (``Runtime(concurrency=1)``: one after another, as
  the bare client makes them), so each call goes the whole way: the step's catalog, settle (decode, the permission
  ask, ``tools/call`` with its idle deadline, the result as content, bounding) and the store recording the call's
  tool part (pending, running, completed). The turn's own cost (one model request, the user and assistant
  messages) is spread over the calls of the step;
- ``tether settle alone``: the same calls settled on the Location's materialization without a session (a stub
  permission asker that allows), to split the client's own cost from the session's recording.

Both sides run in one process, one round of each after the other (interleaved), and the medians of the per-call
wall times are compared (wall time: the server is another process, so CPU time of this one would miss the round
trip). Target (issue 16): tether at most 1.2 times the bare client.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's directory is sys.path[0], where this file would shadow the ``mcp`` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import anyio  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from mcp import ClientSession  # noqa: E402
from tether import Runtime  # noqa: E402
from tether._runtime import RuntimeLocation  # noqa: E402
from tether.config import Config  # noqa: E402
from tether.testing import ScriptedModel, tool_call  # noqa: E402
from tether.tools import Completed, ToolCall, ToolContext  # noqa: E402

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "broken_server.py"


async def bare_round(session: ClientSession, calls: int) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    for n in range(calls):
        result = await session.call_tool("echo", {"text": f"call {n}"})
        assert not result.is_error
    return (time.perf_counter() - start) / calls, (time.process_time() - cpu) / calls


async def tether_round(rt: Runtime, location: object, calls: int) -> tuple[float, float]:
    session = await rt.sessions.create(location, rules=[("broken_*", "*", "allow")])  # type: ignore[arg-type]
    model = ScriptedModel([[tool_call("broken_echo", {"text": f"call {n}"}) for n in range(calls)], "done"])
    start, cpu = time.perf_counter(), time.process_time()
    result = await session.prompt("echo", model=model)
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    assert len(result.calls) == calls and all(c.ok for c in result.calls), result.calls
    return elapsed / calls, used / calls


async def _allow(ctx: ToolContext, action: str, resources: object, save: object, metadata: object) -> None:
    return None


async def settle_round(location: RuntimeLocation, calls: int) -> tuple[float, float]:
    step = location.tools.materialize()
    ctx = ToolContext(
        session_id="ses_bench", agent="build", message_id="msg_bench", call_id="c", asker=_allow
    )
    start, cpu = time.perf_counter(), time.process_time()
    for n in range(calls):
        outcome = await step.settle(
            ToolCall(call_id=f"c{n}", name="broken_echo", input={"text": f"call {n}"}), ctx
        )
        assert isinstance(outcome, Completed), outcome
    return (time.perf_counter() - start) / calls, (time.process_time() - cpu) / calls


async def main(calls: int, rounds: int) -> None:
    state = Path(tempfile.mkdtemp())
    command = [sys.executable, str(SERVER), "ok", str(state / "bare")]
    params = StdioServerParameters(command=command[0], args=command[1:])
    config = Config(
        data={
            "mcp": {
                "broken": {"type": "local", "command": [sys.executable, str(SERVER), "ok", str(state / "t")]}
            }
        }
    )
    bare: list[tuple[float, float]] = []
    ours: list[tuple[float, float]] = []
    settled: list[tuple[float, float]] = []
    project = state / "project"
    project.mkdir()
    with open(state / "stderr", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
            Runtime(data_dir=state / "data", config=config, concurrency=1) as rt,
        ):
            await session.initialize()
            await session.list_tools()
            location = await rt.location(project)
            await bare_round(session, 10)  # warm both paths up
            await tether_round(rt, location, 10)
            for _ in range(rounds):
                bare.append(await bare_round(session, calls))
                ours.append(await tether_round(rt, location, calls))
                settled.append(await settle_round(location, calls))
    b, t = statistics.median(w for w, _ in bare), statistics.median(w for w, _ in ours)
    bc, tc = statistics.median(c for _, c in bare), statistics.median(c for _, c in ours)
    s, sc = statistics.median(w for w, _ in settled), statistics.median(c for _, c in settled)
    print(
        f"{calls} calls per round, {rounds} rounds (medians per call; cpu: this process, its threads included)"
    )
    print(f"  bare mcp ClientSession:  {b * 1e6:7.0f} µs wall {bc * 1e6:7.0f} µs cpu")
    print(f"  tether (settle + store): {t * 1e6:7.0f} µs wall {tc * 1e6:7.0f} µs cpu")
    print(f"  tether settle alone:     {s * 1e6:7.0f} µs wall {sc * 1e6:7.0f} µs cpu (no session, no store)")
    print(f"  ratio: {t / b:.2f}x wall (target <= 1.2x), {tc / bc:.2f}x cpu")


if __name__ == "__main__":
    anyio.run(
        main, int(sys.argv[1]) if len(sys.argv) > 1 else 50, int(sys.argv[2]) if len(sys.argv) > 2 else 7
    )

"""Per-call overhead of an MCP tool call over stdio through tether, next to the bare ``mcp`` client.

Run: .venv/bin/python bench/mcp.py [calls per round] [rounds]

The server program is the same for every line: ``tests/mcp/broken_server.py`` in its serving mode (raw JSON-RPC over
stdio; its ``echo`` tool answers at once), one process for the bare client and one that tether started (under its
stdio guard), and every line makes the same calls, ``echo`` with ``{"text": "call N"}``, one after another:

- ``bare mcp``: ``mcp.ClientSession`` over ``stdio_client``, ``call_tool("echo", ...)``;
- ``tether settle alone``: the same calls settled on the Location's materialization without a session (a stub
  permission asker that allows): tether's MCP client path (decode, the permission ask, ``tools/call`` with its idle
  deadline and progress token, the result as content, the bounding check). Issue 16's target (at most 1.2 times
  the bare client) is about this line;
- ``tether session turn``: a session turn whose one step makes the same calls (``Runtime(concurrency=1)``: one after
  another, as the bare client makes them), each recorded in the store (the tool part pending, running, completed),
  timed until the store has committed them (``store.flush()``). The turn's own cost (two model steps, the user and
  assistant messages) is spread over the calls of the step. What this line adds to the settle line is the session's
  per-call cost, the same for every tool (``bench/runner.py`` measures it without a server).

A fourth figure, **tether's own work**, settles the same calls on a connection whose ``mcp`` session is swapped for
an in-process stand-in that answers at once (no pipe, no server process, no SDK): the CPU tether itself spends per
call, 25–35 µs (the least of its rounds), which the three lines above cannot resolve (two runs of the same path
differ by more).

Every call's result is checked (the text ``echo: call N``; for the turn, also the tool parts read back from the
store): a wrong or missing result stops the bench with an error, never a figure. All lines run in one process, in
rounds whose order rotates (no line always follows the turn's store writes), and the medians of the rounds' per-call
wall times are compared (wall time: the server is another process, so CPU time of this one would miss the round
trip; the CPU of this process, its threads included, is printed beside it). The load average is printed before and
after: on a busy machine the wall times mean little.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# Run as a script, this file's directory is sys.path[0], where this file would shadow the ``mcp`` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import anyio  # noqa: E402
import anyio.lowlevel  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from mcp import ClientSession, types  # noqa: E402
from tether import Runtime  # noqa: E402
from tether._runtime import RuntimeLocation  # noqa: E402
from tether.config import Config  # noqa: E402
from tether.content import Text  # noqa: E402
from tether.session import ToolPart  # noqa: E402
from tether.testing import ScriptedModel, tool_call  # noqa: E402
from tether.tools import Completed, ToolCall, ToolContext  # noqa: E402

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "broken_server.py"

Round = Callable[[int], Awaitable[tuple[float, float]]]


class WrongResult(Exception):
    """A call returned something else than the server's echo: the figures would be of something else."""


def _expect(line: str, n: int, got: object) -> None:
    if got != f"echo: call {n}":
        raise WrongResult(f"{line}: call {n} returned {got!r}, not 'echo: call {n}'")


async def bare_round(session: ClientSession, calls: int) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    for n in range(calls):
        result = await session.call_tool("echo", {"text": f"call {n}"})
        if (
            result.is_error
            or len(result.content) != 1
            or not isinstance(result.content[0], types.TextContent)
        ):
            raise WrongResult(f"bare mcp: call {n} returned {result!r}")
        _expect("bare mcp", n, result.content[0].text)
    return (time.perf_counter() - start) / calls, (time.process_time() - cpu) / calls


async def turn_round(rt: Runtime, location: RuntimeLocation, calls: int) -> tuple[float, float]:
    session = await rt.sessions.create(location, rules=[("broken_*", "*", "allow")])
    model = ScriptedModel([[tool_call("broken_echo", {"text": f"call {n}"}) for n in range(calls)], "done"])
    start, cpu = time.perf_counter(), time.process_time()
    result = await session.prompt("echo", model=model)
    await rt.store.flush()  # the calls' records are committed: the recording is part of what is measured
    elapsed, used = time.perf_counter() - start, time.process_time() - cpu
    if len(result.calls) != calls:
        raise WrongResult(f"session turn: {len(result.calls)} calls, not {calls}")
    for n, call in enumerate(result.calls):
        _expect("session turn", n, call.content if call.ok else call.error)
    stored = [p for m in await rt.store.load_messages(session.id) for p in m.parts if isinstance(p, ToolPart)]
    if len(stored) != calls:
        raise WrongResult(f"session turn: {len(stored)} tool parts in the store, not {calls}")
    for n, part in enumerate(stored):
        _expect("session turn (stored)", n, "".join(c.text for c in part.content if isinstance(c, Text)))
    return elapsed / calls, used / calls


class _StandIn:
    """In place of a connection's ``mcp`` session: answers ``echo`` at once, in this process."""

    async def call_tool(self, name: str, arguments: dict[str, Any], **_: Any) -> types.CallToolResult:
        await anyio.lowlevel.checkpoint()
        text = f"echo: {arguments['text']}" if name == "echo" else f"no tool {name}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def own_work(location: RuntimeLocation, calls: int, rounds: int) -> float:
    """The least CPU per call of :func:`settle_round` over ``rounds`` rounds with the stand-in in place of the
    server's session (the least disturbed round: this figure is tether's code alone, steadier than a median)."""
    assert location.mcp is not None
    (connection,) = location.mcp.connections
    real, connection.session = connection.session, _StandIn()  # type: ignore[assignment]
    try:
        await settle_round(location, calls)
        return min([(await settle_round(location, calls))[1] for _ in range(rounds)])
    finally:
        connection.session = real


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
        if not isinstance(outcome, Completed) or len(outcome.content) != 1:
            raise WrongResult(f"tether settle: call {n} returned {outcome!r}")
        _expect("tether settle", n, getattr(outcome.content[0], "text", outcome.content[0]))
    return (time.perf_counter() - start) / calls, (time.process_time() - cpu) / calls


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


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
    project = state / "project"
    project.mkdir()
    print(f"load average before: {_load()}")
    with open(state / "stderr", "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
            Runtime(data_dir=state / "data", config=config, concurrency=1) as rt,
        ):
            await session.initialize()
            await session.list_tools()
            location = await rt.location(project)
            lines: dict[str, Round] = {
                "bare": lambda n: bare_round(session, n),
                "settle": lambda n: settle_round(location, n),
                "turn": lambda n: turn_round(rt, location, n),
            }
            figures: dict[str, list[tuple[float, float]]] = {name: [] for name in lines}
            for run in lines.values():  # warm every path up
                await run(10)
            names = list(lines)
            for r in range(rounds):
                for name in names[r % 3 :] + names[: r % 3]:
                    figures[name].append(await lines[name](calls))
            own = await own_work(location, 1000, rounds)
    wall = {name: statistics.median(w for w, _ in f) for name, f in figures.items()}
    cpu = {name: statistics.median(c for _, c in f) for name, f in figures.items()}
    print(f"{calls} calls per round, {rounds} rounds, order rotated (medians per call; cpu: this process)")
    labels = {
        "bare": "bare mcp ClientSession",
        "settle": "tether settle alone",
        "turn": "tether session turn",
    }
    for name, label in labels.items():
        ratio = (
            ""
            if name == "bare"
            else f"  {wall[name] / wall['bare']:.2f}x wall {cpu[name] / cpu['bare']:.2f}x cpu"
        )
        print(f"  {label + ':':24s} {wall[name] * 1e6:7.0f} µs wall {cpu[name] * 1e6:6.0f} µs cpu{ratio}")
    print(f"  tether's own work (in-process stand-in for the server): {own * 1e6:.1f} µs cpu per call")
    print(f"  target (issue 16): settle alone <= 1.2x wall; it is {wall['settle'] / wall['bare']:.2f}x")
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    try:
        anyio.run(
            main, int(sys.argv[1]) if len(sys.argv) > 1 else 50, int(sys.argv[2]) if len(sys.argv) > 2 else 9
        )
    except* WrongResult as wrong:
        first: BaseException = wrong
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        sys.exit(f"bench/mcp.py: a call returned a wrong result, so no figures: {first}")

"""Framework overhead per tool call: tether (SQLite store on) vs pydantic-ai and openai-agents, side by side.

Workloads, each with a scripted model and a no-op tool, so what is measured is the framework:

- ``seq10``: 10 sequential calls (one call per step), then a final text step;
- ``seq1000``: the same with 1,000 calls;
- ``par100``: one step with 100 parallel calls, then a final text step.

Every call gets a distinct input (identical consecutive calls would trip tether's doom-loop gate and be blocked
without running; the bench asserts that every tether call executed).

Per-call figure = wall time of the whole run / number of calls (best of several repeats). tether is reported twice:
``returned`` stops the clock when ``prompt()`` returns (the store commits in its writer thread within a ~2 ms window),
``+commit`` when the store has committed the last event (``await store.flush()``); both are checked against the
target and both ratios are printed. tether's process CPU time per call (the event loop and the store's writer
thread, until the last commit) is printed too: it is steadier than wall time on a loaded machine. The baselines are
skipped with a message when not installed (``.venv/bin/pip install pydantic-ai-slim openai-agents``; they are not
runtime dependencies). Run: ``.venv/bin/python bench/runner.py [--quick] [--only seq10 ...]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

WORKLOADS: dict[str, tuple[int, bool]] = {
    "seq10": (10, False),
    "seq1000": (1000, False),
    "par100": (100, True),
}
TARGETS_MS = {"seq10": 0.2, "seq1000": 0.2, "par100": 0.1}

Runner = Callable[[int, bool], Awaitable[float]]

_TETHER_CPU: list[float] = []
"""Process CPU time (every thread: the loop and the store's writer) of each timed tether run."""
_TETHER_COMMITTED: list[float] = []
"""Wall time of each timed tether run until the store has committed its last event."""


# -- tether ----------------------------------------------------------------------------------------------------------


class NoopInput(BaseModel):
    text: str


@dataclass(frozen=True)
class _Agent:
    name: str = "build"
    rules: tuple[Any, ...] = ()
    steps: int | None = None  # None: the default cap (100 steps per turn); seq1000 needs more
    prompt: str | None = None
    options: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class _Loc:
    tools: Any
    root: Path
    directory: Path


def _steps(n: int, parallel: bool) -> list[Any]:
    from tether.testing import Step, tool_call

    # Distinct inputs: identical consecutive calls would trip tether's doom-loop gate (the 3rd would be blocked
    # without running), which is not the workload the baselines run.
    if parallel:
        return [Step(*[tool_call("noop", {"text": f"x{i}"}) for i in range(n)]), Step("done")]
    return [*(Step(tool_call("noop", {"text": f"x{i}"})) for i in range(n)), Step("done")]


@dataclass(frozen=True)
class Measure:
    """One timed run: wall seconds until the run returned, until its last record was committed, process CPU."""

    returned: float
    committed: float
    cpu: float


async def run_tether(n: int, parallel: bool) -> float:
    measure = await measure_tether(n, parallel)
    _TETHER_COMMITTED.append(measure.committed)
    _TETHER_CPU.append(measure.cpu)
    return measure.returned


async def measure_tether(n: int, parallel: bool) -> Measure:
    """``n`` no-op calls through ``Session.prompt`` in a store opened for them: the first turn of a new store."""
    async with TetherBench() as bench:
        return await bench.turn(n, parallel)


async def measure_tether_runtime(n: int, parallel: bool, *, then: list[Measure] | None = None) -> Measure:
    """``n`` no-op calls in the first turn of a freshly opened :class:`tether.Runtime` (its own data directory, store,
    permission service, built-in tools and Location): what every ``tether run`` process pays, minus the process.

    Opening the runtime, its Location and the session is not timed (they are start-up: ``bench/startup.py``); the
    turn is, from ``prompt()`` to the store's commit of its last event, with every first use it makes (the catalog's
    schemas, the codecs, SQLite compiling the writer's statements, the permission rules' first evaluation).
    With ``then``, a second turn (a new session in the same runtime, timed the same way) is appended to it: what the
    first turn pays beyond the runtime's own per-turn path.
    """
    from tether import Runtime
    from tether.config import parse_config
    from tether.testing import ScriptedModel
    from tether.tools import Tool, ToolResponse

    executed = 0
    # one step per sequential call plus the final text step: above the default cap of 100 steps a turn
    config = parse_config({"agent": {"build": {"steps": n + 1}}}, file="bench") if not parallel else None

    async def noop(value: NoopInput, ctx: Any) -> ToolResponse[Any]:
        nonlocal executed
        executed += 1
        return ToolResponse(content="ok")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        async with Runtime(data_dir=Path(tmp) / "data", config=config, plugins=False) as rt:
            with rt.tools.register({"noop": Tool(description="Do nothing", input=NoopInput, execute=noop)}):
                location = await rt.location(root)
                measures: list[Measure] = []
                for _ in range(1 if then is None else 2):
                    session = await rt.sessions.create(location, rules=[("noop", "*", "allow")])
                    await rt.store.flush()  # the session's creation is not part of the turn
                    model = ScriptedModel(_steps(n, parallel))
                    before = executed
                    start, cpu_start = time.perf_counter(), time.process_time()
                    result = await session.prompt("go", model=model)
                    elapsed = time.perf_counter() - start
                    await rt.store.flush()  # until everything is committed to the file
                    measures.append(
                        Measure(
                            returned=elapsed,
                            committed=time.perf_counter() - start,
                            cpu=time.process_time() - cpu_start,
                        )
                    )
                    assert result.tool_calls == n == executed - before, (result, executed - before)
                    model.assert_done()
    if then is not None:
        then.append(measures[1])
    return measures[0]


class TetherBench:
    """An open SQLite store, tool registry and ``Sessions``, as in a runtime that serves many turns.

    Each :meth:`turn` is one prompt of a new session, timed from the prompt to the store's commit of its last
    event. The first turn of a new store also pays that store's first use (SQLite compiling the writer's multi-row
    statements, about 0.5 ms per statement kind when timed alone, and growing new tables): a runtime pays it once.
    """

    def __init__(self) -> None:
        self.executed = 0
        self._stack: Any = None

    async def __aenter__(self) -> TetherBench:
        from contextlib import AsyncExitStack

        from tether.bus import Bus
        from tether.output import OutputStore
        from tether.session import Sessions
        from tether.store import SQLiteStore
        from tether.tools import Tool, ToolRegistry, ToolResponse

        async def noop(value: NoopInput, ctx: Any) -> ToolResponse[Any]:
            self.executed += 1
            return ToolResponse(content="ok")

        stack = self._stack = AsyncExitStack()
        root = self._root = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        self.store = await stack.enter_async_context(SQLiteStore(root / "tether.db"))
        self._registry = ToolRegistry(output=OutputStore(root / "tool-output"))
        self._registry.register({"noop": Tool(description="Do nothing", input=NoopInput, execute=noop)})
        # One step per sequential call plus the final text step: above the default cap of 100 steps a turn, which is
        # configurable per agent.
        self._sessions = Sessions(store=self.store, bus=Bus(), agents={"build": _Agent(steps=100_001)})
        # as the runtime wires it: telemetry observes every turn (bench/telemetry.py's "on"; untraced: one check a
        # turn). An older tree (bench/telemetry.py --baseline) has no such hook, or called telemetry itself.
        try:
            from tether.telemetry.internal import turn_trace
        except ImportError:
            turn_trace = None
        self._sessions.observe = turn_trace
        stack.callback(self._sessions.close)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def turn(self, n: int, parallel: bool) -> Measure:
        from tether.testing import ScriptedModel

        session = await self._sessions.create(_Loc(self._registry, self._root, self._root))
        await self.store.flush()  # the session's creation is not part of the turn
        model = ScriptedModel(_steps(n, parallel))
        executed = self.executed
        start, cpu_start = time.perf_counter(), time.process_time()
        result = await session.prompt("go", model=model)
        elapsed = time.perf_counter() - start
        await self.store.flush()  # until everything is committed to the file
        measure = Measure(
            returned=elapsed,
            committed=time.perf_counter() - start,
            cpu=time.process_time() - cpu_start,
        )
        assert result.tool_calls == n == self.executed - executed, (result, self.executed - executed)
        model.assert_done()
        return measure


# -- pydantic-ai -----------------------------------------------------------------------------------------------------


async def run_pydantic_ai(n: int, parallel: bool) -> float:
    return (await measure_pydantic_ai(n, parallel)).returned


async def measure_pydantic_ai(n: int, parallel: bool) -> Measure:
    """``n`` no-op calls through ``Agent.run`` with a ``FunctionModel`` (nothing recorded)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    calls = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        if calls >= n:
            return ModelResponse(parts=[TextPart("done")])
        if parallel:
            calls = n
            return ModelResponse(
                parts=[ToolCallPart("noop", {"text": f"x{i}"}, tool_call_id=f"c{i}") for i in range(n)]
            )
        calls += 1
        return ModelResponse(parts=[ToolCallPart("noop", {"text": f"x{calls}"}, tool_call_id=f"c{calls}")])

    agent = Agent(FunctionModel(respond))

    executed = 0

    @agent.tool_plain
    async def noop(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        nonlocal executed
        executed += 1
        return "ok"

    start, cpu_start = time.perf_counter(), time.process_time()
    await agent.run("go", usage_limits=UsageLimits(request_limit=None, tool_calls_limit=None))
    elapsed = time.perf_counter() - start
    assert executed == n, executed
    return Measure(returned=elapsed, committed=elapsed, cpu=time.process_time() - cpu_start)


# -- openai-agents ---------------------------------------------------------------------------------------------------


async def run_openai_agents(n: int, parallel: bool) -> float:
    from agents import Agent, ModelSettings, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)
    calls = 0

    def call(i: int) -> ResponseFunctionToolCall:
        return ResponseFunctionToolCall(
            type="function_call",
            call_id=f"c{i}",
            name="noop",
            arguments=f'{{"text":"x{i}"}}',
            id=f"fc{i}",
            status="completed",
        )

    class FakeModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            nonlocal calls
            if calls >= n:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                out: list[Any] = [
                    ResponseOutputMessage(
                        type="message", id="m", role="assistant", status="completed", content=[text]
                    )
                ]
            elif parallel:
                out = [call(i) for i in range(n)]
                calls = n
            else:
                calls += 1
                out = [call(calls)]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    async def noop(text: str) -> str:
        return "ok"

    agent = Agent(name="bench", model=FakeModel(), tools=[noop], model_settings=ModelSettings())
    start = time.perf_counter()
    await Runner.run(agent, "go", max_turns=n + 5)
    return time.perf_counter() - start


# -- harness ---------------------------------------------------------------------------------------------------------


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _best(runner: Runner, n: int, parallel: bool, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        best = min(best, anyio.run(runner, n, parallel))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="run only these workloads")
    args = parser.parse_args()
    frameworks: dict[str, Runner] = {"tether": run_tether}
    for name, module, runner in (
        ("pydantic-ai", "pydantic_ai", run_pydantic_ai),
        ("openai-agents", "agents", run_openai_agents),
    ):
        if _available(module):
            frameworks[name] = runner
        else:
            print(f"skipping {name}: not installed (.venv/bin/pip install pydantic-ai-slim openai-agents)")
    results: dict[tuple[str, str], float] = {}
    cpu: dict[str, float] = {}
    committed: dict[str, float] = {}
    for workload in args.only or list(WORKLOADS):
        n, parallel = WORKLOADS[workload]
        repeats = (3 if args.quick else 7) if n <= 100 else (1 if args.quick else 3)
        for name, runner in frameworks.items():
            anyio.run(runner, min(n, 10), parallel)  # warm imports and caches
            _TETHER_CPU.clear()
            _TETHER_COMMITTED.clear()
            results[(name, workload)] = _best(runner, n, parallel, repeats) / n * 1000
            if name == "tether":
                cpu[workload] = min(_TETHER_CPU) / n * 1000
                committed[workload] = min(_TETHER_COMMITTED) / n * 1000
    others = [name for name in frameworks if name != "tether"]
    header = f"{'workload':<10}{'target':>8}{'returned':>10}{'':<7}{'+commit':>9}{'':<7}{'cpu':>8}"
    header += "".join(f"{name:>15}{'x ret':>8}{'x +com':>8}" for name in others)
    print("ms per call; tether's returned, +commit and cpu columns, then each baseline and its ratios")
    print(header)
    for workload in args.only or list(WORKLOADS):
        target = TARGETS_MS[workload]
        ours, ours_committed = results[("tether", workload)], committed[workload]
        row = f"{workload:<10}{'≤ ' + str(target):>8}"
        row += f"{ours:>10.4f} {'ok' if ours <= target else 'MISSED':<6}"
        row += f"{ours_committed:>9.4f} {'ok' if ours_committed <= target else 'MISSED':<6}"
        row += f"{cpu[workload]:>8.4f}"
        for name in others:
            theirs = results[(name, workload)]
            row += f"{theirs:>15.4f}{theirs / ours:>7.1f}x{theirs / ours_committed:>7.1f}x"
        print(row)
    print(
        "returned: wall time until prompt() returns; +commit: until the store has committed the last event; "
        "cpu: tether process CPU time (event loop + store writer) until the last commit; "
        "x ret / x +com: the baseline's time over tether's returned / +commit time (best of the repeats)"
    )


if __name__ == "__main__":
    main()

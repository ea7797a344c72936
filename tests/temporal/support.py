"""What the Temporal tests share with their worker processes: a planning model and tools that leave marks.

The model is a ``FunctionModel`` that decides from the request alone (so any worker, in any process, plays the same
turn): the prompt is a JSON list of ``[tool, input]`` calls for the first step; once tool results are in the
history, it answers ``done:`` and the results. Tools append a line to a file under ``marks`` each time they run, so
a test counts executions across processes.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio

from tether import Runtime
from tether.config import Config
from tether.llm import ModelRequest, ToolMessage, UserMessage
from tether.permissions import Rule
from tether.testing import FunctionModel, Step, tool_call
from tether.tools import Text, Tool, ToolContext

MODEL = "plan"
CONFIG = Config(permission=(Rule("deploy", "*", "ask"),))
"""The ``guarded`` tool's action asks a person (the build agent allows what no rule names)."""


def plan(request: ModelRequest) -> Step:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        text = "".join(getattr(p, "text", "") for p in last.content)
        calls = json.loads(text)
        return Step(*(tool_call(name, args, id=f"call_{uuid.uuid4().hex[:12]}") for name, args in calls))
    assert isinstance(last, ToolMessage)
    results = []
    for result in last.results:
        body = "".join(p.text for p in result.content if isinstance(p, Text))
        results.append(f"{result.name}={'error:' if result.is_error else ''}{body}")
    return Step("done: " + "; ".join(results))


def count(marks: Path, name: str) -> int:
    path = marks / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def _mark(marks: Path, name: str, line: str = "x") -> None:
    with (marks / name).open("a") as f:
        f.write(line + "\n")


def tools(marks: Path) -> dict[str, Tool[Any, Any]]:
    async def fast(value: dict[str, Any], ctx: ToolContext) -> str:
        _mark(marks, "fast", str(value.get("n")))
        return f"fast {value.get('n')}"

    async def wait_for_release(name: str) -> str:
        _mark(marks, f"{name}-started")
        while not (marks / "release").exists():  # the test releases it (or kills the worker first)
            await anyio.sleep(0.05)
        _mark(marks, f"{name}-done")
        return f"{name} done"

    async def slow(value: dict[str, Any], ctx: ToolContext) -> str:
        return await wait_for_release("slow")

    async def lookup(value: dict[str, Any], ctx: ToolContext) -> str:
        return await wait_for_release("lookup")

    async def guarded(value: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.ask("deploy", "prod")
        _mark(marks, "guarded")
        return "deployed"

    schema = {"type": "object"}
    return {
        "fast": Tool(description="A quick call", input=schema, execute=fast),
        "slow": Tool(description="Waits for the test", input=schema, execute=slow, timeout=None),
        "lookup": Tool(
            description="Waits, idempotent", input=schema, execute=lookup, timeout=None, idempotent=True
        ),
        "guarded": Tool(description="Asks before it acts", input=schema, execute=guarded),
    }


def model() -> FunctionModel:
    return FunctionModel(plan)


async def main(target: str, task_queue: str, data_dir: str, marks: str) -> None:
    """A worker process: ``python support.py TARGET QUEUE DATA_DIR MARKS``; prints ``ready`` once it polls."""
    from tether.temporal import run_worker

    async with Runtime(data_dir=data_dir, plugins=False, config=CONFIG) as rt:
        rt.tools.register(tools(Path(marks)))

        def ready() -> None:
            print("ready", flush=True)

        # the tests' projects are the marks folder's parent (tmp_path)
        roots = [Path(marks).parent]
        await run_worker(rt, target, task_queue=task_queue, models={MODEL: model()}, ready=ready, roots=roots)


async def wait_for(handle: Any, kind: str) -> dict[str, Any]:
    """The data of the turn's first ``kind`` event (within 30 s)."""
    with anyio.fail_after(30):
        async for event in handle.events():
            if event.kind == kind:
                return event.data
    raise AssertionError(f"the turn ended without a {kind} event")


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])

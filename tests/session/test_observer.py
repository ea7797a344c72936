"""The turn observer hooks (``session/_observer.py``): what an observer installed with ``Sessions(observe=...)`` is
told, in what order, and that the session package imports no observer (telemetry implements these hooks)."""

from __future__ import annotations

import ast
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

import tether.session
from tether.content import Content
from tether.errors import ProviderError
from tether.llm import Model, ModelRequest
from tether.records import AssistantInfo, SessionInfo, ToolPart
from tether.session import Sessions
from tether.session.internal import StepObserver, StepProcessor, TurnObserver, TurnSoFar
from tether.testing import FunctionModel, ScriptedModel, Step, tool_call
from tether.tools import Tool, ToolContext, ToolResponse

from .conftest import Harness

pytestmark = pytest.mark.anyio


class Recorder:
    """An observer that writes down every hook call (it implements ``TurnObserver`` and ``StepObserver``)."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.parts: list[ToolPart] = []
        self.raised: BaseException | None = None

    def __call__(self, info: SessionInfo, model: Model) -> TurnObserver | None:
        self.log.append(("observe", info.id, model.name))
        return Turn(self)


class Turn:
    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    async def run(
        self,
        work: Awaitable[None],
        system: Sequence[str],
        progress: TurnSoFar,
        user_id: str,
        user: Sequence[Content],
    ) -> None:
        log = self.recorder.log
        log.append(("run", tuple(system), user_id.startswith("msg_"), len(user)))
        try:
            await work
        except BaseException as exc:
            self.recorder.raised = exc
            raise
        finally:
            log.append(("ran", progress.steps, progress.tool_calls, progress.stop, progress.text))

    def chat(self, request: ModelRequest, info: AssistantInfo, step: int) -> StepObserver | None:
        self.recorder.log.append(("chat", step, request.tool_choice, info.agent))
        return StepHooks(self.recorder, step)


class StepHooks:
    def __init__(self, recorder: Recorder, step: int) -> None:
        self.recorder = recorder
        self.step = step

    def wrap(
        self,
        stream: Callable[[], Awaitable[ProviderError | None]],
        processor: StepProcessor,
        defect: Callable[[], BaseException | None],
    ) -> Callable[[], Awaitable[ProviderError | None]]:
        async def wrapped() -> ProviderError | None:
            self.recorder.log.append(("stream", self.step))
            error = await stream()
            self.recorder.log.append(("streamed", self.step, processor.finish_reason, defect()))
            return error

        return wrapped

    def tool_part(self, part: ToolPart) -> None:
        self.recorder.log.append(("tool", self.step, part.call_id, part.state))
        self.recorder.parts.append(part)


async def test_an_observer_sees_the_turn_each_step_and_each_recorded_tool_part_in_order(
    harness: Harness,
) -> None:
    async def ok(value: dict[str, Any], ctx: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(content="ok")

    harness.tools.register({"ok": Tool(description="ok", input={"type": "object"}, execute=ok)})
    recorder = Recorder()
    sessions = Sessions(store=harness.store, bus=harness.bus, agents=harness.agents, observe=recorder)
    session = await sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("ok", {}, id="c1")], "done"])
    with anyio.fail_after(30):
        result = await session.prompt("go", model=model, system=["be brief"])
    await harness.store.flush()

    assert result.stop == "done" and result.tool_calls == 1
    log = recorder.log
    assert log[0] == ("observe", session.id, model.name)
    assert log[1] == ("run", ("be brief",), True, 1)
    assert log[-1] == ("ran", 2, 1, "done", "done")
    steps = [entry for entry in log if entry[0] in ("chat", "stream", "streamed")]
    assert steps == [
        ("chat", 1, "auto", "build"),
        ("stream", 1),
        ("streamed", 1, "tool-calls", None),
        ("chat", 2, "auto", "build"),
        ("stream", 2),
        ("streamed", 2, "stop", None),
    ]
    tools = [entry for entry in log if entry[0] == "tool"]
    assert {entry[1:3] for entry in tools} == {(1, "c1")}  # every record of the call, told to its own step
    assert tools[-1][3] == "completed" and ("tool", 1, "c1", "running") in tools
    first_chat, second_chat = (i for i, entry in enumerate(log) if entry[0] == "chat")
    assert all(first_chat < log.index(entry) < second_chat for entry in tools)
    # what the observer was told is what the store holds (law 7: the durable record)
    (stored,) = [
        part
        for message in await harness.store.load_messages(session.id)
        for part in message.parts
        if isinstance(part, ToolPart)
    ]
    assert recorder.parts[-1] == stored
    sessions.close()


async def test_an_observer_sees_what_ends_the_turn_and_the_turn_raises_it_unchanged(harness: Harness) -> None:
    # A defect of the model's stream: the step's failure policy contains it (the observer's defect() tells it), the
    # step is closed, and the turn raises it; the observer's run sees that same exception.
    def broken(request: ModelRequest) -> Step:
        raise RuntimeError("the model broke")

    recorder = Recorder()
    sessions = Sessions(store=harness.store, bus=harness.bus, agents=harness.agents, observe=recorder)
    session = await sessions.create(harness.loc)
    with anyio.fail_after(30), pytest.raises(RuntimeError, match="the model broke") as raised:
        await session.prompt("go", model=FunctionModel(broken))
    assert recorder.raised is raised.value
    streamed = next(entry for entry in recorder.log if entry[0] == "streamed")
    assert streamed[:2] == ("streamed", 1) and streamed[3] is raised.value
    assert recorder.log[-1][:3] == ("ran", 0, 0)  # the broken step did not count
    sessions.close()


async def test_a_turn_the_observer_declines_runs_without_any_hook(harness: Harness) -> None:
    calls: list[str] = []

    def observe(info: SessionInfo, model: Model) -> TurnObserver | None:
        calls.append(info.id)
        return None

    sessions = Sessions(store=harness.store, bus=harness.bus, agents=harness.agents, observe=observe)
    session = await sessions.create(harness.loc)
    with anyio.fail_after(30):
        result = await session.prompt("go", model=ScriptedModel(["done"]))
    assert result.text == "done" and calls == [session.id]
    sessions.close()


def test_the_session_package_imports_no_observer() -> None:
    # telemetry (an observer, on a higher floor) implements the hooks; session never names it, not even for types
    root = Path(tether.session.__file__).parent
    found: set[tuple[str, str]] = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module is not None and "telemetry" in node.module:
                found.add((path.name, node.module))
            elif isinstance(node, ast.Import):
                found.update((path.name, alias.name) for alias in node.names if "telemetry" in alias.name)
    assert found == set()

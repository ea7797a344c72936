"""The failure policy of a step (``tether.session._failures``): what a defect in a call, in the model stream, in the
store, or a cancellation does to the call, the step and the turn. Real store, real tools, real models (small ``Model``
subclasses whose stream waits on events, so every ordering here is forced, never timed)."""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

import tether.session
from tether.errors import ProviderBadRequestError, StoreError, UsageError
from tether.llm import Event, Model, ModelRequest, StepFinish, StepStart, ToolInputStart
from tether.records import DurableEvent
from tether.session import AssistantInfo, Sessions, ToolPart
from tether.session.internal import ABORTED_ERROR
from tether.store import SQLiteStore, StoredMessage
from tether.testing import ScriptedModel, tool_call
from tether.tools import Text, Tool, ToolContext, ToolResponse

from .conftest import Harness


class Echo(BaseModel):
    text: str


def tool_parts(messages: Sequence[StoredMessage]) -> list[ToolPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolPart)]


def assistants(messages: Sequence[StoredMessage]) -> list[AssistantInfo]:
    return [m.info for m in messages if isinstance(m.info, AssistantInfo)]


Script = Callable[[], AsyncIterator[Event]]


class GatedModel(Model):
    """A model whose steps are async generators: a step can wait for the runtime before its next event or failure."""

    provider = "test"
    model_id = "gated"

    def __init__(self, *steps: Script) -> None:
        self._steps = list(steps)

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        return self._steps.pop(0)()


async def echo(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
    return ToolResponse(content=i.text)


class Asker:
    """A permission service whose ``assert_`` has a bug: it signals ``asked`` and raises a plain exception."""

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def assert_(self, request: Any) -> None:
        self.asked.set()
        raise RuntimeError("permission service bug")


@pytest.mark.anyio
@pytest.mark.parametrize("permissions", [Asker()])
async def test_a_runner_defect_in_one_call_fails_that_call_and_never_cancels_a_sibling(
    harness: Harness, permissions: Asker
) -> None:
    async def sibling(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        await permissions.asked.wait()  # still running when the other call's defect happens
        await anyio.lowlevel.checkpoint()
        return ToolResponse(content="sibling finished")

    harness.tools.register(
        {
            "sibling": Tool(description="s", input=Echo, execute=sibling),
            "echo": Tool(description="e", input=Echo, execute=echo),
        }
    )
    session = await harness.sessions.create(harness.loc)
    same = {"text": "again"}
    # The third identical echo asks doom_loop; the permission service raises: a runner-side defect of that call.
    model = ScriptedModel(
        [
            [
                tool_call("sibling", {"text": "s"}, id="c0"),
                tool_call("echo", same, id="c1"),
                tool_call("echo", same, id="c2"),
                tool_call("echo", same, id="c3"),
            ]
        ]
    )
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="permission service bug"):
        await session.prompt("go", model=model)
    await harness.store.flush()
    messages = await session.messages()
    parts = {p.call_id: p for p in tool_parts(messages)}
    assert (parts["c0"].state, parts["c0"].content) == ("completed", (Text("sibling finished"),))
    assert [parts[c].state for c in ("c1", "c2")] == ["completed", "completed"]
    failed = parts["c3"]
    assert (failed.state, failed.error_kind, failed.interrupted) == ("error", "defect", False)
    assert failed.error == "Tool execution failed: permission service bug"
    (assistant,) = assistants(messages)
    assert assistant.error is not None and (assistant.error.kind, assistant.error.message) == (
        "error",
        "permission service bug",
    )


@pytest.mark.anyio
async def test_a_model_stream_defect_lets_started_calls_finish_fails_the_unsettled_and_is_raised(
    harness: Harness,
) -> None:
    running = anyio.Event()
    stream_failed = anyio.Event()

    async def slow(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        running.set()
        await stream_failed.wait()  # the stream fails while this call runs
        await anyio.lowlevel.checkpoint()
        return ToolResponse(content="slow finished")

    async def step() -> AsyncIterator[Event]:
        yield StepStart()
        yield tool_call("slow", {"text": "a"}, id="c1")
        await running.wait()
        yield ToolInputStart(id="c2", name="slow")  # its input never completes
        stream_failed.set()
        raise RuntimeError("adapter bug")

    harness.tools.register({"slow": Tool(description="s", input=Echo, execute=slow)})
    session = await harness.sessions.create(harness.loc)
    with anyio.fail_after(5), pytest.raises(RuntimeError, match="adapter bug"):
        await session.prompt("go", model=GatedModel(step))
    await harness.store.flush()
    messages = await session.messages()
    parts = {p.call_id: p for p in tool_parts(messages)}
    assert (parts["c1"].state, parts["c1"].content) == ("completed", (Text("slow finished"),))
    unsettled = parts["c2"]
    assert (unsettled.state, unsettled.error_kind, unsettled.interrupted) == ("error", "defect", False)
    assert unsettled.error == "Tool execution failed: adapter bug"
    (assistant,) = assistants(messages)
    assert assistant.completed is not None and assistant.error is not None
    assert (assistant.error.kind, assistant.error.message) == ("error", "adapter bug")


class RefusingStore:
    """The real store, except that it refuses (``StoreError``) the one write ``refuse`` picks, then goes on."""

    def __init__(self, store: SQLiteStore, refuse: Callable[[DurableEvent], bool]) -> None:
        self._store = store
        self._refuse = refuse
        self.refused = anyio.Event()

    def append(self, event: DurableEvent) -> None:
        if not self.refused.is_set() and self._refuse(event):
            self.refused.set()
            raise StoreError("disk full")
        self._store.append(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@pytest.mark.anyio
async def test_a_store_failure_stops_the_turn_before_the_next_call_runs(
    harness: Harness, tmp_path: Path
) -> None:
    ran: list[str] = []

    async def touch(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        ran.append(i.text)
        return ToolResponse(content="touched " + i.text)

    def c1_completed(event: DurableEvent) -> bool:
        part = getattr(event, "part", None)
        return isinstance(part, ToolPart) and part.call_id == "c1" and part.state == "completed"

    store = RefusingStore(harness.store, c1_completed)

    async def step() -> AsyncIterator[Event]:
        yield StepStart()
        yield tool_call("touch", {"text": "first"}, id="c1")
        await store.refused.wait()  # the store refused c1's result; it accepts writes again (a flaky disk)
        yield tool_call("touch", {"text": "second"}, id="c2")
        yield StepFinish(reason="tool-calls")

    harness.tools.register({"touch": Tool(description="t", input=Echo, execute=touch)})
    sessions = Sessions(store=store, bus=harness.bus, agents=harness.agents)  # type: ignore[arg-type]
    session = await sessions.create(harness.loc)
    with anyio.fail_after(5), pytest.raises(StoreError, match="disk full"):
        await session.prompt("go", model=GatedModel(step))  # a second step would fail: GatedModel has one
    sessions.close()
    assert ran == ["first"]  # c2 was recorded running, never executed (law 12)
    await harness.store.flush()
    messages = await harness.store.load_messages(session.id)
    parts = {p.call_id: p for p in tool_parts(messages)}
    assert (parts["c2"].state, parts["c2"].error_kind) == ("error", "defect")
    assert parts["c2"].error == "Tool execution failed: disk full"
    (assistant,) = assistants(messages)
    assert assistant.error is not None and assistant.error.kind == "store"


@pytest.mark.anyio
async def test_cancellation_propagates_as_cancellation_and_is_never_a_result(harness: Harness) -> None:
    started = anyio.Event()
    returned: list[str] = []

    async def hang(i: Echo, ctx: ToolContext) -> ToolResponse[Any]:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            returned.append("cleanup ran")
        raise AssertionError("unreachable")

    harness.tools.register({"hang": Tool(description="h", input=Echo, execute=hang)})
    session = await harness.sessions.create(harness.loc)
    model = ScriptedModel([[tool_call("hang", {"text": "x"}, id="c1")]])
    reached_after_prompt = False
    with anyio.fail_after(5):
        with anyio.CancelScope() as outer:

            async def cancel_when_started() -> None:
                await started.wait()
                outer.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_when_started)
                await session.prompt("go", model=model)
                reached_after_prompt = True  # never: the cancellation propagates out of prompt
    assert outer.cancelled_caught and not reached_after_prompt
    assert returned == ["cleanup ran"] and not session.busy
    await harness.store.flush()
    messages = await session.messages()
    (part,) = tool_parts(messages)
    assert (part.state, part.error, part.error_kind, part.interrupted) == (
        "error",
        ABORTED_ERROR,
        "aborted",
        True,
    )
    (assistant,) = assistants(messages)
    assert assistant.error is not None and assistant.error.kind == "aborted"


RUNNER = ("_session.py", "_runner.py", "_turn.py", "_step.py", "_dispatch.py", "_processor.py", "_history.py")


def test_only_the_failure_policy_catches_broadly_in_the_runner() -> None:
    """One owner (law 3): every other broad ``except`` in the runner's modules is listed here with its reason.

    (The store's writer thread is the store's own business: it turns every failure into its ``StoreError``.)
    """
    package = Path(tether.session.__file__).parent
    broad: list[tuple[str, str]] = []
    for module in (package / name for name in (*RUNNER, "_failures.py")):
        tree = ast.parse(module.read_text(), module.name)
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ExceptHandler) and (
                    node.type is None or ast.unparse(node.type) in {"Exception", "BaseException"}
                ):
                    broad.append((module.name, fn.name))
    outside = sorted({(m, f) for m, f in broad if m != "_failures.py"})
    assert outside == [
        ("_dispatch.py", "_same"),  # an input's __eq__ failing means "not a repeat", nothing else
        (
            "_processor.py",
            "fail_unsettled",
        ),  # fails every part in memory, raises the first refused write after
    ]
    assert {f for m, f in broad if m == "_failures.py"} >= {"run", "contain", "call", "turn_calls"}


@pytest.mark.anyio
async def test_an_option_the_request_rejects_fails_before_the_step_writes_anything(harness: Harness) -> None:
    session = await harness.sessions.create(harness.loc)
    with anyio.fail_after(5), pytest.raises(UsageError, match="unknown request option 'temprature'"):
        await session.prompt("go", model=ScriptedModel(["never"]), options={"temprature": 0.2})
    await harness.store.flush()
    assert assistants(await session.messages()) == []  # no assistant message left unfinished


class FailsBeforeStreaming(Model):
    """An adapter whose ``stream`` raises a provider error at once instead of returning a stream."""

    provider = "test"
    model_id = "refusing"

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        raise ProviderBadRequestError("bad request")


@pytest.mark.anyio
async def test_a_provider_error_raised_before_streaming_is_a_provider_error_not_a_defect(
    harness: Harness,
) -> None:
    session = await harness.sessions.create(harness.loc)
    with anyio.fail_after(5), pytest.raises(ProviderBadRequestError, match="bad request"):
        await session.prompt("go", model=FailsBeforeStreaming())
    await harness.store.flush()
    (assistant,) = assistants(await session.messages())
    assert assistant.error is not None and assistant.error.kind == "provider"

"""The activities' decisions on a later attempt, run with the SDK's ``ActivityEnvironment`` on a real runtime and
store: the attempt number, the activity's identity and what the store holds are what a dead worker leaves behind."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from tether import Runtime
from tether.errors import NotFoundError
from tether.llm import ModelRequest, StepStart, ToolCallEvent
from tether.session import AssistantInfo, PartUpdated, StepFinishPart, TextPart, ToolPart, UserInfo
from tether.session.internal import ABORTED_ERROR
from tether.store.internal import INTERRUPTED_ERROR
from tether.temporal._activities import TurnActivities
from tether.temporal._types import BeginRequest, CallRequest, CloseRequest, StepRequest, StepResult, TurnInput
from tether.testing import FunctionModel

from .support import CONFIG, MODEL, plan, tools

pytestmark = pytest.mark.anyio

RUN = f"run-{uuid.uuid4().hex}"


def env(attempt: int = 1, details: list[Any] | None = None, *, activity_id: str = "1") -> ActivityEnvironment:
    """An attempt of the activity ``activity_id`` of one workflow run (attempts of one activity share both)."""
    found = ActivityEnvironment()
    found.info = dataclasses.replace(
        found.info,
        attempt=attempt,
        heartbeat_details=details or [],
        activity_id=activity_id,
        workflow_run_id=RUN,
    )
    return found


@dataclasses.dataclass
class Acts:
    rt: Runtime
    activities: TurnActivities
    model: FunctionModel


@pytest.fixture
async def acts(tmp_path: Path) -> AsyncIterator[Acts]:
    marks = tmp_path / "marks"
    marks.mkdir()
    async with Runtime(data_dir=tmp_path / "data", plugins=False, config=CONFIG) as rt:
        rt.tools.register(tools(marks))
        model = FunctionModel(plan)
        yield Acts(rt, TurnActivities(rt, {MODEL: model}, roots=[tmp_path]), model)


async def begin_turn(acts: Acts, tmp_path: Path, calls: list[Any], *, attempt: int = 1) -> Any:
    request = BeginRequest(turn=TurnInput(prompt=json.dumps(calls), model=MODEL, directory=str(tmp_path)))
    return await env(attempt, activity_id="1").run(acts.activities.begin_turn, request)


async def step(acts: Acts, tmp_path: Path, calls: list[Any], *, details: list[Any] | None = None) -> Any:
    begin = await begin_turn(acts, tmp_path, calls)
    result: StepResult = await env(details=details, activity_id="2").run(
        acts.activities.model_step, step_request(begin)
    )
    return begin, result


def step_request(begin: Any) -> StepRequest:
    return StepRequest(
        session_id=begin.session_id,
        parent_id=begin.user_message_id,
        model=MODEL,
        step=1,
        final=False,
        system=begin.system,
        options={},
    )


def call(acts: Acts, request: CallRequest, attempt: int = 1) -> Any:
    return env(attempt, activity_id=f"{request.call.call_id}.1").run(acts.activities.all()[2], request)


async def parts(rt: Runtime, session_id: str, message_id: str) -> list[ToolPart]:
    messages = await rt.store.load_messages(session_id)
    return [p for m in messages if m.info.id == message_id for p in m.parts if isinstance(p, ToolPart)]


async def write(rt: Runtime, part: ToolPart) -> None:
    """Leave ``part`` in the store as a dead worker (or the store's recovery) would have."""
    rt.store.append(PartUpdated(part))
    await rt.store.flush()


async def test_a_stored_step_is_returned_on_a_later_attempt_without_asking_the_model_again(
    acts: Acts, tmp_path: Path
) -> None:
    """The worker died after the step's message was committed, before Temporal recorded the activity's result."""
    begin, first = await step(acts, tmp_path, [["fast", {"n": 1}], ["fast", {"n": 2}]])
    assert len(acts.model.requests) == 1
    [spec, _] = first.calls
    # the decided calls are pending, not running: no tool activity has started them
    assert [(p.state, p.started) for p in await parts(acts.rt, begin.session_id, first.message_id)] == [
        ("pending", None),
        ("pending", None),
    ]
    again = await env(attempt=2, activity_id="2").run(acts.activities.model_step, step_request(begin))
    assert again == first
    assert len(acts.model.requests) == 1
    messages = await acts.rt.store.load_messages(begin.session_id)
    assert [type(m.info).__name__ for m in messages] == ["UserInfo", "AssistantInfo"]
    outcome = await call(
        acts, CallRequest(session_id=begin.session_id, message_id=first.message_id, call=spec, model=MODEL)
    )
    assert (outcome.status, outcome.content) == ("completed", "fast 1")


async def test_a_step_whose_attempt_failed_mid_stream_is_closed_and_asked_again(
    acts: Acts, tmp_path: Path
) -> None:
    broken = True

    async def stream(request: ModelRequest) -> Any:
        yield StepStart()
        yield ToolCallEvent(id="call_1", name="fast", input={"n": 1})
        if broken:
            raise RuntimeError("the worker died here")

    class Breaks(FunctionModel):
        def stream(self, request: ModelRequest) -> Any:
            if not broken:
                return super().stream(request)
            self.requests.append(request)
            return stream(request)

    model = Breaks(plan)
    acts.activities._models[MODEL] = model  # pyright: ignore[reportPrivateUsage]
    begin = await begin_turn(acts, tmp_path, [["fast", {"n": 2}]])
    with pytest.raises(RuntimeError, match="the worker died here"):
        await env(activity_id="2").run(acts.activities.model_step, step_request(begin))
    broken = False
    result = await env(attempt=2, activity_id="2").run(acts.activities.model_step, step_request(begin))
    assert len(model.requests) == 2  # nothing of the first answer was stored whole: it is asked again
    messages = await acts.rt.store.load_messages(begin.session_id)
    first = messages[1]
    assert first.info.id != result.message_id
    [closed] = [p for p in first.parts if isinstance(p, ToolPart)]
    assert (closed.state, closed.error, closed.interrupted) == ("error", ABORTED_ERROR, True)
    assert isinstance(first.info, AssistantInfo) and first.info.completed is not None
    # the model reads the closed attempt in its history, as after a crash in process
    assert result.text == "done: fast=error:Tool execution aborted" and not result.calls


async def test_a_step_of_an_earlier_tether_closes_the_message_its_heartbeat_names(
    acts: Acts, tmp_path: Path
) -> None:
    begin, first = await step(acts, tmp_path, [["slow", {}]])
    # an earlier tether's message carries a random tail: only its heartbeat names it
    second = await env(attempt=2, details=[first.message_id], activity_id="3").run(
        acts.activities.model_step, step_request(begin)
    )
    assert second.message_id != first.message_id
    [closed] = await parts(acts.rt, begin.session_id, first.message_id)
    assert (closed.state, closed.error, closed.interrupted) == ("error", ABORTED_ERROR, True)


async def test_a_begin_retried_after_it_stored_creates_one_session_and_one_prompt(
    acts: Acts, tmp_path: Path
) -> None:
    first = await begin_turn(acts, tmp_path, [["fast", {"n": 1}]])
    again = await begin_turn(acts, tmp_path, [["fast", {"n": 1}]], attempt=2)
    assert (again.session_id, again.user_message_id) == (first.session_id, first.user_message_id)
    messages = await acts.rt.store.load_messages(first.session_id)
    assert [type(m.info) for m in messages] == [UserInfo]
    assert [p.text for p in messages[0].parts if isinstance(p, TextPart)] == ['[["fast", {"n": 1}]]']
    assert len(await acts.rt.sessions.list()) == 1


async def test_a_running_call_found_on_a_second_attempt_is_interrupted_not_run(
    acts: Acts, tmp_path: Path
) -> None:
    rt = acts.rt
    begin, result = await step(acts, tmp_path, [["slow", {}]])
    spec = result.calls[0]
    [part] = await parts(rt, begin.session_id, result.message_id)
    await write(rt, dataclasses.replace(part, state="running", started=1))  # an attempt started it, then died
    request = CallRequest(session_id=begin.session_id, message_id=result.message_id, call=spec, model=MODEL)
    outcome = await call(acts, request, attempt=2)
    assert (outcome.status, outcome.error, outcome.error_kind) == ("error", INTERRUPTED_ERROR, "interrupted")
    assert not (tmp_path / "marks" / "slow-started").exists()
    [part] = await parts(rt, begin.session_id, result.message_id)
    assert (part.state, part.interrupted) == ("error", True)
    again = await call(acts, request, attempt=3)  # settled: returned as it is
    assert again == outcome


async def test_a_call_its_dead_attempt_never_started_runs_on_the_next(acts: Acts, tmp_path: Path) -> None:
    """Pending (the attempt died before it marked the call running), or interrupted by the store's recovery while
    pending (its step's worker died): no tool ran, so the call runs, once."""
    rt = acts.rt
    begin, result = await step(acts, tmp_path, [["fast", {"n": 1}], ["fast", {"n": 2}]])
    [pending, swept] = result.calls
    [_, part] = await parts(rt, begin.session_id, result.message_id)
    recovered = dataclasses.replace(
        part, state="error", error=INTERRUPTED_ERROR, error_kind="interrupted", interrupted=True, ended=2
    )
    await write(rt, recovered)
    for spec in (pending, swept):
        request = CallRequest(
            session_id=begin.session_id, message_id=result.message_id, call=spec, model=MODEL
        )
        outcome = await call(acts, request, attempt=2)
        assert (outcome.status, outcome.content) == ("completed", f"fast {spec.input['n']}")
    assert (tmp_path / "marks" / "fast").read_text() == "1\n2\n"
    assert [
        (p.state, p.started is not None) for p in await parts(rt, begin.session_id, result.message_id)
    ] == [
        ("completed", True),
        ("completed", True),
    ]


async def test_a_call_interrupted_after_it_started_is_not_run_again(acts: Acts, tmp_path: Path) -> None:
    rt = acts.rt
    begin, result = await step(acts, tmp_path, [["fast", {"n": 1}]])
    [part] = await parts(rt, begin.session_id, result.message_id)
    recovered = dataclasses.replace(
        part,
        state="error",
        error=INTERRUPTED_ERROR,
        error_kind="interrupted",
        interrupted=True,
        started=1,
        ended=2,
    )
    await write(rt, recovered)
    request = CallRequest(
        session_id=begin.session_id, message_id=result.message_id, call=result.calls[0], model=MODEL
    )
    outcome = await call(acts, request, attempt=2)
    assert (outcome.status, outcome.error_kind) == ("error", "interrupted")
    assert not (tmp_path / "marks" / "fast").exists()


async def test_an_idempotent_running_call_runs_again_on_a_second_attempt(acts: Acts, tmp_path: Path) -> None:
    (tmp_path / "marks" / "release").touch()
    begin, result = await step(acts, tmp_path, [["lookup", {}]])
    [part] = await parts(acts.rt, begin.session_id, result.message_id)
    await write(acts.rt, dataclasses.replace(part, state="running", started=1))
    request = CallRequest(
        session_id=begin.session_id, message_id=result.message_id, call=result.calls[0], model=MODEL
    )
    outcome = await call(acts, request, attempt=2)
    assert (outcome.status, outcome.content) == ("completed", "lookup done")


async def test_a_step_finished_but_not_completed_is_completed_and_returned(
    acts: Acts, tmp_path: Path
) -> None:
    """The worker died between the step-finish part and the message's completion (two writes)."""
    rt = acts.rt
    begin, first = await step(acts, tmp_path, [["fast", {"n": 1}]])
    [stored] = [m for m in await rt.store.load_messages(begin.session_id) if m.info.id == first.message_id]
    assert isinstance(stored.info, AssistantInfo)
    assert any(isinstance(p, StepFinishPart) for p in stored.parts)
    from tether.session import MessageUpdated

    rt.store.append(MessageUpdated(dataclasses.replace(stored.info, completed=None, finish=None)))
    await rt.store.flush()
    again = await env(attempt=2, activity_id="2").run(acts.activities.model_step, step_request(begin))
    assert again == first and len(acts.model.requests) == 1
    [stored] = [m for m in await rt.store.load_messages(begin.session_id) if m.info.id == first.message_id]
    assert isinstance(stored.info, AssistantInfo) and stored.info.completed is not None


async def test_closing_nothing_and_a_missing_part_are_handled(acts: Acts, tmp_path: Path) -> None:
    rt, activities = acts.rt, acts.activities
    begin, result = await step(acts, tmp_path, [["fast", {"n": 1}]])
    assert (
        await env().run(activities.close_step, CloseRequest(session_id=begin.session_id, message_id=None))
        is None
    )
    await env().run(activities.close_step, CloseRequest(session_id=begin.session_id, message_id="msg_nope"))
    await env().run(
        activities.close_step, CloseRequest(session_id=begin.session_id, message_id=result.message_id)
    )
    messages = await rt.store.load_messages(begin.session_id)
    info = messages[-1].info
    assert isinstance(info, AssistantInfo) and info.error is None  # a finished step is left as it is
    missing = CallRequest(
        session_id=begin.session_id, message_id="msg_nope", call=result.calls[0], model=MODEL
    )
    with pytest.raises(NotFoundError, match="No tool part for call"):
        await env().run(activities.all()[2], missing)


class CountingStore:
    """The runtime's store, counting the reads of a whole session (law 10: a call's lookup must not be one)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.whole_sessions = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def load_messages(self, session_id: str) -> Any:
        self.whole_sessions += 1
        return await self._store.load_messages(session_id)


async def test_a_call_and_a_close_read_their_one_message_never_the_whole_session(
    acts: Acts, tmp_path: Path
) -> None:
    rt, activities = acts.rt, acts.activities
    begin, result = await step(acts, tmp_path, [["fast", {"n": 1}], ["fast", {"n": 2}]])
    real = rt.store
    counting = CountingStore(real)
    rt.store = counting  # pyright: ignore[reportAttributeAccessIssue]
    try:
        first = CallRequest(
            session_id=begin.session_id, message_id=result.message_id, call=result.calls[0], model=MODEL
        )
        outcome = await call(acts, first)
        again = await call(acts, first, attempt=2)  # a settled part, found by its message, is the answer
        await env().run(
            activities.close_step, CloseRequest(session_id=begin.session_id, message_id=result.message_id)
        )
    finally:
        rt.store = real
    assert counting.whole_sessions == 0
    assert (outcome.status, outcome.content) == ("completed", "fast 1") and again == outcome
    [done, closed] = await parts(rt, begin.session_id, result.message_id)
    assert done.state == "completed"
    assert (closed.state, closed.error, closed.error_kind) == ("error", ABORTED_ERROR, "aborted")

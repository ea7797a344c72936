"""The activities' decisions on a later attempt, run with the SDK's ``ActivityEnvironment`` on a real runtime and
store: the attempt number and the heartbeat details are what a dead worker leaves behind."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from tether import Runtime
from tether.errors import NotFoundError
from tether.session import AssistantInfo, ToolPart
from tether.session.internal import ABORTED_ERROR, INTERRUPTED_ERROR
from tether.temporal._activities import TurnActivities
from tether.temporal._types import BeginRequest, CallRequest, CloseRequest, StepRequest, StepResult, TurnInput

from .support import CONFIG, MODEL, model, tools

pytestmark = pytest.mark.anyio


def env(attempt: int = 1, details: list[Any] | None = None) -> ActivityEnvironment:
    found = ActivityEnvironment()
    found.info = dataclasses.replace(found.info, attempt=attempt, heartbeat_details=details or [])
    return found


@pytest.fixture
async def acts(tmp_path: Path) -> AsyncIterator[tuple[Runtime, TurnActivities]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    async with Runtime(data_dir=tmp_path / "data", plugins=False, config=CONFIG) as rt:
        rt.tools.register(tools(marks))
        yield rt, TurnActivities(rt, {MODEL: model()}, roots=[tmp_path])


async def step(
    acts: TurnActivities, tmp_path: Path, calls: list[Any], *, details: list[Any] | None = None
) -> Any:
    begin = await env().run(
        acts.begin_turn,
        BeginRequest(turn=TurnInput(prompt=json.dumps(calls), model=MODEL, directory=str(tmp_path))),
    )
    result: StepResult = await env(details=details).run(acts.model_step, step_request(begin))
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


async def parts(rt: Runtime, session_id: str, message_id: str) -> list[ToolPart]:
    messages = await rt.store.load_messages(session_id)
    return [p for m in messages if m.info.id == message_id for p in m.parts if isinstance(p, ToolPart)]


async def test_a_running_call_found_on_a_second_attempt_is_interrupted_not_run(
    acts: tuple[Runtime, TurnActivities], tmp_path: Path
) -> None:
    rt, activities = acts
    begin, result = await step(activities, tmp_path, [["slow", {}]])
    spec = result.calls[0]
    request = CallRequest(session_id=begin.session_id, message_id=result.message_id, call=spec, model=MODEL)
    outcome = await env(attempt=2).run(activities.all()[2], request)
    assert (outcome.status, outcome.error, outcome.error_kind) == ("error", INTERRUPTED_ERROR, "interrupted")
    assert not (tmp_path / "marks" / "slow-started").exists()
    [part] = await parts(rt, begin.session_id, result.message_id)
    assert (part.state, part.interrupted) == ("error", True)
    again = await env(attempt=3).run(activities.all()[2], request)  # settled: returned as it is
    assert again == outcome


async def test_an_idempotent_running_call_runs_again_on_a_second_attempt(
    acts: tuple[Runtime, TurnActivities], tmp_path: Path
) -> None:
    _, activities = acts
    (tmp_path / "marks" / "release").touch()
    begin, result = await step(activities, tmp_path, [["lookup", {}]])
    request = CallRequest(
        session_id=begin.session_id, message_id=result.message_id, call=result.calls[0], model=MODEL
    )
    outcome = await env(attempt=2).run(activities.all()[2], request)
    assert (outcome.status, outcome.content) == ("completed", "lookup done")


async def test_a_model_step_after_a_dead_attempt_closes_that_attempt_s_message(
    acts: tuple[Runtime, TurnActivities], tmp_path: Path
) -> None:
    rt, activities = acts
    begin, first = await step(activities, tmp_path, [["slow", {}]])
    second = await env(attempt=2, details=[first.message_id]).run(activities.model_step, step_request(begin))
    assert second.message_id != first.message_id
    [closed] = await parts(rt, begin.session_id, first.message_id)
    assert (closed.state, closed.error, closed.interrupted) == ("error", ABORTED_ERROR, True)


async def test_closing_nothing_and_a_missing_part_are_handled(
    acts: tuple[Runtime, TurnActivities], tmp_path: Path
) -> None:
    rt, activities = acts
    begin, result = await step(activities, tmp_path, [["fast", {"n": 1}]])
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

"""The other paths of a Temporal turn: questions, provider errors and retries, calls that never run, a continued
session, and the client's errors."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.errors import NotFoundError, ProviderError, ProviderRateLimitError, TetherError, UsageError
from tether.llm import ModelRequest, ToolMessage
from tether.session import Question, QuestionOption, ToolPart
from tether.temporal import TemporalRunner, connect, submit_turn
from tether.testing import FunctionModel, Step, incomplete_call, invalid_call, tool_call
from tether.tools import Tool, ToolContext

from .conftest import Turns
from .support import MODEL, wait_for

pytestmark = pytest.mark.anyio


def ask_colour(rt: Runtime) -> dict[str, Tool[Any, Any]]:
    async def colour(value: dict[str, Any], ctx: ToolContext) -> str:
        answers = await rt.questions.ask(
            session_id=ctx.session_id,
            agent=ctx.agent,
            message_id=ctx.message_id,
            call_id=ctx.call_id,
            questions=[
                Question(
                    question="Which colour?",
                    header="Colour",
                    options=(QuestionOption(label="blue"), QuestionOption(label="red")),
                )
            ],
        )
        return "chose " + ",".join(answers[0])

    return {"colour": Tool(description="Asks a question", input={"type": "object"}, execute=colour)}


@pytest.mark.parametrize(
    ("answers", "text", "stop"),
    [([["blue"]], "done: colour=chose blue", "done"), (None, "", "declined")],
    ids=["answered", "dismissed"],
)
async def test_a_question_waits_in_the_workflow_and_its_answers_reach_the_tool(
    turns: Turns, answers: list[list[str]] | None, text: str, stop: str
) -> None:
    async with turns.worker(extra=ask_colour):
        handle = await turns.submit([["colour", {}]])
        ask = await wait_for(handle, "ask")
        assert ask["kind"] == "question"
        with pytest.raises(UsageError, match="one list of answers per question"):
            await handle.answer(ask["id"], answers=[["blue"], ["red"]])
        await handle.answer(ask["id"], "once" if answers else "reject", answers=answers)
        with anyio.fail_after(60):
            result = await handle.result()
    assert result.stop == stop
    if text:
        assert result.text == text


async def test_a_question_with_no_one_to_answer_fails_at_once_and_the_model_goes_on(turns: Turns) -> None:
    from tether.session._questions import NO_ANSWERER

    async with turns.worker(extra=ask_colour) as rt:
        handle = await turns.submit([["colour", {}]], answers_questions=False)
        with anyio.fail_after(60):
            result = await handle.result()
        assert await handle.asks() == []
        assert result.stop == "done"
        assert result.text == f"done: colour=error:{NO_ANSWERER}"
        assert [e.kind for e in [e async for e in handle.events()]].count("ask") == 0
        messages = await rt.store.load_messages(result.session_id)
    part = next(p for m in messages for p in m.parts if isinstance(p, ToolPart))
    # the part an in-process run writes (tests/builtins/test_question.py)
    assert (part.state, part.error_kind, part.error) == ("error", "tool", NO_ANSWERER)


def flaky(fails: list[ProviderError]) -> FunctionModel:
    """Raises each error of ``fails`` in turn at its first requests, then answers."""

    def step(request: ModelRequest) -> Step:
        if fails:
            raise fails.pop(0)
        return Step("fine")

    return FunctionModel(step)


async def test_a_retryable_provider_error_is_retried_after_a_durable_timer(turns: Turns) -> None:
    model = flaky([ProviderRateLimitError("slow down", retry_after=0.05)])
    async with turns.worker(models={"flaky": model}) as rt:
        handle = await turns.submit("hi", model="flaky")
        with anyio.fail_after(60):
            result = await handle.result()
        kinds = [event.kind async for event in handle.events()]
        assert result.text == "fine"
        assert result.steps == 1
        assert "retry" in kinds
        messages = await rt.store.load_messages(result.session_id)
        errors = [m.info.error for m in messages if m.info.role == "assistant"]  # type: ignore[union-attr]
        assert errors[0] is not None and errors[0].kind == "provider"
        assert errors[1] is None


async def test_a_final_provider_error_fails_the_turn_as_a_provider_error(turns: Turns) -> None:
    model = flaky([ProviderError("the model is gone")])
    async with turns.worker(models={"gone": model}):
        handle = await turns.submit("hi", model="gone")
        with anyio.fail_after(60), pytest.raises(ProviderError, match="the model is gone"):
            await handle.result()


def broken_calls(request: ModelRequest) -> Step:
    if isinstance(request.messages[-1], ToolMessage):
        return Step("seen")
    return Step(
        tool_call("fast", {"n": 1}, id=f"call_{uuid.uuid4().hex[:12]}"),
        invalid_call("fast", "{not json", id=f"call_{uuid.uuid4().hex[:12]}"),
        incomplete_call("fast", id=f"call_{uuid.uuid4().hex[:12]}"),
    )


async def test_calls_that_can_never_run_are_settled_by_the_step_itself(turns: Turns) -> None:
    async with turns.worker(models={"broken": FunctionModel(broken_calls)}) as rt:
        handle = await turns.submit("go", model="broken")
        with anyio.fail_after(60):
            result = await handle.result()
        parts = [
            p
            for m in await rt.store.load_messages(result.session_id)
            for p in m.parts
            if isinstance(p, ToolPart)
        ]
    assert result.tool_calls == 3
    assert sorted(c.error_kind or "ok" for c in result.calls) == ["invalid_input", "invalid_input", "ok"]
    assert sorted(p.state for p in parts) == ["completed", "error", "error"]
    assert (turns.marks / "fast").read_text() == "1\n"  # only the valid call ran


async def test_a_second_turn_continues_the_session_and_the_runner_api_runs_it(turns: Turns) -> None:
    runner = await TemporalRunner.connect(turns.target, task_queue=turns.queue, data_dir=turns.data)
    async with turns.worker() as rt:
        first = await runner.run(json.dumps([["fast", {"n": 1}]]), model=MODEL, directory=turns.directory)
        handle = await runner.submit(
            json.dumps([["fast", {"n": 2}]]),
            model=MODEL,
            directory=turns.directory,
            session_id=first.session_id,
        )
        again = runner.turn(handle.workflow_id)
        with anyio.fail_after(60):
            second = await again.result()
        assert await again.session_id() == first.session_id
        assert second.session_id == first.session_id
        messages = await rt.store.load_messages(first.session_id)
        assert [m.info.role for m in messages] == ["user", "assistant", "assistant"] * 2
        info = await rt.store.get_session(first.session_id)
        assert info.title == '[["fast", {"n": 1}]]'


async def test_client_errors_are_tether_errors(temporal_server: str, tmp_path: Path) -> None:
    queue = f"q-{uuid.uuid4().hex}"
    with pytest.raises(UsageError, match="give the Temporal server as HOST:PORT"):
        await connect("127.0.0.1")
    with pytest.raises(UsageError, match="Cannot reach the Temporal server"):
        await connect("127.0.0.1:1")
    client = await connect(temporal_server, data_dir=tmp_path)
    with pytest.raises(UsageError, match="non-empty prompt"):
        await submit_turn(client, "", model=MODEL)
    with pytest.raises(UsageError, match="heartbeat_timeout"):
        await submit_turn(client, "hi", model=MODEL, heartbeat_timeout=0)
    runner = TemporalRunner(client)
    with pytest.raises(NotFoundError, match="No turn tether-turn-nope"):
        await runner.turn("tether-turn-nope").asks()
    with pytest.raises(NotFoundError, match="No turn tether-turn-nope"):  # not the SDK's RPCError
        await runner.turn("tether-turn-nope").cancel()
    # a turn no worker serves: it waits safely, but nothing can read it until one polls
    handle = await submit_turn(client, "hi", model=MODEL, directory=tmp_path, task_queue=queue)
    with pytest.raises(TetherError, match="cannot be read now"):
        await handle.asks()
    await handle.cancel()

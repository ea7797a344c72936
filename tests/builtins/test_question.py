"""The question tool and the question service, through a real Runtime: asked on the bus, answered through
``rt.questions`` (as permission requests are through ``rt.permissions``), recorded on the call's part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.bus import Bus
from tether.errors import NotFoundError, ToolFailure, UsageError
from tether.session import Question, QuestionAsked, QuestionOption, QuestionReplied, QuestionService, ToolPart
from tether.session._questions import NO_ANSWERER
from tether.testing import ScriptedModel, tool_call

pytestmark = pytest.mark.anyio

COLOR = {
    "question": "Which color should the button be?",
    "header": "Color",
    "options": [{"label": "Blue", "description": "calm"}, {"label": "Red", "description": "loud"}],
}
EXTRAS = {
    "question": "Which extras?",
    "header": "Extras",
    "options": [{"label": "Icon", "description": ""}, {"label": "Tooltip", "description": ""}],
    "multiple": True,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def tool_parts(session: Any) -> list[ToolPart]:
    return [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]


async def test_questions_are_asked_on_the_bus_and_the_answers_are_content_and_metadata(
    tmp_path: Path, project: Path
) -> None:
    model = ScriptedModel([[tool_call("question", {"questions": [COLOR, EXTRAS]}, id="q1")], "thanks"])
    asked: list[QuestionAsked] = []
    replied: list[QuestionReplied] = []
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)

        def answer(event: QuestionAsked) -> None:
            asked.append(event)
            tg.start_soon(rt.questions.reply, event.request.id, [["Red"], ["Icon", "a custom tooltip text"]])

        with (
            rt.bus.subscribe(QuestionAsked, answer),
            rt.bus.subscribe(QuestionReplied, replied.append),
            model,
            anyio.fail_after(10),
        ):
            async with anyio.create_task_group() as tg:
                result = await session.prompt("ask me", model=model)
        assert result.stop == "done" and result.text == "thanks"
        (event,) = asked
        pending = event.request
        assert pending.id.startswith("que_") and pending.session_id == session.id and pending.agent == "build"
        assert pending.call_id == "q1"
        assert pending.questions[1] == Question(
            question="Which extras?",
            header="Extras",
            options=(QuestionOption(label="Icon"), QuestionOption(label="Tooltip")),
            multiple=True,
        )
        assert replied[0].answers == (("Red",), ("Icon", "a custom tooltip text"))
        (part,) = await tool_parts(session)
        assert part.state == "completed" and part.title == "Asked 2 questions"
        assert part.content[0].text == (  # type: ignore[union-attr]
            'User has answered your questions: "Which color should the button be?"="Red", '
            '"Which extras?"="Icon, a custom tooltip text". You can now continue with the user\'s answers in mind.'
        )
        assert part.metadata["answers"] == [["Red"], ["Icon", "a custom tooltip text"]]
        assert rt.questions.pending() == []


async def test_with_no_one_to_answer_the_call_fails_at_once_and_the_turn_goes_on(
    tmp_path: Path, project: Path
) -> None:
    model = ScriptedModel([[tool_call("question", {"questions": [COLOR]})], "I chose blue myself"])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)
        seen: list[Any] = []
        with rt.bus.subscribe("*", seen.append), model, anyio.fail_after(10):  # a watcher is no answerer
            result = await session.prompt("ask me", model=model)
        assert result.text == "I chose blue myself"
        (part,) = await tool_parts(session)
        assert part.state == "error" and part.error_kind == "tool" and part.error == NO_ANSWERER
        assert "proceed with your best judgement" in NO_ANSWERER
        assert not any(isinstance(e, QuestionAsked) for e in seen)


async def test_a_dismissed_question_stops_the_turn(tmp_path: Path, project: Path) -> None:
    model = ScriptedModel([[tool_call("question", {"questions": [COLOR]})]])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)

        def dismiss(event: QuestionAsked) -> None:
            tg.start_soon(rt.questions.reject, event.request.id)

        with rt.bus.subscribe(QuestionAsked, dismiss), model, anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                result = await session.prompt("ask me", model=model)
        assert result.stop == "declined"
        (part,) = await tool_parts(session)
        assert part.error_kind == "declined"  # settle words every decline the same way (DECLINED_ERROR)


async def test_subagents_cannot_ask_questions(tmp_path: Path, project: Path) -> None:
    model = ScriptedModel([[tool_call("question", {"questions": [COLOR]})], "ok"])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, agent="general")
        with rt.bus.subscribe(QuestionAsked, lambda event: None), model, anyio.fail_after(10):
            await session.prompt("ask me", model=model)
        (part,) = await tool_parts(session)
        # hidden from general's catalog (question: deny), so the call names a tool it was never offered
        assert part.state == "error" and "question" in (part.error or "")
        assert rt.questions.pending() == []


async def test_the_model_gets_a_fixable_error_for_malformed_questions(tmp_path: Path, project: Path) -> None:
    too_many = {"questions": [COLOR] * 11}
    model = ScriptedModel(
        [
            [
                tool_call("question", {"questions": []}, id="empty"),
                tool_call("question", too_many, id="many"),
                tool_call("question", {"questions": [{"header": "x", "options": []}]}, id="noquestion"),
            ],
            "ok",
        ]
    )
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project)
        with rt.bus.subscribe(QuestionAsked, lambda event: None), model, anyio.fail_after(10):
            await session.prompt("ask me", model=model)
        for part in await tool_parts(session):
            assert part.state == "error" and part.error_kind == "invalid_input", part.call_id
            assert "questions" in (part.error or "")
        assert rt.questions.pending() == []


def pending_question(service: QuestionService, *questions: Question) -> Any:
    return service.ask(
        session_id="ses_x", agent="build", message_id="msg_x", call_id="c", questions=questions
    )


async def test_replies_that_do_not_fit_the_questions_are_refused_and_stay_pending() -> None:
    bus = Bus()
    service = QuestionService(bus=bus)
    single = Question(question="One?", header="One", options=(QuestionOption(label="A"),))
    several = Question(question="Many?", header="Many", multiple=True)
    got: list[Any] = []
    with bus.subscribe(QuestionAsked, got.append), anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                got.append(await pending_question(service, single, several))

            tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            request_id = got[0].request.id
            attacks: list[Any] = [
                [["A"]],  # one list for two questions
                [["A"], ["x"], ["y"]],
                "A",
                [["A", "B"], []],  # two answers to a single-choice question
                [[1], []],
                [["A"], "xy"],
            ]
            for attack in attacks:
                with pytest.raises(UsageError):
                    await service.reply(request_id, attack)
                assert [p.id for p in service.pending()] == [request_id]
            with pytest.raises(NotFoundError):
                await service.reply("que_nope", [["A"], []])
            await service.reply(request_id, [["  my own answer  "], ["x" * 50_000, "  ", "y"]])
    answers = got[1]
    assert answers[0] == ("my own answer",)
    assert len(answers[1][0]) == 10_000 and answers[1][1] == "y"  # capped, blanks dropped
    with pytest.raises(NotFoundError):
        await service.reply(request_id, [["A"], []])  # answered once only


async def test_a_cancelled_wait_withdraws_the_question_and_closing_fails_waiters() -> None:
    bus = Bus()
    service = QuestionService(bus=bus)
    question = Question(question="Q?", header="Q")
    with bus.subscribe(QuestionAsked, lambda event: None), anyio.fail_after(5):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(pending_question, service, question)
                await anyio.wait_all_tasks_blocked()
                assert len(service.pending()) == 1
                scope.cancel()
        assert service.pending() == []

        failures: list[BaseException] = []

        async def ask() -> None:
            try:
                await pending_question(service, question)
            except ToolFailure as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            await service.close()
    assert [str(f) for f in failures] == [NO_ANSWERER]
    with pytest.raises(ToolFailure):
        await pending_question(service, question)  # closed: fails at once

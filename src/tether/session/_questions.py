"""Structured questions for a person: the question service (ask, wait, answer) and its bus events.

The ``question`` tool asks through :class:`QuestionService`: :meth:`~QuestionService.ask` publishes
:class:`QuestionAsked` and waits, without a deadline, until someone calls :meth:`~QuestionService.reply` (one list of
chosen labels, or free text, per question) or :meth:`~QuestionService.reject`. It is the same channel as permission
requests: whoever answers ``PermissionAsked`` (the CLI's approval prompt, an embedding app) answers ``QuestionAsked``
the same way, on the same bus.

Someone must be there to answer: an answerer subscribes to :class:`QuestionAsked` by its class (``bus.subscribe(
QuestionAsked, ...)``; a ``"*"`` watcher such as a JSON log does not count). With no such subscriber the question
fails at once with :data:`NO_ANSWERER` (the model goes on with its best judgement) instead of waiting forever: a
non-interactive run never hangs on a question. ``reject`` is the person dismissing the question: like a permission
reject without feedback it stops the turn (:class:`~tether.errors.DeclinedError`), as OpenCode does.

This module knows nothing about the tool's input schema (``builtins/question.py``) or any front end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from .. import ids
from .._record import record
from ..bus import Bus
from ..errors import DeclinedError, NotFoundError, ToolFailure, UsageError

if TYPE_CHECKING:
    from ..tools import ToolContext

__all__ = [
    "DISMISSED",
    "NO_ANSWERER",
    "PendingQuestion",
    "Question",
    "QuestionAsked",
    "QuestionOption",
    "QuestionReplied",
    "QuestionService",
]

NO_ANSWERER = (
    "No one can answer questions in this run (it runs without a person to ask: no terminal, or the application "
    "does not answer questions). Do not ask again; proceed with your best judgement and state the assumptions you "
    "made in your answer."
)
DISMISSED = "The user dismissed this question."
MAX_ANSWER_CHARS = 10_000
"""The longest answer text kept (a person's free text, or an application's reply)."""


@record
class QuestionOption:
    """One choice: its ``label`` (what the answer holds) and a ``description`` of what it means."""

    label: str
    description: str = ""


@record
class Question:
    """One question: the full ``question`` text, a short ``header``, its ``options`` and whether several may be chosen.

    A person may always answer with their own text instead of an option ("Other").
    """

    question: str
    header: str
    options: tuple[QuestionOption, ...] = ()
    multiple: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "header": self.header,
            "options": [{"label": o.label, "description": o.description} for o in self.options],
            "multiple": self.multiple,
        }


Answers = tuple[tuple[str, ...], ...]
"""One tuple of answers per question, in order (labels of options, or free text); empty: unanswered."""


@record
class PendingQuestion:
    """Questions waiting for a person: the ``que_`` id, who asks (session, agent, tool call) and the questions."""

    id: str
    session_id: str
    agent: str
    message_id: str
    call_id: str
    questions: tuple[Question, ...]

    def to_json(self) -> dict[str, Any]:
        """The wire form (for the JSON event stream and an HTTP API)."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "agent": self.agent,
            "message_id": self.message_id,
            "call_id": self.call_id,
            "questions": [q.to_json() for q in self.questions],
        }


@record
class QuestionAsked:
    """Questions wait for an answer (``question.asked``): answer with ``QuestionService.reply`` or ``reject``."""

    type: ClassVar[str] = "question.asked"
    request: PendingQuestion


@record
class QuestionReplied:
    """Pending questions were answered (``answers``) or dismissed (``answers is None``): ``question.replied``."""

    type: ClassVar[str] = "question.replied"
    session_id: str
    request_id: str
    answers: Answers | None


class _Entry:
    __slots__ = ("answers", "done", "pending", "unanswerable")

    def __init__(self, pending: PendingQuestion) -> None:
        self.pending = pending
        self.done = anyio.Event()
        self.answers: Answers | None = None
        self.unanswerable = False


def _checked_answers(pending: PendingQuestion, answers: Sequence[Sequence[str]]) -> Answers:
    """``answers`` as stored: one tuple per question, each answer a stripped non-empty string, capped in length.

    Raises:
        UsageError: not one list of strings per question, or several answers to a single-choice question.
    """
    questions = pending.questions
    if isinstance(answers, str | bytes) or len(answers) != len(questions):
        raise UsageError(
            f"Answer {pending.id} with one list of answers per question ({len(questions)} lists, in order)"
        )
    out: list[tuple[str, ...]] = []
    for n, (question, given) in enumerate(zip(questions, answers, strict=True), start=1):
        if isinstance(given, str | bytes) or not all(isinstance(a, str) for a in given):
            raise UsageError(f"The answers to question {n} must be a list of strings (labels or free text)")
        kept = tuple(a.strip()[:MAX_ANSWER_CHARS] for a in given if a.strip())
        if len(kept) > 1 and not question.multiple:
            raise UsageError(f"Question {n} takes one answer (multiple is false); got {len(kept)}")
        out.append(kept)
    return tuple(out)


class QuestionService:
    """Holds asked questions until a person answers them (see the module docstring).

    Args:
        bus: where ``question.asked`` and ``question.replied`` are published, and where answerers subscribe.
    """

    def __init__(self, *, bus: Bus) -> None:
        self._bus = bus
        self._entries: dict[str, _Entry] = {}
        self._closed = False

    @property
    def answerable(self) -> bool:
        """Whether someone answers questions now: a subscriber to :class:`QuestionAsked` (by class), service open."""
        return not self._closed and self._bus.subscribed(QuestionAsked)

    async def ask_for_call(self, ctx: ToolContext, questions: Sequence[Question]) -> Answers:
        """:meth:`ask` on behalf of the tool call ``ctx`` (its session, agent, message and call): the ``question``
        tool's way to a person (``builtins.question.AskQuestions``).

        Raises:
            ToolFailure: as :meth:`ask`.
            DeclinedError: as :meth:`ask`.
            UsageError: as :meth:`ask`.
        """
        return await self.ask(
            session_id=ctx.session_id,
            agent=ctx.agent,
            message_id=ctx.message_id,
            call_id=ctx.call_id,
            questions=questions,
        )

    async def ask(
        self,
        *,
        session_id: str,
        agent: str,
        message_id: str,
        call_id: str,
        questions: Sequence[Question],
    ) -> Answers:
        """Publish ``question.asked`` and wait (no deadline) for the answers; cancelling the wait withdraws it.

        Raises:
            ToolFailure: no one can answer (:data:`NO_ANSWERER`), or the service closed while waiting.
            DeclinedError: the person dismissed the questions (the turn stops, as after a permission reject).
            UsageError: no questions.
        """
        if not questions:
            raise UsageError("ask() needs at least one question")
        if not self.answerable:
            raise ToolFailure(NO_ANSWERER)
        pending = PendingQuestion(
            id=ids.ascending("que"),
            session_id=session_id,
            agent=agent,
            message_id=message_id,
            call_id=call_id,
            questions=tuple(questions),
        )
        entry = self._entries[pending.id] = _Entry(pending)
        try:
            self._bus.publish(QuestionAsked(request=pending))
            await entry.done.wait()
        finally:
            self._entries.pop(pending.id, None)
        if entry.answers is None:
            if self._closed or entry.unanswerable:
                raise ToolFailure(NO_ANSWERER)
            raise DeclinedError(DISMISSED)
        return entry.answers

    async def reply(self, request_id: str, answers: Sequence[Sequence[str]]) -> None:
        """Answer pending questions: one list of answers per question (chosen labels, or the person's own text).

        Raises:
            NotFoundError: no pending questions have this id (answered already, or their call was cancelled).
            UsageError: the answers do not fit the questions (see :class:`Question`); they stay pending.
        """
        entry = self._entries.get(request_id)
        if entry is None:
            raise NotFoundError(f"No pending question {request_id}")
        checked = _checked_answers(entry.pending, answers)
        del self._entries[request_id]
        entry.answers = checked
        entry.done.set()
        self._bus.publish(
            QuestionReplied(session_id=entry.pending.session_id, request_id=request_id, answers=checked)
        )

    async def reject(self, request_id: str) -> None:
        """Dismiss pending questions: the call fails with :data:`DISMISSED` and the turn stops.

        Raises:
            NotFoundError: no pending questions have this id.
        """
        entry = self._entries.pop(request_id, None)
        if entry is None:
            raise NotFoundError(f"No pending question {request_id}")
        entry.done.set()
        self._bus.publish(
            QuestionReplied(session_id=entry.pending.session_id, request_id=request_id, answers=None)
        )

    async def unanswerable(self, request_id: str) -> None:
        """Fail pending questions with :data:`NO_ANSWERER`, as if no one had subscribed: the answerer that received
        them has no person to ask (a durable turn submitted without a terminal). The model goes on.

        Raises:
            NotFoundError: no pending questions have this id.
        """
        entry = self._entries.pop(request_id, None)
        if entry is None:
            raise NotFoundError(f"No pending question {request_id}")
        entry.unanswerable = True
        entry.done.set()

    def pending(self, session_id: str | None = None) -> list[PendingQuestion]:
        """The pending questions, oldest first, of one session or of all sessions."""
        return [
            e.pending
            for e in self._entries.values()
            if session_id is None or e.pending.session_id == session_id
        ]

    async def close(self) -> None:
        """Fail every waiting question with :data:`NO_ANSWERER`; afterwards questions fail at once."""
        self._closed = True
        for entry in list(self._entries.values()):
            del self._entries[entry.pending.id]
            entry.done.set()

"""The ``question`` tool: ask the person structured questions (options, multiple choice, their own text) and wait.

Shape as OpenCode's: ``questions: [{question, header, options: [{label, description}], multiple}]``; a person may
always type their own answer ("Other"). Order: ask the ``question`` permission (default: allowed for ``build`` and
``plan``, denied for every other agent, so subagents cannot ask) → the question service publishes the questions on
the bus and waits, with no deadline, for whoever answers permission requests (the CLI's prompt, an application) →
the answers are the content (OpenCode's sentence) and the metadata (durable on the call's part).

With no one to answer (no terminal, ``--yes``, an application that does not answer questions) the call fails at once
with a message telling the model to go on with its best judgement. A dismissed question stops the turn, as a
permission reject does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..permissions import PermissionRequest
from ..session import Question, QuestionOption
from ..session.internal import Answers
from ..tools import Tool, ToolContext, ToolResponse
from ._deps import AskQuestions, BuiltinDeps
from ._schemas import committed_codec

__all__ = ["AskQuestions", "QuestionInput", "QuestionOutput", "QuestionsInput", "make"]

MAX_QUESTIONS = 10
MAX_OPTIONS = 20

DESCRIPTION = """Ask the user questions when you need their input to go on: a preference, a decision between \
approaches, requirements that are unclear, or what to do next.

- Each question has the full `question` text, a short `header` (a few words, at most 30 characters), and `options` \
(each a short `label` and a `description` of what choosing it means). Set `multiple: true` to let the user pick \
several.
- The user can always answer with their own text instead of an option; do not add an "Other" option.
- If you recommend an option, put it first and add "(Recommended)" to its label.
- Ask only what you cannot find out yourself; group related questions in one call.
- Answers come back as the labels the user chose (or their text), one per question, in order."""


class QuestionOptionInput(BaseModel):
    """One option the user can choose."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    label: str = Field(min_length=1, max_length=200, description="The option's text (1-5 words, concise)")
    description: str = Field(default="", max_length=2000, description="What choosing this option means")


class QuestionInput(BaseModel):
    """One question."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    question: str = Field(min_length=1, max_length=4000, description="The complete question")
    header: str = Field(
        max_length=200, description="A very short label for the question (at most 30 characters)"
    )
    options: list[QuestionOptionInput] = Field(
        default_factory=list[QuestionOptionInput], max_length=MAX_OPTIONS, description="The available choices"
    )
    multiple: bool = Field(default=False, description="Allow selecting several options")


class QuestionsInput(BaseModel):
    """Input of the question tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    questions: list[QuestionInput] = Field(
        min_length=1, max_length=MAX_QUESTIONS, description="The questions to ask (answered together)"
    )


class QuestionOutput(BaseModel):
    """The answers: one list per question, in order (labels the user chose, or their own text; empty: unanswered)."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    answers: list[list[str]]


def answers_text(questions: Sequence[Question], answers: Answers) -> str:
    """OpenCode's sentence: ``User has answered your questions: "Q1"="A, B", "Q2"="Unanswered". ...``."""
    pairs = ", ".join(
        f'"{q.question}"="{", ".join(a) if a else "Unanswered"}"'
        for q, a in zip(questions, answers, strict=True)
    )
    return f"User has answered your questions: {pairs}. You can now continue with the user's answers in mind."


def make(deps: BuiltinDeps) -> Tool[QuestionsInput, QuestionOutput] | None:
    """Build the question tool (permission action ``question``), or ``None`` when ``deps`` has no question service."""
    if deps.questions is None:
        return None
    # No deadline: a person takes the time they need (cancelling the turn still ends the wait).
    return Tool(
        description=DESCRIPTION,
        input=committed_codec(QuestionsInput),
        output=committed_codec(QuestionOutput),
        execute=executor(deps),
        timeout=None,
    )


def executor(
    deps: BuiltinDeps,
) -> Callable[[QuestionsInput, ToolContext], Awaitable[ToolResponse[QuestionOutput]]]:
    """What a call of the question tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``).

    Raises:
        ValueError: ``deps`` has no question service.
    """
    permissions = deps.permissions
    ask = deps.questions
    if ask is None:
        raise ValueError("the question tool needs the runtime's question service (BuiltinDeps.questions)")

    async def execute(input: QuestionsInput, ctx: ToolContext) -> ToolResponse[QuestionOutput]:
        await permissions.assert_(
            PermissionRequest.from_context(
                ctx,
                action="question",
                resources=["*"],
                save=["*"],
                metadata={"headers": [q.header for q in input.questions]},
            )
        )
        questions = [
            Question(
                question=q.question,
                header=q.header,
                options=tuple(QuestionOption(label=o.label, description=o.description) for o in q.options),
                multiple=q.multiple,
            )
            for q in input.questions
        ]
        answers = await ask(ctx, questions)
        count = len(questions)
        return ToolResponse(
            output=QuestionOutput(answers=[list(a) for a in answers]),
            content=answers_text(questions, answers),
            metadata={"answers": [list(a) for a in answers]},
            title=f"Asked {count} question{'s' if count != 1 else ''}",
        )

    return execute

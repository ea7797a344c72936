"""What crosses Temporal: the workflow's input and result, and each activity's request and answer.

Plain dataclasses of JSON values, imported by the workflow through the sandbox's pass-through (stdlib only here, so
the sandbox has nothing to re-import). Temporal's default data converter writes them as JSON into the workflow's
history; a field added later must have a default, or histories written before it no longer decode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Answer",
    "AnswerInput",
    "AskInfo",
    "AsksQuery",
    "BeginRequest",
    "BeginResult",
    "CallOutcome",
    "CallRequest",
    "CallSpec",
    "CloseRequest",
    "HoldInput",
    "HoldRequest",
    "HoldState",
    "StepRequest",
    "StepResult",
    "TurnEvent",
    "TurnInput",
    "TurnOutput",
]

Reply = Literal["once", "always", "reject"]


@dataclass
class TurnInput:
    """One turn: the prompt for a session (``session_id``; ``None`` creates one in ``directory`` for ``agent``)."""

    prompt: str
    model: str
    directory: str
    session_id: str | None = None
    agent: str | None = None
    options: dict[str, Any] = field(default_factory=dict[str, Any])
    heartbeat_timeout: float = 30.0
    """Seconds without a heartbeat after which a call's worker counts as dead and the call moves to another."""
    answers_questions: bool = True
    """Whether the submitter answers questions; ``False`` (no terminal): a question fails at once with "no one can
    answer" and the model goes on, as in an in-process run without a person."""


@dataclass
class HoldRequest:
    """Hold the store's claim on ``session_id`` for the turn (one session, one writer) until the turn ends."""

    session_id: str


@dataclass
class HoldInput:
    """The ``hold`` update: the hold activity has the claim on ``session_id`` for the run ``run_id`` of the turn.

    Signed like every payload; naming the session and the run keeps a signed claim copied from another turn's
    history (a session's turns share one workflow id) from being sent to this one.
    """

    session_id: str
    run_id: str


@dataclass
class HoldState:
    """The ``hold_state`` query's answer: the turn waits for its claim, holds it, or is over (release it)."""

    state: Literal["waiting", "held", "ending"]


@dataclass
class AsksQuery:
    """The ``asks`` query's input: nothing to say but its signature (a query without one is refused)."""


@dataclass
class BeginRequest:
    turn: TurnInput


@dataclass
class BeginResult:
    session_id: str
    user_message_id: str
    system: list[str]
    max_steps: int


@dataclass
class StepRequest:
    session_id: str
    parent_id: str
    model: str
    step: int
    final: bool
    system: list[str]
    options: dict[str, Any]
    retry_attempt: int = 0


@dataclass
class CallSpec:
    """A call the model made that a tool activity must settle (the others were settled by the step itself)."""

    call_id: str
    name: str
    input: Any
    timeout: float | None
    idempotent: bool
    doom: bool = False
    """The third identical call in a row (same tool, same input): it asks ``doom_loop`` before it runs."""


@dataclass
class StepResult:
    message_id: str
    calls: list[CallSpec]
    settled: list[dict[str, Any]]
    """Calls the step settled itself (invalid or incomplete input: they never run), as ``TurnCall`` fields."""
    text: str
    usage: dict[str, Any] | None
    error: str | None = None
    retry_in: float | None = None
    """Seconds to wait before running the step again (a retryable provider error); ``None``: the error is final."""


@dataclass
class Answer:
    """A person's answer to one ask, matched to the ask again by ``key`` when the call re-runs."""

    key: str
    kind: Literal["permission", "question"]
    reply: Reply = "once"
    message: str | None = None
    answers: list[list[str]] | None = None
    """The question's answers; ``None`` with ``reply="reject"`` dismisses them."""


@dataclass
class AskInfo:
    """An ask a call is waiting on: ``id`` (the ``per_``/``que_`` id of its first asking), the call, the wire form."""

    id: str
    key: str
    kind: Literal["permission", "question"]
    call_id: str
    request: dict[str, Any]


@dataclass
class CallRequest:
    session_id: str
    message_id: str
    call: CallSpec
    model: str = ""
    """The turn's ``provider/model``: its catalog rules hide what the step did not advertise."""
    answers: list[Answer] = field(default_factory=list["Answer"])
    rerun: bool = False
    """The call ran before and stopped to ask: run it again even though its part is already ``running``."""
    answers_questions: bool = True
    """The turn's ``answers_questions``: ``False`` fails a question with "no one can answer" instead of waiting."""


@dataclass
class AnswerInput:
    """The ``answer`` update: ``reply`` to the ask ``ask_id``; a question takes ``answers`` (one list per question)."""

    ask_id: str
    reply: Reply = "once"
    message: str | None = None
    answers: list[list[str]] | None = None


@dataclass
class CallOutcome:
    call_id: str
    status: Literal["completed", "error", "ask"]
    content: str = ""
    error: str | None = None
    error_kind: str | None = None
    ask: AskInfo | None = None


@dataclass
class CloseRequest:
    session_id: str
    message_id: str | None


@dataclass
class TurnEvent:
    """One entry of a turn's event list (the ``events`` query): ``kind`` and what it carries."""

    kind: Literal["session", "step", "text", "call", "ask", "answer", "retry", "done"]
    data: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class TurnOutput:
    session_id: str
    stop: Literal["done", "declined", "max_steps", "cancelled"]
    steps: int
    tool_calls: int
    text: str
    usage: dict[str, Any] = field(default_factory=dict[str, Any])
    message_ids: list[str] = field(default_factory=list[str])
    calls: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

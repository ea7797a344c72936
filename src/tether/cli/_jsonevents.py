"""``tether run --format json``: the turn as a stream of JSON lines on stdout, version 1 (1.1 adds ``result``).

The schema is declared here, once: one ``TypedDict`` per event type, and :func:`events_adapter` (a pydantic adapter over
their discriminated union) validates a line; ``docs/cli.md`` ("JSON event stream, version 1") describes the same
types. Every line carries ``v`` (the schema version, :data:`VERSION`), ``type`` and ``session``. A consumer must
ignore keys and event types it does not know: later versions of the same major ``v`` only add.

:class:`JsonEvents` turns the bus's events of one session into these lines, as the live view turns them into text:
deltas of text and reasoning, a tool call's start (once its input is complete) and end (its content as the model
read it, bounded, with the retained output path), permission requests and their decisions (which rule, who), each
step's finish with its usage, the session's todo list when ``todowrite`` changes it, the ``question`` tool's
questions and their answers, and the turn's error and end (written by ``drive_turn``), then ``result``: the final
text with the totals and the cost, the last line. With ``whole=True`` (``--whole-text``) text and reasoning come
once per block, whole, when the block ends, instead of as deltas. Permission and question events
of the session's children (subagents' sessions, run by ``task``) are written too, with the child's id as ``session``:
they reach the same approval channel.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from typing import IO, Annotated, Any, Literal, cast

from pydantic import Field, TypeAdapter
from typing_extensions import TypedDict  # pydantic validates only these on Python < 3.12

from .. import _wire as wire
from ..content import text_of
from ..llm import Usage
from ..permissions import PermissionAsked, PermissionDecided, PermissionReplied
from ..records import ReasoningPart, StepFinishPart, TextPart, ToolPart
from ..rules import Rule
from ..session import PartDelta, PartUpdated, QuestionAsked, QuestionReplied, SessionUpdated
from ..store.internal import TodoUpdated

__all__ = [
    "VERSION",
    "DoneEvent",
    "ErrorEvent",
    "JsonEvent",
    "JsonEvents",
    "PermissionAskedEvent",
    "PermissionDecidedEvent",
    "QuestionAnsweredEvent",
    "QuestionAskedEvent",
    "QuestionJson",
    "QuestionOptionJson",
    "ReasoningEvent",
    "ResultEvent",
    "SessionEvent",
    "StepEvent",
    "TextEvent",
    "TodoEvent",
    "TodoJson",
    "ToolEndEvent",
    "ToolStartEvent",
    "UsageJson",
    "dumps",
    "events_adapter",
    "final_text",
    "result_event",
    "usage_json",
]

VERSION = 1
"""The schema's version: a consumer checks ``v``; a change that removes or redefines a key raises it."""


class UsageJson(TypedDict):
    """Tokens: ``input`` includes cache reads and writes, ``output`` includes reasoning."""

    input: int
    output: int
    reasoning: int
    cache_read: int
    cache_write: int


class SessionEvent(TypedDict):
    """The first line: the session the turn runs in (``continued``: an existing session)."""

    v: Literal[1]
    type: Literal["session"]
    session: str
    agent: str
    model: str
    directory: str
    continued: bool


class TextEvent(TypedDict):
    """Text the model wrote, as it arrives; ``part`` groups the deltas of one text block."""

    v: Literal[1]
    type: Literal["text"]
    session: str
    part: str
    delta: str


class ReasoningEvent(TypedDict):
    """Reasoning (thinking) text, when the provider streams it."""

    v: Literal[1]
    type: Literal["reasoning"]
    session: str
    part: str
    delta: str


class ToolStartEvent(TypedDict):
    """A tool call starts running with its complete ``input``."""

    v: Literal[1]
    type: Literal["tool_start"]
    session: str
    call: str
    tool: str
    input: Any


class ToolEndEvent(TypedDict):
    """A tool call settled.

    ``status``: ``completed``, ``declined`` (a person or a rule refused a permission) or ``failed``. ``content`` is the
    text the model reads (bounded at the one bounding boundary: a long output is a head and tail around a marker),
    ``output_paths`` the retained full outputs; ``error``/``error_kind`` say why a call did not complete.
    """

    v: Literal[1]
    type: Literal["tool_end"]
    session: str
    call: str
    tool: str
    status: Literal["completed", "failed", "declined"]
    content: str
    output_paths: list[str]
    error: str | None
    error_kind: str | None


class PermissionAskedEvent(TypedDict):
    """A tool asks for permission and waits for a reply (``request`` pairs it with its decision)."""

    v: Literal[1]
    type: Literal["permission_asked"]
    session: str
    request: str
    call: str | None
    action: str
    resources: list[str]


class PermissionDecidedEvent(TypedDict):
    """A permission decision: ``by`` ``rules`` (a rule decided without asking; ``rule`` names it), ``user`` (replied
    on the terminal), ``--yes``, ``--deny-asks`` or ``no-terminal``. ``reply`` is the reply to an asked request."""

    v: Literal[1]
    type: Literal["permission_decided"]
    session: str
    request: str | None
    call: str | None
    action: str
    resources: list[str]
    decision: Literal["allow", "deny"]
    by: str
    reply: str | None
    rule: Rule | None
    rule_source: str | None


class StepEvent(TypedDict):
    """One model call (step) finished: its 1-based ``index``, ``finish`` reason and ``usage``."""

    v: Literal[1]
    type: Literal["step"]
    session: str
    index: int
    finish: str
    usage: UsageJson


class TodoJson(TypedDict):
    """One todo item: ``status`` pending, in_progress, completed or cancelled; ``priority`` high, medium or low."""

    id: str
    content: str
    status: str
    priority: str


class TodoEvent(TypedDict):
    """The session's todo list changed (a ``todowrite`` call): the whole new list, in order."""

    v: Literal[1]
    type: Literal["todo"]
    session: str
    todos: list[TodoJson]


class QuestionOptionJson(TypedDict):
    label: str
    description: str


class QuestionJson(TypedDict):
    """One question of the ``question`` tool: ``multiple`` lets the person choose several options."""

    question: str
    header: str
    options: list[QuestionOptionJson]
    multiple: bool


class QuestionAskedEvent(TypedDict):
    """The ``question`` tool waits for a person's answers (``request`` pairs it with its answer); ``agent`` asks."""

    v: Literal[1]
    type: Literal["question_asked"]
    session: str
    request: str
    call: str
    agent: str
    questions: list[QuestionJson]


class QuestionAnsweredEvent(TypedDict):
    """Questions were answered: ``answers`` holds one list per question (chosen labels or the person's own text),
    ``null`` when the person dismissed them."""

    v: Literal[1]
    type: Literal["question_answered"]
    session: str
    request: str
    answers: list[list[str]] | None


class ErrorEvent(TypedDict):
    """The turn failed: ``kind`` (``provider``, ``store``, ...) and a one-line ``message``."""

    v: Literal[1]
    type: Literal["error"]
    session: str
    kind: str
    message: str


class DoneEvent(TypedDict):
    """The last line: how the turn stopped, its totals and the process's exit code."""

    v: Literal[1]
    type: Literal["done"]
    session: str
    stop: str
    exit_code: int
    steps: int
    calls: int
    failed_calls: int
    usage: UsageJson
    seconds: float


class ResultEvent(TypedDict):
    """The last line (1.1): the turn's final ``text`` (the text of its last step that wrote any), how it stopped, its
    totals, its ``cost`` in USD (``null``: the model's price is unknown) and its duration."""

    v: Literal[1]
    type: Literal["result"]
    session: str
    text: str
    stop: str
    exit_code: int
    error: str | None
    steps: int
    calls: int
    failed_calls: int
    usage: UsageJson
    cost: float | None
    seconds: float


JsonEvent = (
    SessionEvent
    | TextEvent
    | ReasoningEvent
    | ToolStartEvent
    | ToolEndEvent
    | PermissionAskedEvent
    | PermissionDecidedEvent
    | StepEvent
    | TodoEvent
    | QuestionAskedEvent
    | QuestionAnsweredEvent
    | ErrorEvent
    | DoneEvent
    | ResultEvent
)


@cache
def events_adapter() -> TypeAdapter[JsonEvent]:
    """Validates one parsed line against the schema (built on first use: a run that writes JSON never needs it)."""
    return TypeAdapter(Annotated[JsonEvent, Field(discriminator="type")])


def usage_json(usage: Usage | None) -> UsageJson:
    return cast(UsageJson, wire.usage_json(usage))


def dumps(event: Mapping[str, Any]) -> str:
    """One line of JSON; text UTF-8 cannot hold (a lone surrogate) is written as a ``\\u`` escape, never lost."""
    try:
        text = json.dumps(event, ensure_ascii=False, default=repr)
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(event, ensure_ascii=True, default=repr)
    except (ValueError, RecursionError) as exc:  # a tool input JSON cannot hold (a cycle): said, not raised
        return dumps({**event, "input": f"<unserializable: {type(exc).__name__}>"})
    return text


def _status(part: ToolPart) -> Literal["completed", "failed", "declined"]:
    if part.state == "completed":
        return "completed"
    return "declined" if part.error_kind in ("declined", "corrected", "blocked") else "failed"


class JsonEvents:
    """Writes the events of one session to ``out`` as JSON lines (flushed per line: a reader sees each at once).

    Args:
        session_id: events of other sessions are ignored.
        decided_by: who answers an asked request in this run (``user``, ``--yes``, ``--deny-asks``, ``no-terminal``).
        out: where the lines go (stdout).
        whole: write each text and reasoning block once, whole, when it ends (``--whole-text``), not its deltas.
    """

    def __init__(
        self, session_id: str, *, decided_by: str, out: IO[str] | None = None, whole: bool = False
    ) -> None:
        self.session_id = session_id
        self.decided_by = decided_by
        self.whole = whole
        self._out = out if out is not None else sys.stdout
        self._texts: dict[str, dict[str, str]] = {}  # message id -> its ended text blocks, by part id
        self._last_text: str | None = None  # the message that last ended a text block
        self._kinds: dict[str, Literal["text", "reasoning"]] = {}
        self._streamed: set[str] = set()
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self._asked: dict[str, dict[str, Any]] = {}
        self._family = {
            session_id
        }  # this session and its children (subagents' sessions): their asks are ours
        self.parts: dict[str, ToolPart] = {}
        self.steps = 0

    def write(self, event: Mapping[str, Any]) -> None:
        self._out.write(dumps(event) + "\n")
        self._out.flush()

    def on_event(self, event: Any) -> None:
        """The bus subscriber (``"*"``)."""
        if isinstance(event, PartDelta):
            self._delta(event)
        elif isinstance(event, PartUpdated):
            self._part(event)
        elif isinstance(event, PermissionAsked):
            self._asked_event(event)
        elif isinstance(event, PermissionReplied):
            self._replied(event)
        elif isinstance(event, PermissionDecided):
            self._decided(event)
        elif isinstance(event, TodoUpdated):
            self._todos(event)
        elif isinstance(event, QuestionAsked | QuestionReplied):
            self._question(event)
        elif isinstance(event, SessionUpdated) and event.session.parent_id in self._family:
            self._family.add(event.session.id)

    def _question(self, event: QuestionAsked | QuestionReplied) -> None:
        if isinstance(event, QuestionReplied):
            if event.session_id in self._family:
                answers = None if event.answers is None else [list(a) for a in event.answers]
                self.write(
                    {
                        "v": 1,
                        "type": "question_answered",
                        "session": event.session_id,
                        "request": event.request_id,
                        "answers": answers,
                    }
                )
            return
        pending = event.request
        if pending.session_id in self._family:
            self.write(wire.question_asked_json(pending))

    def _todos(self, event: TodoUpdated) -> None:
        if event.session_id != self.session_id:
            return
        todos: list[TodoJson] = [
            {"id": t.id, "content": t.content, "status": t.status, "priority": t.priority}
            for t in event.todos
        ]
        self.write({"v": 1, "type": "todo", "session": self.session_id, "todos": todos})

    def _delta(self, event: PartDelta) -> None:
        if event.session_id != self.session_id or self.whole:
            return
        self._streamed.add(event.part_id)
        kind = self._kinds.get(event.part_id, "text")
        self.write(
            {"v": 1, "type": kind, "session": self.session_id, "part": event.part_id, "delta": event.delta}
        )

    def _part(self, event: PartUpdated) -> None:
        part = event.part
        if part.session_id != self.session_id:
            return
        if isinstance(part, TextPart | ReasoningPart):
            kind: Literal["text", "reasoning"] = "text" if isinstance(part, TextPart) else "reasoning"
            self._kinds[part.id] = kind
            if (
                part.ended is not None
                and isinstance(part, TextPart)
                and not part.synthetic
                and part.text.strip()
            ):
                self._texts.setdefault(part.message_id, {})[part.id] = part.text
                self._last_text = part.message_id
            # a provider that sends a whole text at once (or --whole-text): the ended part is the one delta
            if part.ended is not None and part.id not in self._streamed and part.text:
                self._streamed.add(part.id)
                self.write(
                    {"v": 1, "type": kind, "session": self.session_id, "part": part.id, "delta": part.text}
                )
        elif isinstance(part, ToolPart):
            self._tool(part)
        elif isinstance(part, StepFinishPart):
            self.steps += 1
            self.write(
                {
                    "v": 1,
                    "type": "step",
                    "session": self.session_id,
                    "index": self.steps,
                    "finish": part.reason,
                    "usage": usage_json(part.usage),
                }
            )

    def _tool(self, part: ToolPart) -> None:
        if part.provider_executed:
            return
        self.parts[part.call_id] = part
        if part.state == "pending":
            return
        if part.call_id not in self._started:
            self._started.add(part.call_id)
            self.write(
                {
                    "v": 1,
                    "type": "tool_start",
                    "session": self.session_id,
                    "call": part.call_id,
                    "tool": part.tool,
                    "input": part.input,
                }
            )
        if part.settled and part.call_id not in self._ended:
            self._ended.add(part.call_id)
            self.write(
                {
                    "v": 1,
                    "type": "tool_end",
                    "session": self.session_id,
                    "call": part.call_id,
                    "tool": part.tool,
                    "status": _status(part),
                    "content": text_of(part.content, "\n"),
                    "output_paths": list(part.output_paths),
                    "error": part.error,
                    "error_kind": part.error_kind,
                }
            )

    def _asked_event(self, event: PermissionAsked) -> None:
        pending = event.request
        if pending.session_id not in self._family:
            return
        asked = wire.permission_asked_json(pending)
        self._asked[pending.id] = asked
        self.write(asked)

    def _replied(self, event: PermissionReplied) -> None:
        asked = self._asked.pop(event.request_id, None)
        if event.session_id not in self._family or asked is None:
            return
        self.write(
            {
                "v": 1,
                "type": "permission_decided",
                "session": event.session_id,
                "request": event.request_id,
                "call": asked["call"],
                "action": asked["action"],
                "resources": asked["resources"],
                "decision": "deny" if event.reply == "reject" else "allow",
                "by": self.decided_by,
                "reply": event.reply,
                "rule": None,
                "rule_source": None,
            }
        )

    def _decided(self, event: PermissionDecided) -> None:
        if event.request.session_id in self._family:
            self.write(wire.decided_json(event.request, event.decision))

    @property
    def final_text(self) -> str:
        """The text of the last step that wrote any (what ``--quiet`` prints), from the blocks seen ending."""
        if self._last_text is None:
            return ""
        return "".join(self._texts[self._last_text].values())


def result_event(outcome: Any, session_id: str, text: str) -> ResultEvent:
    """The ``result`` line of a finished turn (``outcome``: ``_turn.TurnOutcome``)."""
    return {
        "v": 1,
        "type": "result",
        "session": session_id,
        "text": text,
        "stop": outcome.stop,
        "exit_code": outcome.code,
        "error": outcome.error,
        "steps": outcome.steps,
        "calls": outcome.calls,
        "failed_calls": outcome.failed_calls,
        "usage": usage_json(outcome.usage),
        "cost": None if outcome.cost is None else round(outcome.cost, 6),
        "seconds": round(outcome.seconds, 3),
    }


def final_text(messages: Sequence[Any]) -> str:
    """The text of the turn's last assistant message that has any (what ``--quiet`` prints)."""
    from ..session import AssistantInfo

    for message in reversed(messages):
        if isinstance(message.info, AssistantInfo):
            text = "".join(p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic)
            if text.strip():
                return text
        else:  # the turn's user message: the turn wrote no text
            return ""
    return ""

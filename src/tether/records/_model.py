"""The durable data model of a session: sessions, messages and parts, and their JSON form.

Records are immutable; an update is a new record with the same id (``dataclasses.replace``). Times are milliseconds
since the epoch. A tool part moves through ``pending → running → completed | error`` (:data:`ToolState`); the
``interrupted`` flag marks calls that were aborted (cancellation) or found unfinished after a crash (recovery).

This module knows nothing about SQLite or the runner. The JSON form of a part is declared on the classes themselves
(``session_id`` and ``message_id`` are store columns, never in the JSON; optional fields are left out when unset) and
one discriminated :data:`PARTS` adapter, built here once, encodes and decodes it for every store and the HTTP API
(:data:`MESSAGES` likewise for messages).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import field, fields
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainSerializer, PlainValidator, TypeAdapter

from .._record import record
from ..errors import UsageError
from ..llm import Usage
from ..rules import EFFECTS, Rule, is_effect
from ..tools import Content
from ..tools.internal import FailureKind

__all__ = [
    "MESSAGES",
    "PARTS",
    "AssistantInfo",
    "FilePart",
    "MessageError",
    "MessageErrorKind",
    "MessageInfo",
    "Part",
    "ReasoningPart",
    "SessionInfo",
    "StepFinishPart",
    "StepStartPart",
    "TextPart",
    "ToolErrorKind",
    "ToolPart",
    "ToolState",
    "UserInfo",
    "check_session_rules",
    "message_from_json",
    "message_to_json",
    "now_ms",
    "part_from_json",
    "part_to_json",
    "part_to_plain",
    "rules_from_json",
    "rules_to_json",
    "usage_from_json",
    "usage_to_json",
]

ToolState = Literal["pending", "running", "completed", "error"]
"""``pending`` (input streaming) → ``running`` (input complete, settling) → ``completed`` | ``error``."""

ToolErrorKind = Literal[
    FailureKind,  # the call's settle failed (its outcome's kind)
    "aborted",  # the step was cancelled while the call was unsettled
    "interrupted",  # found unfinished when a store was reopened (recovery)
    "provider",  # the provider reported the call failed
]
"""Why a tool part is ``error``."""

MessageErrorKind = Literal[
    "provider",  # the provider failed (``retryable`` says whether trying again may help)
    "aborted",  # the step was cancelled
    "interrupted",  # found unfinished when a store was reopened (recovery)
    "store",  # the session store refused a write
    "error",  # any other exception ended the step
]
"""Why an assistant message failed."""


def now_ms() -> int:
    return int(time.time() * 1000)


# -- the stored form --------------------------------------------------------------------------------------------
# Declared on the fields: ``Column`` fields are store columns, not JSON; ``Omitted`` fields are left out while they
# hold their empty default, and every ``None`` is left out (``exclude_none`` in :data:`PARTS`' callers), so a row
# carries only what the part has. Usage keeps its short stored names (``input``, ``output``, ...).


def _empty(value: object) -> bool:
    return not value


Column = Annotated[str, Field(exclude=True)]
_OMIT = Field(exclude_if=_empty)


def usage_to_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    out: dict[str, Any] = {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "reasoning": usage.reasoning_tokens,
        "cache_read": usage.cache_read_tokens,
        "cache_write": usage.cache_write_tokens,
    }
    if usage.cost is not None:
        out["cost"] = usage.cost
    return out


def usage_from_json(data: Mapping[str, Any] | None) -> Usage | None:
    if data is None:
        return None
    return Usage(
        input_tokens=int(data.get("input", 0)),
        output_tokens=int(data.get("output", 0)),
        reasoning_tokens=int(data.get("reasoning", 0)),
        cache_read_tokens=int(data.get("cache_read", 0)),
        cache_write_tokens=int(data.get("cache_write", 0)),
        cost=data.get("cost"),
    )


StoredUsage = Annotated[Usage | None, PlainSerializer(usage_to_json), PlainValidator(usage_from_json)]
StoredContent = Annotated[Content, Field(discriminator="type")]


@record
class SessionInfo:
    """One session: where it runs (``project`` root, ``directory``), its agent, and extra session ``rules``.

    A child session (a subagent's, run by a ``task`` call) has ``parent_id`` (the parent session) and
    ``parent_call_id`` (the parent's tool call it runs for).

    ``rules`` are added after the agent's rules for this session only (checked by :func:`check_session_rules`).
    """

    id: str
    project: str
    directory: str
    title: str
    agent: str
    parent_id: str | None = None
    parent_call_id: str | None = None
    rules: tuple[Rule, ...] = ()
    created: int = 0
    updated: int = 0


@record
class MessageError:
    """Why an assistant message failed (:data:`MessageErrorKind`)."""

    kind: MessageErrorKind
    message: str
    retryable: bool = False


@record
class UserInfo:
    id: str
    session_id: Column
    agent: str
    created: int
    role: Literal["user"] = "user"


@record
class AssistantInfo:
    """One step's assistant message: the model, agent, usage, finish reason and error (if the step failed)."""

    id: str
    session_id: Column
    parent_id: str
    agent: str
    model: str
    created: int
    completed: int | None = None
    finish: str | None = None
    usage: StoredUsage = None
    error: MessageError | None = None
    role: Literal["assistant"] = "assistant"


MessageInfo = UserInfo | AssistantInfo

_DEFERRED = ConfigDict(defer_build=True)
"""The codecs are built on first use: a new session's run writes its parts from their fields (:func:`part_to_plain`)
and never decodes one, so start-up does not pay for building the union's (~5 ms of CPU)."""

MESSAGES: TypeAdapter[MessageInfo] = TypeAdapter(
    Annotated[MessageInfo, Field(discriminator="role")], config=_DEFERRED
)
"""The codec of stored messages, like :data:`PARTS` (``session_id`` comes from the row)."""


@record
class TextPart:
    id: str
    session_id: Column
    message_id: Column
    text: str
    started: int | None = None
    ended: int | None = None
    synthetic: Annotated[bool, _OMIT] = False
    provider_metadata: Mapping[str, Any] | None = None
    type: Literal["text"] = "text"


@record
class ReasoningPart:
    id: str
    session_id: Column
    message_id: Column
    text: str
    started: int | None = None
    ended: int | None = None
    provider_metadata: Mapping[str, Any] | None = None
    type: Literal["reasoning"] = "reasoning"


@record
class FilePart:
    """A file attached to a user message (an image, a PDF): one content part."""

    id: str
    session_id: Column
    message_id: Column
    content: StoredContent
    type: Literal["file"] = "file"


@record
class StepStartPart:
    id: str
    session_id: Column
    message_id: Column
    step: int
    final: bool = False
    type: Literal["step-start"] = "step-start"


@record
class StepFinishPart:
    id: str
    session_id: Column
    message_id: Column
    reason: str
    usage: StoredUsage = None
    type: Literal["step-finish"] = "step-finish"


@record(slots=False)  # session/_processor._evolve copies its __dict__
class ToolPart:
    """The durable record of one tool call (law 7).

    ``content`` is the model-facing result when completed, or partial content kept on error. ``permissions`` lists
    the permission decisions taken for this call (which rule decided, who replied). ``raw`` keeps the argument text
    the model sent when it was not valid JSON. ``error_kind`` says why a call is ``error`` (:data:`ToolErrorKind`).
    """

    id: str
    session_id: Column
    message_id: Column
    call_id: str
    tool: str
    state: ToolState
    input: Any = None
    raw: str | None = None
    content: Annotated[tuple[StoredContent, ...], _OMIT] = ()
    metadata: Mapping[str, Any] | None = None
    title: str | None = None
    output_paths: Annotated[tuple[str, ...], _OMIT] = ()
    started: int | None = None
    ended: int | None = None
    error: str | None = None
    error_kind: ToolErrorKind | None = None
    interrupted: Annotated[bool, _OMIT] = False
    permissions: Annotated[tuple[Mapping[str, Any], ...], _OMIT] = field(default=())
    provider_executed: Annotated[bool, _OMIT] = False
    provider_metadata: Mapping[str, Any] | None = None
    type: Literal["tool"] = "tool"

    @property
    def settled(self) -> bool:
        return self.state == "completed" or self.state == "error"


Part = TextPart | ReasoningPart | FilePart | StepStartPart | StepFinishPart | ToolPart

PARTS: TypeAdapter[Part] = TypeAdapter(Annotated[Part, Field(discriminator="type")], config=_DEFERRED)
"""The one codec of stored parts, both directions (dump with ``exclude_none=True``; ``session_id`` and
``message_id`` come from the row). Values JSON cannot hold (a set, an object in a tool's input) dump as their
``repr`` (``fallback=repr``), as they always have."""


# -- JSON ----------------------------------------------------------------------------------------------------------


def message_to_json(info: MessageInfo) -> dict[str, Any]:
    """Encode a message as a JSON object (plain Python data; ``session_id`` is a column).

    What ``MESSAGES.dump_python(info, exclude_none=True)`` returns, the same keys in the same order
    (``tests/store/test_codec.py`` pins it), written out: the two message kinds have a handful of plain fields, and a
    run's first store write no longer builds the union's codec for them (~1 % of a scripted ``tether run``'s
    instructions, issue 38). :data:`MESSAGES` still decodes.
    """
    if isinstance(info, UserInfo):
        return {"id": info.id, "agent": info.agent, "created": info.created, "role": info.role}
    out: dict[str, Any] = {
        "id": info.id,
        "parent_id": info.parent_id,
        "agent": info.agent,
        "model": info.model,
        "created": info.created,
    }
    if info.completed is not None:
        out["completed"] = info.completed
    if info.finish is not None:
        out["finish"] = info.finish
    if info.usage is not None:
        out["usage"] = usage_to_json(info.usage)
    if info.error is not None:
        error = info.error
        out["error"] = {"kind": error.kind, "message": error.message, "retryable": error.retryable}
    out["role"] = info.role
    return out


def message_from_json(session_id: str, data: Mapping[str, Any]) -> MessageInfo:
    """Decode a message written by :func:`message_to_json`.

    Raises:
        ValueError: the object is not a valid message (a ``pydantic.ValidationError`` naming the field).
    """
    return MESSAGES.validate_python({**data, "session_id": session_id})


def part_to_json(part: Part) -> dict[str, Any]:
    """Encode a part as a JSON object (``session_id`` and ``message_id`` are columns, not repeated here).

    Plain Python data, exact (sequences may be tuples; a lone surrogate stays as it is): pydantic's JSON mode would
    replace a lone surrogate in a metadata key. ``json`` encodes the result; the store escapes it (``_sqlite``).
    """
    return PARTS.dump_python(part, exclude_none=True)


# A part's JSON written out from its fields, as PARTS writes it: each field's stored form, by its annotation's text
# (the record modules use ``from __future__ import annotations``). A kind with a field of any other annotation (a
# tool part's input and content, a file part's content) has no plan: PARTS encodes it.
_SCALARS: dict[str, type[Any]] = {"str": str, "int": int, "bool": bool, "str | None": str, "int | None": int}
_SKIP, _SCALAR, _OMITTED, _USAGE, _MAPPING = range(5)
_PLANS: dict[type[Any], tuple[tuple[str, int, type[Any] | None], ...] | None] = {}


def _plan(kind: type[Any]) -> tuple[tuple[str, int, type[Any] | None], ...] | None:
    plan: list[tuple[str, int, type[Any] | None]] = []
    for f in fields(kind):
        annotation = f.type if isinstance(f.type, str) else ""
        if annotation == "Column":
            plan.append((f.name, _SKIP, None))
        elif annotation in _SCALARS:
            plan.append((f.name, _SCALAR, _SCALARS[annotation]))
        elif annotation.startswith("Literal["):  # a kind's ``type`` (a value not ``str`` goes to the codec)
            plan.append((f.name, _SCALAR, str))
        elif annotation == "Annotated[bool, _OMIT]":
            plan.append((f.name, _OMITTED, bool))
        elif annotation == "StoredUsage":
            plan.append((f.name, _USAGE, None))
        elif annotation == "Mapping[str, Any] | None":
            plan.append((f.name, _MAPPING, None))
        else:
            return None
    return tuple(plan)


def _plain(value: object, depth: int = 0) -> bool:
    """Whether ``value`` is JSON data that pydantic and ``json`` write alike: text, integers, booleans, ``None``,
    floats ``repr`` writes without an exponent, lists, tuples and dicts with text keys (not too deep)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return value == 0.0 or 1e-4 <= abs(value) < 1e16  # type: ignore[operator]
    if depth > 32:
        return False
    if kind is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())  # type: ignore[union-attr]
    if kind is list or kind is tuple:
        return all(_plain(v, depth + 1) for v in value)  # type: ignore[union-attr]
    return False


def part_to_plain(part: Part) -> dict[str, Any] | None:
    """A part's JSON object written out from its fields, or ``None`` when :data:`PARTS` must write it.

    ``json`` writes the result as ``PARTS.dump_json(part, exclude_none=True)`` does, the same keys, order and text
    (``tests/store/test_codec.py`` pins it; a field of a new kind of annotation leaves its kind to the codec), so a
    run's writes of its text and step parts build no serializer (issue 38). ``None`` for a kind with a field of
    another annotation, and for any value outside what both write alike (:func:`_plain`): a float with an exponent
    or not finite, an object, a dict with a key that is not text, a value of another type than its field's.
    """
    kind = type(part)
    if kind in _PLANS:
        plan = _PLANS[kind]
    else:
        plan = _PLANS[kind] = _plan(kind)
    if plan is None:
        return None
    out: dict[str, Any] = {}
    for name, how, scalar in plan:
        value = getattr(part, name)
        if how == _SKIP or value is None:
            continue
        if how == _SCALAR:
            if type(value) is not scalar:
                return None
        elif how == _OMITTED:
            if type(value) is not scalar:
                return None
            if not value:
                continue
        elif how == _USAGE:
            if type(value) is not Usage:
                return None
            value = usage_to_json(value)
            if not _plain(value):
                return None
        elif type(value) is not dict or not _plain(value):
            return None
        out[name] = value
    return out


def part_from_json(session_id: str, message_id: str, data: Mapping[str, Any]) -> Part:
    """Decode a part written by :func:`part_to_json` (or by :data:`PARTS`' ``dump_json``).

    Raises:
        ValueError: the object is not a valid part (a ``pydantic.ValidationError`` naming the field).
    """
    return PARTS.validate_python({**data, "session_id": session_id, "message_id": message_id})


def rules_to_json(rules: Sequence[Rule]) -> list[list[str]]:
    """The stored form of a session's rules: ``[[action, resource, effect], ...]``."""
    return [[rule.action, rule.resource, rule.effect] for rule in rules]


def rules_from_json(data: Sequence[Sequence[str]]) -> tuple[Rule, ...]:
    """Read rules stored by :func:`rules_to_json`.

    Raises:
        ValueError: an entry is not an ``[action, resource, effect]`` triple with a known effect (a damaged row).
    """
    rules: list[Rule] = []
    for item in data:
        action, resource, effect = item
        if not (isinstance(action, str) and isinstance(resource, str) and is_effect(effect)):
            raise ValueError(f"stored session rule is not [action, resource, effect]: {item!r}")
        rules.append(Rule(action, resource, effect))
    return tuple(rules)


def check_session_rules(rules: Sequence[Rule | Sequence[str]]) -> tuple[Rule, ...]:
    """Validate rules given for a session: each a :class:`~tether.permissions.Rule` or an ``(action, resource,
    effect)`` triple of strings, effect one of ``allow``, ``ask``, ``deny``.

    Raises:
        UsageError: a rule is neither (the message names it); an unknown effect is never ignored.
    """
    checked: list[Rule] = []
    for rule in rules:
        if isinstance(rule, Rule):
            items: tuple[object, ...] = (rule.action, rule.resource, rule.effect)
        else:
            items = (rule,) if isinstance(rule, str) else tuple(rule)
        if len(items) == 3:
            action, resource, effect = items
            if isinstance(action, str) and isinstance(resource, str) and is_effect(effect):
                checked.append(rule if isinstance(rule, Rule) else Rule(action, resource, effect))
                continue
        shown = rule if isinstance(rule, str | Rule) else items
        raise UsageError(
            f"Invalid session rule {shown!r}: a rule is (action, resource, effect) with string patterns and "
            f"effect one of {', '.join(EFFECTS)}"
        )
    return tuple(checked)

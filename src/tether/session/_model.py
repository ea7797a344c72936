"""The durable data model of a session: sessions, messages and parts, and their JSON form.

Records are immutable; an update is a new record with the same id (``dataclasses.replace``). Times are milliseconds
since the epoch. A tool part moves through ``pending → running → completed | error`` (:data:`ToolState`); the
``interrupted`` flag marks calls that were aborted (cancellation) or found unfinished after a crash (recovery).

This module knows nothing about SQLite or the runner; ``part_to_json`` / ``part_from_json`` are the one encoding
used by every store and by the HTTP API.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, assert_never

from ..errors import UsageError
from ..llm import Usage
from ..rules import EFFECTS, Rule, is_effect
from ..tools import Content, content_from_json, content_to_json

__all__ = [
    "AssistantInfo",
    "FilePart",
    "MessageError",
    "MessageInfo",
    "Part",
    "ReasoningPart",
    "SessionInfo",
    "StepFinishPart",
    "StepStartPart",
    "TextPart",
    "ToolPart",
    "ToolState",
    "UserInfo",
    "check_session_rules",
    "message_from_json",
    "message_to_json",
    "now_ms",
    "part_from_json",
    "part_to_json",
    "rules_from_json",
    "rules_to_json",
    "usage_from_json",
    "usage_to_json",
]

ToolState = Literal["pending", "running", "completed", "error"]
"""``pending`` (input streaming) → ``running`` (input complete, settling) → ``completed`` | ``error``."""


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionInfo:
    """One session: where it runs (``project`` root, ``directory``), its agent, and extra session ``rules``.

    ``rules`` are added after the agent's rules for this session only (checked by :func:`check_session_rules`).
    """

    id: str
    project: str
    directory: str
    title: str
    agent: str
    parent_id: str | None = None
    rules: tuple[Rule, ...] = ()
    created: int = 0
    updated: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class MessageError:
    """Why an assistant message failed: ``kind`` is ``provider``, ``aborted``, ``interrupted``, ``agent``, ``store``."""

    kind: str
    message: str
    retryable: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class UserInfo:
    id: str
    session_id: str
    agent: str
    created: int
    role: Literal["user"] = "user"


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantInfo:
    """One step's assistant message: the model, agent, usage, finish reason and error (if the step failed)."""

    id: str
    session_id: str
    parent_id: str
    agent: str
    model: str
    created: int
    completed: int | None = None
    finish: str | None = None
    usage: Usage | None = None
    error: MessageError | None = None
    role: Literal["assistant"] = "assistant"


MessageInfo = UserInfo | AssistantInfo


@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    id: str
    session_id: str
    message_id: str
    text: str
    started: int | None = None
    ended: int | None = None
    synthetic: bool = False
    provider_metadata: Mapping[str, Any] | None = None
    type: Literal["text"] = "text"


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasoningPart:
    id: str
    session_id: str
    message_id: str
    text: str
    started: int | None = None
    ended: int | None = None
    provider_metadata: Mapping[str, Any] | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, kw_only=True, slots=True)
class FilePart:
    """A file attached to a user message (an image, a PDF): one content part."""

    id: str
    session_id: str
    message_id: str
    content: Content
    type: Literal["file"] = "file"


@dataclass(frozen=True, kw_only=True, slots=True)
class StepStartPart:
    id: str
    session_id: str
    message_id: str
    step: int
    final: bool = False
    type: Literal["step-start"] = "step-start"


@dataclass(frozen=True, kw_only=True, slots=True)
class StepFinishPart:
    id: str
    session_id: str
    message_id: str
    reason: str
    usage: Usage | None = None
    type: Literal["step-finish"] = "step-finish"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolPart:
    """The durable record of one tool call (law 7).

    ``content`` is the model-facing result when completed, or partial content kept on error. ``permissions`` lists
    the permission decisions taken for this call (which rule decided, who replied). ``raw`` keeps the argument text
    the model sent when it was not valid JSON.
    """

    id: str
    session_id: str
    message_id: str
    call_id: str
    tool: str
    state: ToolState
    input: Any = None
    raw: str | None = None
    content: tuple[Content, ...] = ()
    metadata: Mapping[str, Any] | None = None
    title: str | None = None
    output_paths: tuple[str, ...] = ()
    started: int | None = None
    ended: int | None = None
    error: str | None = None
    error_kind: str | None = None
    interrupted: bool = False
    permissions: tuple[Mapping[str, Any], ...] = field(default=())
    provider_executed: bool = False
    provider_metadata: Mapping[str, Any] | None = None
    type: Literal["tool"] = "tool"

    @property
    def settled(self) -> bool:
        return self.state == "completed" or self.state == "error"


Part = TextPart | ReasoningPart | FilePart | StepStartPart | StepFinishPart | ToolPart


# -- JSON ----------------------------------------------------------------------------------------------------------


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


def message_to_json(info: MessageInfo) -> dict[str, Any]:
    if isinstance(info, UserInfo):
        return {"id": info.id, "role": "user", "agent": info.agent, "created": info.created}
    out: dict[str, Any] = {
        "id": info.id,
        "role": "assistant",
        "parent_id": info.parent_id,
        "agent": info.agent,
        "model": info.model,
        "created": info.created,
        "completed": info.completed,
        "finish": info.finish,
        "usage": usage_to_json(info.usage),
    }
    if info.error is not None:
        out["error"] = {
            "kind": info.error.kind,
            "message": info.error.message,
            "retryable": info.error.retryable,
        }
    return out


def message_from_json(session_id: str, data: Mapping[str, Any]) -> MessageInfo:
    if data["role"] == "user":
        return UserInfo(id=data["id"], session_id=session_id, agent=data["agent"], created=data["created"])
    err = data.get("error")
    return AssistantInfo(
        id=data["id"],
        session_id=session_id,
        parent_id=data["parent_id"],
        agent=data["agent"],
        model=data["model"],
        created=data["created"],
        completed=data.get("completed"),
        finish=data.get("finish"),
        usage=usage_from_json(data.get("usage")),
        error=None
        if err is None
        else MessageError(kind=err["kind"], message=err["message"], retryable=bool(err.get("retryable"))),
    )


def _pm(value: Mapping[str, Any] | None) -> Any:
    return dict(value) if value is not None else None


def part_to_json(part: Part) -> dict[str, Any]:
    """Encode a part as a JSON object (``session_id`` and ``message_id`` are columns, not repeated here)."""
    if isinstance(part, ToolPart):
        out: dict[str, Any] = {
            "id": part.id,
            "type": "tool",
            "call_id": part.call_id,
            "tool": part.tool,
            "state": part.state,
            "input": part.input,
        }
        if part.raw is not None:
            out["raw"] = part.raw
        if part.content:
            out["content"] = content_to_json(part.content)
        if part.metadata is not None:
            out["metadata"] = dict(part.metadata)
        if part.title is not None:
            out["title"] = part.title
        if part.output_paths:
            out["output_paths"] = list(part.output_paths)
        if part.started is not None:
            out["started"] = part.started
        if part.ended is not None:
            out["ended"] = part.ended
        if part.error is not None:
            out["error"] = part.error
            out["error_kind"] = part.error_kind
        if part.interrupted:
            out["interrupted"] = True
        if part.permissions:
            out["permissions"] = [dict(p) for p in part.permissions]
        if part.provider_executed:
            out["provider_executed"] = True
        if part.provider_metadata is not None:
            out["provider_metadata"] = _pm(part.provider_metadata)
        return out
    if isinstance(part, TextPart):
        out = {"id": part.id, "type": "text", "text": part.text, "started": part.started, "ended": part.ended}
        if part.synthetic:
            out["synthetic"] = True
        if part.provider_metadata is not None:
            out["provider_metadata"] = _pm(part.provider_metadata)
        return out
    if isinstance(part, ReasoningPart):
        out = {
            "id": part.id,
            "type": "reasoning",
            "text": part.text,
            "started": part.started,
            "ended": part.ended,
        }
        if part.provider_metadata is not None:
            out["provider_metadata"] = _pm(part.provider_metadata)
        return out
    if isinstance(part, FilePart):
        return {"id": part.id, "type": "file", "content": content_to_json((part.content,))[0]}
    if isinstance(part, StepStartPart):
        return {"id": part.id, "type": "step-start", "step": part.step, "final": part.final}
    if isinstance(part, StepFinishPart):
        return {
            "id": part.id,
            "type": "step-finish",
            "reason": part.reason,
            "usage": usage_to_json(part.usage),
        }
    assert_never(part)


def part_from_json(session_id: str, message_id: str, data: Mapping[str, Any]) -> Part:
    """Decode a part written by :func:`part_to_json`.

    Raises:
        ValueError: the object is not a known part type.
    """
    kind = data.get("type")
    pid = data["id"]
    if kind == "tool":
        return ToolPart(
            id=pid,
            session_id=session_id,
            message_id=message_id,
            call_id=data["call_id"],
            tool=data["tool"],
            state=data["state"],
            input=data.get("input"),
            raw=data.get("raw"),
            content=content_from_json(data.get("content", ())),
            metadata=data.get("metadata"),
            title=data.get("title"),
            output_paths=tuple(data.get("output_paths", ())),
            started=data.get("started"),
            ended=data.get("ended"),
            error=data.get("error"),
            error_kind=data.get("error_kind"),
            interrupted=bool(data.get("interrupted", False)),
            permissions=tuple(data.get("permissions", ())),
            provider_executed=bool(data.get("provider_executed", False)),
            provider_metadata=data.get("provider_metadata"),
        )
    if kind == "text":
        return TextPart(
            id=pid,
            session_id=session_id,
            message_id=message_id,
            text=data["text"],
            started=data.get("started"),
            ended=data.get("ended"),
            synthetic=bool(data.get("synthetic", False)),
            provider_metadata=data.get("provider_metadata"),
        )
    if kind == "reasoning":
        return ReasoningPart(
            id=pid,
            session_id=session_id,
            message_id=message_id,
            text=data["text"],
            started=data.get("started"),
            ended=data.get("ended"),
            provider_metadata=data.get("provider_metadata"),
        )
    if kind == "file":
        return FilePart(
            id=pid,
            session_id=session_id,
            message_id=message_id,
            content=content_from_json([data["content"]])[0],
        )
    if kind == "step-start":
        return StepStartPart(
            id=pid,
            session_id=session_id,
            message_id=message_id,
            step=data["step"],
            final=data.get("final", False),
        )
    if kind == "step-finish":
        return StepFinishPart(
            id=pid,
            session_id=session_id,
            message_id=message_id,
            reason=data["reason"],
            usage=usage_from_json(data.get("usage")),
        )
    raise ValueError(f"unknown part type: {kind!r}")


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

"""The JSON shapes that ``tether run --format json`` (``cli/_jsonevents.py``) and ``tether serve``
(``server/_events.py``, ``server/_routes.py``) both write: one shape per concept, built in one place.

Below both (neither imports the other: layout law); it reads the records it is given and imports nothing at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .llm import Usage
    from .permissions import Decision, PendingRequest, PermissionRequest
    from .session import PendingQuestion, SessionInfo

__all__ = ["decided_json", "permission_asked_json", "question_asked_json", "session_json", "usage_json"]


def usage_json(usage: Usage | None) -> dict[str, int]:
    """Tokens: ``input`` includes cache reads and writes, ``output`` includes reasoning."""
    if usage is None:
        return {"input": 0, "output": 0, "reasoning": 0, "cache_read": 0, "cache_write": 0}
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "reasoning": usage.reasoning_tokens,
        "cache_read": usage.cache_read_tokens,
        "cache_write": usage.cache_write_tokens,
    }


def session_json(info: SessionInfo) -> dict[str, Any]:
    """A session's record (``tether sessions --json``, an export's ``session``, the server's sessions)."""
    return {
        "id": info.id,
        "title": info.title,
        "project": info.project,
        "directory": info.directory,
        "agent": info.agent,
        "parent_id": info.parent_id,
        "parent_call_id": info.parent_call_id,
        "rules": [[r.action, r.resource, r.effect] for r in info.rules],
        "created": info.created,
        "updated": info.updated,
    }


def permission_asked_json(pending: PendingRequest) -> dict[str, Any]:
    """``permission_asked``: a request waits for a reply (``request`` pairs it with its decision)."""
    request = pending.request
    return {
        "v": 1,
        "type": "permission_asked",
        "session": pending.session_id,
        "request": pending.id,
        "call": None if request.source is None else request.source.call_id,
        "action": request.action,
        "resources": list(request.resources),
    }


def decided_json(request: PermissionRequest, decision: Decision) -> dict[str, Any]:
    """``permission_decided`` by the rules alone: ``rule`` and ``rule_source`` name the rule that decided (none when
    the built-in default did)."""
    rule: dict[str, str] | None = None
    source: str | None = None
    for verdict in decision.deciding:
        if verdict.source != "default":
            r = verdict.rule
            rule, source = {"action": r.action, "resource": r.resource, "effect": r.effect}, verdict.source
        break
    return {
        "v": 1,
        "type": "permission_decided",
        "session": request.session_id,
        "request": None,
        "call": None if request.source is None else request.source.call_id,
        "action": request.action,
        "resources": list(request.resources),
        "decision": "deny" if decision.effect == "deny" else "allow",
        "by": "rules",
        "reply": None,
        "rule": rule,
        "rule_source": source,
    }


def question_asked_json(pending: PendingQuestion) -> dict[str, Any]:
    """``question_asked``: the ``question`` tool waits for a person's answers."""
    return {
        "v": 1,
        "type": "question_asked",
        "session": pending.session_id,
        "request": pending.id,
        "call": pending.call_id,
        "agent": pending.agent,
        "questions": [
            {
                "question": q.question,
                "header": q.header,
                "options": [{"label": o.label, "description": o.description} for o in q.options],
                "multiple": q.multiple,
            }
            for q in pending.questions
        ],
    }

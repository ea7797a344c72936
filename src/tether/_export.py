"""A stored session as plain JSON: the timeline (``tether session show --json``) and the export document.

Shared by the CLI (``tether session show|export``) and the server (``GET /api/sessions/{id}/export``), which must
emit the same document; built from the durable records only (the store), never from live events. The export
document (:data:`EXPORT_FORMAT`) holds the session, every message and part as stored, the todo list, every child
session (a ``task`` call's subagent, an ``execute`` call's inner calls) as a nested document of the same shape, and
the timeline.

Every document is made showable here (``tether.storable.storable``): a lone surrogate in any text, which a store
written before tether made every stored text storable may still hold (and a session's directory always may: it is
kept exact), is shown as a visible escape, so the document is valid UTF-8 JSON whatever the store holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Protocol

from ._record import record
from ._wire import session_json
from .content import content_to_json
from .records import ReasoningPart, TextPart, ToolPart, UserInfo
from .records.internal import message_to_json, part_to_json, usage_to_json
from .session import SessionInfo
from .storable import storable
from .store import StoredMessage
from .store.internal import Todo

__all__ = [
    "EXPORT_FORMAT",
    "NESTING",
    "ExportStore",
    "SubSession",
    "export_document",
    "load_subsessions",
    "messages_json",
    "timeline_json",
    "todos_json",
]

EXPORT_FORMAT = "tether.session/2"
"""Version 2 added the todo list and the child sessions (version 1: the session, its messages, the timeline)."""

NESTING = 8
"""Child sessions loaded below a session, at most this deep (the task tool's own limit is lower)."""


class ExportStore(Protocol):
    """What an export reads from a store (the SQLite and PostgreSQL stores both have it)."""

    async def load_messages(self, session_id: str) -> Sequence[StoredMessage]: ...

    async def load_todos(self, session_id: str) -> tuple[Todo, ...]: ...

    async def child_sessions(self, session_id: str) -> Sequence[SessionInfo]: ...


@record
class SubSession:
    """A child session (a subagent's, run by a ``task`` call) with its messages and its own children, by call id."""

    info: SessionInfo
    messages: Sequence[StoredMessage]
    children: Mapping[str, Sequence[SubSession]] = field(default_factory=dict[str, Sequence["SubSession"]])
    todos: Sequence[Todo] = ()


def _tool_json(part: ToolPart) -> dict[str, Any]:
    return {
        "type": "tool",
        "call_id": part.call_id,
        "tool": part.tool,
        "state": part.state,
        "input": part.input,
        "permissions": [dict(d) for d in part.permissions],
        "content": content_to_json(part.content),
        "error": part.error,
        "error_kind": part.error_kind,
        "interrupted": part.interrupted,
        "title": part.title,
        "metadata": dict(part.metadata) if part.metadata is not None else None,
        "output_paths": list(part.output_paths),
        "started": part.started,
        "ended": part.ended,
        "duration_ms": part.ended - part.started
        if part.started is not None and part.ended is not None
        else None,
    }


def timeline_json(
    info: SessionInfo,
    messages: Sequence[StoredMessage],
    children: Mapping[str, Sequence[SubSession]] | None = None,
) -> dict[str, Any]:
    """The session and its timeline as plain JSON (the ``--json`` form of ``tether session show``); a ``task``
    call's child sessions are nested in its entry (``subsessions``). Showable (see the module docstring)."""
    return storable(_timeline(info, messages, children))


def _timeline(
    info: SessionInfo,
    messages: Sequence[StoredMessage],
    children: Mapping[str, Sequence[SubSession]] | None = None,
) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    step = 0
    for message in messages:
        msg = message.info
        if isinstance(msg, UserInfo):
            text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
            items.append({"type": "user", "message_id": msg.id, "created": msg.created, "text": text})
            continue
        step += 1
        entry: dict[str, Any] = {
            "type": "step",
            "step": step,
            "message_id": msg.id,
            "model": msg.model,
            "agent": msg.agent,
            "created": msg.created,
            "completed": msg.completed,
            "duration_ms": msg.completed - msg.created if msg.completed is not None else None,
            "finish": msg.finish,
            "usage": usage_to_json(msg.usage),
            "error": None
            if msg.error is None
            else {"kind": msg.error.kind, "message": msg.error.message, "retryable": msg.error.retryable},
            "parts": [],
        }
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                entry["parts"].append({"type": "text", "text": part.text})
            elif isinstance(part, ReasoningPart) and part.text:
                entry["parts"].append({"type": "reasoning", "text": part.text})
            elif isinstance(part, ToolPart):
                tool = _tool_json(part)
                nested = (children or {}).get(part.call_id, ())
                if nested:
                    tool["subsessions"] = [_timeline(c.info, c.messages, c.children) for c in nested]
                entry["parts"].append(tool)
        items.append(entry)
    return {"session": session_json(info), "timeline": items}


def messages_json(messages: Sequence[StoredMessage]) -> list[dict[str, Any]]:
    """Every message with its parts, as stored (the parts' one codec). Showable (see the module docstring)."""
    return storable(_messages(messages))


def _messages(messages: Sequence[StoredMessage]) -> list[dict[str, Any]]:
    return [{"info": message_to_json(m.info), "parts": [part_to_json(p) for p in m.parts]} for m in messages]


def todos_json(todos: Sequence[Todo]) -> list[dict[str, Any]]:
    """The todo list. Showable (see the module docstring)."""
    return storable(_todos(todos))


def _todos(todos: Sequence[Todo]) -> list[dict[str, Any]]:
    return [{"id": t.id, "content": t.content, "status": t.status, "priority": t.priority} for t in todos]


async def load_subsessions(
    store: ExportStore, session_id: str, depth: int = 0
) -> dict[str, list[SubSession]]:
    """The child sessions of ``session_id`` (a ``task`` call's subagent, an ``execute`` call's inner calls) with
    their messages and their own children, by the parent call id; at most :data:`NESTING` levels deep."""
    found: dict[str, list[SubSession]] = {}
    if depth >= NESTING:
        return found
    for child in await store.child_sessions(session_id):
        nested = SubSession(
            info=child,
            messages=await store.load_messages(child.id),
            children=await load_subsessions(store, child.id, depth + 1),
            todos=await store.load_todos(child.id),
        )
        found.setdefault(child.parent_call_id or "", []).append(nested)
    return found


def _document(
    info: SessionInfo,
    messages: Sequence[StoredMessage],
    todos: Sequence[Todo],
    children: Mapping[str, Sequence[SubSession]],
) -> dict[str, Any]:
    return {
        "session": session_json(info),
        "messages": _messages(messages),
        "todos": _todos(todos),
        "children": [
            {"parent_call_id": call_id, **_document(c.info, c.messages, c.todos, c.children)}
            for call_id, nested in children.items()
            for c in nested
        ],
    }


async def export_document(store: ExportStore, info: SessionInfo) -> dict[str, Any]:
    """``tether session export``'s self-contained JSON document (:data:`EXPORT_FORMAT`): the session, every message
    and part as stored, its todo list, its child sessions (each a document of the same shape, with the call that ran
    it), and the timeline with the child sessions nested under their calls. Showable (see the module docstring)."""
    messages = await store.load_messages(info.id)
    todos = await store.load_todos(info.id)
    children = await load_subsessions(store, info.id)
    return storable(
        {
            "format": EXPORT_FORMAT,
            **_document(info, messages, todos, children),
            "timeline": _timeline(info, messages, children)["timeline"],
        }
    )

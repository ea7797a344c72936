"""Session events: what the runner appends to the store and publishes on the bus.

Durable events (``session.updated``, ``message.updated``, ``message.part.updated``) are appended to the store the
moment they happen and projected there into the sessions, messages and parts tables. Live-only events
(``message.part.delta``, ``tool.progress``, ``session.status``) go to the bus only: text deltas reach the store
coalesced into ``message.part.updated`` events, so no write waits per token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from .._record import record
from ._model import MessageInfo, Part, SessionInfo

__all__ = [
    "DurableEvent",
    "MessageUpdated",
    "PartDelta",
    "PartUpdated",
    "SessionStatus",
    "SessionUpdated",
    "ToolProgress",
]


@record(kw_only=False)
class SessionUpdated:
    """A session was created or changed (title, agent, rules)."""

    type: ClassVar[str] = "session.updated"
    session: SessionInfo


@record(kw_only=False)
class MessageUpdated:
    """A message was created or changed (an assistant's finish, usage, error, completion time)."""

    type: ClassVar[str] = "message.updated"
    message: MessageInfo


@record(kw_only=False)
class PartUpdated:
    """A part was created or changed: the whole new part (tool state transitions, finished text)."""

    type: ClassVar[str] = "message.part.updated"
    part: Part


@record
class PartDelta:
    """Live text appended to a text or reasoning part (bus only; the store receives coalesced updates)."""

    type: ClassVar[str] = "message.part.delta"
    session_id: str
    message_id: str
    part_id: str
    field: Literal["text"]
    delta: str


@record
class ToolProgress:
    """A running tool reported progress (``ctx.progress``). Bus only; published on the event loop (also for a tool reporting from a worker thread)."""

    type: ClassVar[str] = "tool.progress"
    session_id: str
    message_id: str
    call_id: str
    update: Mapping[str, Any]


@record
class SessionStatus:
    """``busy`` while a turn runs, ``retry`` while waiting to retry a provider error, ``idle`` after the turn."""

    type: ClassVar[str] = "session.status"
    session_id: str
    status: Literal["busy", "retry", "idle"]
    attempt: int = 0
    message: str | None = None
    retry_in: float | None = None


DurableEvent = SessionUpdated | MessageUpdated | PartUpdated

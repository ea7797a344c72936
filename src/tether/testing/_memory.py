"""An in-memory :class:`~tether.store.SessionStore` for tests that do not need a file (nothing is durable)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import NotFoundError, StoreError
from ..records import DurableEvent
from ..session import (
    AssistantInfo,
    MessageError,
    MessageInfo,
    MessageUpdated,
    Part,
    PartUpdated,
    SessionInfo,
    ToolPart,
)
from ..store import StoredMessage
from ..store.internal import INTERRUPTED_ERROR

__all__ = ["MemoryStore"]


class MemoryStore:
    """Keeps sessions, messages and parts in dicts; ``events`` is the appended event log."""

    def __init__(self) -> None:
        self.sessions: dict[str, SessionInfo] = {}
        self.messages: dict[str, dict[str, MessageInfo]] = {}
        self.parts: dict[str, dict[str, Part]] = {}
        self.events: list[DurableEvent] = []
        self.closed = False

    def append(self, event: DurableEvent) -> None:
        if self.closed:
            raise StoreError("The session store is closed")
        self.events.append(event)
        if isinstance(event, PartUpdated):
            self.parts.setdefault(event.part.session_id, {})[event.part.id] = event.part
        elif isinstance(event, MessageUpdated):
            self.messages.setdefault(event.message.session_id, {})[event.message.id] = event.message
        else:
            self.sessions[event.session.id] = event.session

    async def flush(self) -> None:
        return None

    async def get_session(self, session_id: str) -> SessionInfo:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise NotFoundError(f"Session not found: {session_id}") from None

    async def list_sessions(self, *, project: str | None = None, limit: int = 100) -> Sequence[SessionInfo]:
        found = [s for s in self.sessions.values() if project is None or s.project == project]
        return sorted(found, key=lambda s: (s.updated, s.id), reverse=True)[:limit]

    async def load_messages(self, session_id: str) -> Sequence[StoredMessage]:
        parts = sorted(self.parts.get(session_id, {}).values(), key=lambda p: p.id)
        out: list[StoredMessage] = []
        for message_id in sorted(self.messages.get(session_id, {})):
            info = self.messages[session_id][message_id]
            out.append(StoredMessage(info=info, parts=tuple(p for p in parts if p.message_id == message_id)))
        return out

    async def load_message(self, session_id: str, message_id: str) -> StoredMessage | None:
        info = self.messages.get(session_id, {}).get(message_id)
        if info is None:
            return None
        parts = sorted(self.parts.get(session_id, {}).values(), key=lambda p: p.id)
        return StoredMessage(info=info, parts=tuple(p for p in parts if p.message_id == message_id))

    async def recover(self) -> int:
        count = 0
        for by_id in list(self.parts.values()):
            for part in list(by_id.values()):
                if isinstance(part, ToolPart) and not part.settled:
                    count += 1
                    self.append(
                        PartUpdated(
                            replace(
                                part,
                                state="error",
                                error=INTERRUPTED_ERROR,
                                error_kind="interrupted",
                                interrupted=True,
                            )
                        )
                    )
        for by_id in list(self.messages.values()):
            for info in list(by_id.values()):
                if isinstance(info, AssistantInfo) and info.completed is None:
                    error = info.error or MessageError(kind="interrupted", message="The step was interrupted")
                    self.append(MessageUpdated(replace(info, completed=info.created, error=error)))
        return count

    async def aclose(self) -> None:
        self.closed = True

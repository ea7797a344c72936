"""The session store interface: what the runner needs from durable storage.

A store receives durable events through :meth:`SessionStore.append`, which never blocks the event loop: the store
queues the event and makes it durable promptly (the SQLite store commits in a worker thread, in batches). Reads
always observe every event appended before them. ``recover`` is the crash cleanup of law 7: tool parts left
``pending`` or ``running`` become ``error`` with ``Tool execution interrupted`` and ``interrupted: true``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .._record import record
from ..records import DurableEvent, MessageInfo, Part, SessionInfo

__all__ = ["INTERRUPTED_ERROR", "SessionStore", "StoredMessage"]

INTERRUPTED_ERROR = "Tool execution interrupted"
"""The error of a tool part found unfinished when a store is opened after a crash."""


@record
class StoredMessage:
    """A message with its parts, in creation order."""

    info: MessageInfo
    parts: tuple[Part, ...]


class SessionStore(Protocol):
    """Durable storage for sessions, messages and parts (implemented by ``SQLiteStore`` and ``MemoryStore``)."""

    def append(self, event: DurableEvent) -> None:
        """Queue a durable event; it is written promptly and seen by every later read.

        Raises:
            StoreError: the store is closed or an earlier write failed.
        """
        ...

    async def flush(self) -> None:
        """Wait until every event appended so far is durable.

        Raises:
            StoreError: a write failed.
        """
        ...

    async def get_session(self, session_id: str) -> SessionInfo:
        """The session ``session_id``.

        Raises:
            NotFoundError: no such session.
        """
        ...

    async def list_sessions(self, *, project: str | None = None, limit: int = 100) -> Sequence[SessionInfo]:
        """Sessions, most recently updated first (of one project root when ``project`` is given)."""
        ...

    async def load_messages(self, session_id: str) -> Sequence[StoredMessage]:
        """Every message of the session with its parts, oldest first."""
        ...

    async def load_message(self, session_id: str, message_id: str) -> StoredMessage | None:
        """The message ``message_id`` of the session with its parts, or ``None`` when the session has no such message.

        Reads by key: its cost does not grow with the session (law 10), unlike :meth:`load_messages`.
        """
        ...

    async def recover(self) -> int:
        """Mark unfinished tool parts interrupted (and unfinished assistant messages failed); return how many parts.

        Only work whose writer is gone is touched: a store shared by several processes leaves the unfinished calls
        of a live process alone.
        """
        ...

    async def aclose(self) -> None:
        """Write what is queued and close."""
        ...

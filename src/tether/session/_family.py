"""Which answerer a descendant session belongs to: its subagents' asks go to whoever answers for the root.

A subagent (a ``task`` call) runs in a child session, and its permission asks and questions carry the child's session
id and call ids, not its caller's. Whoever answers for a run (the CLI's approver, ``tether mcp serve``'s served call)
must still answer them: :class:`Descendants` learns each child from ``session.updated`` (published when the child is
created, before it runs anything) and maps it, and its own children, to the root it descends from. A root is a
session (every child of it belongs to the root) or a tool call (the ``task`` call a child runs for: when several
calls share one session, as a served MCP client's do, a child belongs to the call that started it).

Pure bookkeeping: no bus, no store.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from ..records import SessionInfo

__all__ = ["Descendants"]

K = TypeVar("K")


class Descendants(Generic[K]):
    """The root (any key: a session id, a served call) each known session descends from."""

    def __init__(self) -> None:
        self._sessions: dict[str, K] = {}
        self._calls: dict[str, K] = {}

    def add_session(self, session_id: str, root: K) -> None:
        """``session_id`` and every session that descends from it belong to ``root``."""
        self._sessions[session_id] = root

    def add_call(self, call_id: str, root: K) -> None:
        """Every child session run for the tool call ``call_id`` (and its descendants) belongs to ``root``."""
        self._calls[call_id] = root

    def learn(self, info: SessionInfo) -> K | None:
        """Record ``info`` when it descends from a known root (by its parent call, else its parent session); the
        root, or ``None`` for a session that is none of ours."""
        root = self._calls.get(info.parent_call_id) if info.parent_call_id is not None else None
        if root is None and info.parent_id is not None:
            root = self._sessions.get(info.parent_id)
        if root is not None:
            self._sessions[info.id] = root
        return root

    def root(self, session_id: str) -> K | None:
        """The root ``session_id`` belongs to, or ``None``."""
        return self._sessions.get(session_id)

    def forget(self, root: K) -> None:
        """Drop ``root`` and every session and call that belongs to it (its run or call ended)."""
        self._sessions = {key: value for key, value in self._sessions.items() if value != root}
        self._calls = {key: value for key, value in self._calls.items() if value != root}

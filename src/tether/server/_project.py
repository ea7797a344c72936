"""Which sessions, asks and events ``tether serve`` answers for: those of its project (:class:`ServedProject`).

A server answers for its project only, though the store it reads is shared with every other project of the data
directory: a session, a pending request or an event of another project is answered as if it did not exist (404, or
left out of a list and of the stream). Every route (through ``ServerState.project``) and the event stream ask the one
object; it stands below both, and knows neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import NotFoundError

if TYPE_CHECKING:
    from .._runtime import Runtime
    from ..permissions import PendingRequest
    from ..session import PendingQuestion, SessionInfo

__all__ = ["ServedProject"]


class ServedProject:
    """Which sessions, asks and events a server answers for: those of its project's sessions.

    A session belongs to the project whose root it records (``SessionInfo.project``); a ``task`` or ``execute``
    child records its parent's. Stored records and the event log are filtered by the store (an indexed lookup per
    session or event); a live event (the bus) comes from a turn running in this process, and a running session's
    handle is alive (``Sessions.info``, a dictionary lookup), so it is judged without a read. A live event of a
    session with no live handle is left out: unknown is never shown.

    Args:
        rt: the open runtime.
        root: the served project's root directory.
    """

    __slots__ = ("_rt", "root")

    def __init__(self, rt: Runtime, root: str) -> None:
        self._rt = rt
        self.root = root

    def owns(self, session_id: str) -> bool:
        """Whether ``session_id``, running in this process, is one of the project's sessions (for live events)."""
        info = self._rt.sessions.service.info(session_id)
        return info is not None and info.project == self.root

    async def session(self, session_id: str) -> SessionInfo:
        """The stored record of the project's session ``session_id``.

        Raises:
            NotFoundError: no such session in the project; another project's session reads exactly as a missing one.
        """
        info = await self._rt.store.get_session(session_id)
        if info.project != self.root:
            raise NotFoundError(f"Session not found: {session_id}")
        return info

    def pending(self, session_id: str | None) -> tuple[list[PendingRequest], list[PendingQuestion]]:
        """The pending permission requests and questions of the project's sessions (of one of them, if given)."""
        requests = [r for r in self._rt.permissions.pending(session_id) if self.owns(r.session_id)]
        questions = [q for q in self._rt.questions.pending(session_id) if self.owns(q.session_id)]
        return requests, questions

    def permission(self, request_id: str) -> PendingRequest:
        """The project's pending permission request ``request_id``.

        Raises:
            NotFoundError: it is not one (another project's reads as a missing one).
        """
        for pending in self.pending(None)[0]:
            if pending.id == request_id:
                return pending
        raise NotFoundError(f"No pending permission request {request_id}")

    def question(self, request_id: str) -> None:
        """Check that ``request_id`` names pending questions of the project.

        Raises:
            NotFoundError: it does not (another project's reads as missing ones).
        """
        if not any(q.id == request_id for q in self.pending(None)[1]):
            raise NotFoundError(f"No pending question {request_id}")

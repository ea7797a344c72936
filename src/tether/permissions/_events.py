"""The pending request record, the permission events on the bus, and the record a call's recorder receives.

The bus events are for people watching (the CLI's live view and approval prompt, a server's event stream). What is
recorded with a call does not go through the bus: the service hands a :class:`~tether.tools.PermissionRecord` to the
request's own recorder (:func:`permission_record`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._record import record
from ..tools.internal import PermissionRecord
from ._evaluate import Decision
from ._types import Effect, PermissionRequest, Reply

__all__ = [
    "AskResult",
    "PendingRequest",
    "PermissionAsked",
    "PermissionDecided",
    "PermissionReplied",
    "permission_record",
]


@record
class PendingRequest:
    """A request waiting for a person's reply: its ``per_`` id, the request, its project and the ``ask`` decision."""

    id: str
    request: PermissionRequest
    project: str
    decision: Decision

    @property
    def session_id(self) -> str:
        return self.request.session_id

    def to_json(self) -> dict[str, Any]:
        """The wire form (for the HTTP API and the store)."""
        request = self.request
        source = request.source
        out: dict[str, Any] = {
            "id": self.id,
            "session_id": request.session_id,
            "action": request.action,
            "resources": list(request.resources),
            "save": list(request.save),
            "metadata": dict(request.metadata),
            "source": None
            if source is None
            else {"type": source.type, "message_id": source.message_id, "call_id": source.call_id},
            "decision": self.decision.to_json(),
        }
        if request.protected is not None:
            out["protected"] = request.protected
        return out


@record
class AskResult:
    """What :meth:`PermissionService.ask` returns: the effect, the pending id when it is ``ask``, and the decision."""

    id: str | None
    effect: Effect
    decision: Decision


@record
class PermissionAsked:
    """A request is waiting for a reply (``permission.asked``)."""

    type: ClassVar[str] = "permission.asked"
    request: PendingRequest


@record
class PermissionReplied:
    """A pending request was answered (``permission.replied``); also published for automatic and closing replies."""

    type: ClassVar[str] = "permission.replied"
    session_id: str
    request_id: str
    reply: Reply


@record
class PermissionDecided:
    """A request was allowed or denied by the rules alone, without asking (``permission.decided``).

    For watchers only: the call records the decision through its own recorder (``PermissionRequest.recorder``).
    """

    type: ClassVar[str] = "permission.decided"
    request: PermissionRequest
    decision: Decision


def permission_record(
    request: PermissionRequest,
    decision: Decision,
    *,
    request_id: str | None = None,
    reply: Reply | None = None,
    message: str | None = None,
) -> PermissionRecord:
    """What the call's recorder receives: ``decision`` on ``request``; with ``request_id`` a person was asked.

    With ``reply`` the record is the answer: ``allow`` after ``once``/``always``, ``deny`` after ``reject``.
    """
    effect: Effect = decision.effect if reply is None else ("deny" if reply == "reject" else "allow")
    return PermissionRecord(
        action=request.action,
        resources=tuple(request.resources),
        effect=effect,
        verdicts=decision.verdicts,
        asked=request_id is not None,
        request_id=request_id,
        reply=reply,
        message=message,
        protected=request.protected,
    )

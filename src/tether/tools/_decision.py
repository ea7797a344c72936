"""A permission decision as the call it was taken for records it (``ToolContext.record_permission``).

The permission service reports every decision of a call to the call's own recorder; the session writes it on the
call's tool part ("which rule decided", what ``tether session show`` displays). The record and the per-resource
:class:`Verdict` live here, below ``permissions`` (which re-exports them), because the call's context carries the
recorder and ``tools`` never imports ``permissions``. Nothing here evaluates: it only describes what was decided.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from .._record import record
from ..rules import Effect, Rule

__all__ = ["PermissionRecord", "Reply", "Verdict"]

Reply = Literal["once", "always", "reject"]
"""A person's answer to a request that asks: approve this one, approve and save, or reject."""


class Verdict(NamedTuple):
    """How one resource of a request was decided: the deciding rule and where that rule came from.

    A named tuple rather than a frozen dataclass: a decision builds one per resource on the hot path, and a tuple is
    built about ten times faster (``bench/permissions.py``). Build it with keywords.
    """

    resource: str
    rule: Rule
    source: str

    @property
    def effect(self) -> Effect:
        return self.rule.effect

    def to_json(self) -> dict[str, Any]:
        """A compact JSON form, for storing with the tool call."""
        rule = self.rule
        return {
            "resource": self.resource,
            "effect": rule.effect,
            "rule": {"action": rule.action, "resource": rule.resource, "effect": rule.effect},
            "source": self.source,
        }


@record
class PermissionRecord:
    """One permission decision taken for a call.

    A request decided by the rules alone gives one record (``asked`` false). A request that asks a person gives one
    record when it starts waiting (``effect`` ``ask``, no ``reply``) and one when it is answered (``reply`` set;
    ``effect`` ``allow`` after ``once``/``always``, ``deny`` after ``reject``). A waiter cancelled meanwhile gives only
    the first.

    Attributes:
        action: the permission action (``read``, ``edit``, ``bash``, ...).
        resources: what the call touches, in request order.
        effect: what was decided.
        verdicts: the deciding rule of each resource, in request order (for a reply: the rules that asked).
        asked: whether a person was asked.
        request_id: the pending request's ``per_`` id when a person was asked.
        reply: the person's reply, once there is one.
        message: the person's feedback with a rejection.
        protected: the protected path's anchor when the request writes to one.
    """

    action: str
    resources: tuple[str, ...]
    effect: Effect
    verdicts: tuple[Verdict, ...]
    asked: bool = False
    request_id: str | None = None
    reply: Reply | None = None
    message: str | None = None
    protected: str | None = None

    @property
    def event(self) -> str:
        """The stored record's kind: ``permission.decided``, ``permission.asked`` or ``permission.replied``."""
        if not self.asked:
            return "permission.decided"
        return "permission.asked" if self.reply is None else "permission.replied"

    def to_json(self) -> dict[str, Any]:
        """The compact JSON stored on the tool part (the shape ``tether session show`` reads)."""
        out: dict[str, Any] = {"event": self.event}
        if self.request_id is not None:
            out["id"] = self.request_id
        out["action"] = self.action
        out["resources"] = list(self.resources)
        if self.reply is not None:
            out["reply"] = self.reply
            if self.message:
                out["message"] = self.message
        else:
            out["decision"] = {
                "action": self.action,
                "effect": self.effect,
                "verdicts": [v.to_json() for v in self.verdicts],
            }
        if self.protected is not None:
            out["protected"] = self.protected
        return out

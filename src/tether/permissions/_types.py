"""Permission data types shared by the service, the leaves that ask, and the session that records decisions.

The rule itself (:class:`~tether.rules.Rule`, :data:`~tether.rules.Effect`) lives in ``tether.rules``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Literal

from .._record import record
from ..rules import Effect, Rule
from ..tools import ToolContext
from ..tools.internal import PermissionRecorder, Reply

# ``Rule`` and ``Effect`` are defined once, in ``tether.rules`` (below ``tools``, ``config`` and ``session``, which
# use them too); they are re-exported here for the modules of this package.
__all__ = ["Effect", "PermissionRequest", "PermissionSource", "Reply", "Rule"]


@record
class PermissionSource:
    """Where a request comes from: always a tool call, identified by its assistant message and call id."""

    message_id: str
    call_id: str
    type: Literal["tool"] = "tool"


@record
class PermissionRequest:
    """What a leaf asks for at the point of action (law 4).

    ``resources`` are the concrete things touched (paths relative to the Location, commands, ...); ``save`` are the
    patterns an "always" reply persists (``["*"]`` for edits, ``["git push *"]`` for a command).

    ``protected`` is set for a write to a protected path (``.git/config``, ``.tether/``, ``AGENTS.md``, ...): the
    anchor a rule must spell literally to allow it (see ``tether.location.protected_anchor``). Such a request asks
    whatever a broad rule or a saved approval says; only a rule that names the anchor allows it, a deny still denies,
    and an "always" reply saves the exact resources, never a pattern.

    ``recorder`` is the calling tool's ``ToolContext.record_permission``: the service reports every decision on this
    request to it, so the decision travels with the call (the session writes it on the call's tool part).
    """

    session_id: str
    action: str
    resources: Sequence[str]
    save: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict[str, Any])
    source: PermissionSource | None = None
    agent: str | None = None
    protected: str | None = None
    recorder: PermissionRecorder | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_context(
        cls,
        ctx: ToolContext,
        *,
        action: str,
        resources: Sequence[str],
        save: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        protected: str | None = None,
    ) -> PermissionRequest:
        """Build a request whose source, session and agent come from the tool call's context."""
        return cls(
            session_id=ctx.session_id,
            agent=ctx.agent,
            action=action,
            resources=resources if type(resources) is tuple else tuple(resources),  # twice per call: no copy
            save=save if type(save) is tuple else tuple(save),
            metadata={} if metadata is None else dict(metadata),
            source=PermissionSource(message_id=ctx.message_id, call_id=ctx.call_id),
            protected=protected,
            recorder=ctx.record_permission,
        )

"""Where the inner calls of one ``execute`` call are recorded: a child session of the calling session.

The child's ``parent_call_id`` is the ``execute`` call (as a ``task`` call's subagent session), so ``tether session
show`` nests it under that call, and every inner call is an ordinary tool part written the moment it changes (law 7):
``running`` with its input when it starts, then ``completed`` or ``error``. The child holds one user message (the
code) and one assistant message (the inner calls). After a crash the store's recovery marks a running inner call
interrupted, like any call; a cancelled ``execute`` marks its unfinished inner calls aborted itself.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import ids
from ..llm import ToolCallEvent
from ..session import AssistantInfo, MessageError, MessageUpdated, PartUpdated, TextPart, UserInfo
from ..session.internal import StepProcessor
from ..tools import Outcome, ToolContext
from ..tools.internal import PermissionRecorder

if TYPE_CHECKING:
    from ..session import Sessions

__all__ = ["ABORTED", "InnerCalls"]

ABORTED = "Tool execution aborted: the execute call ended before this call finished"
_TITLE_CHARS = 60


def _now() -> int:
    return int(time.time() * 1000)


def _title(code: str) -> str:
    line = next((part.strip() for part in code.splitlines() if part.strip()), "")
    return f"execute: {line[:_TITLE_CHARS]}" + ("…" if len(line) > _TITLE_CHARS else "")


class InnerCalls:
    """The child session of one ``execute`` call; its inner calls' parts go through the session's own tool-part
    state machine (:class:`~tether.session.internal.StepProcessor`), as a step's calls do."""

    __slots__ = ("_info", "_parts", "session_id")

    def __init__(self, sessions: Sessions, info: AssistantInfo) -> None:
        self.session_id = info.session_id
        self._info = info
        self._parts = StepProcessor(sessions.emitter, session_id=info.session_id, message_id=info.id)

    @classmethod
    async def open(cls, sessions: Sessions, ctx: ToolContext[Any], code: str) -> InnerCalls:
        """Create the child session (code as its user message) under the ``execute`` call of ``ctx``.

        Raises:
            NotFoundError: ``ctx.session_id`` is not a session.
            StoreError: the store refused a write.
        """
        parent = await sessions.get(ctx.session_id)
        child = await sessions.create(
            parent.location,
            agent=parent.info.agent,
            title=_title(code),
            parent_id=parent.id,
            parent_call_id=ctx.call_id,
        )
        emit = sessions.emitter.durable
        user = UserInfo(id=ids.ascending("msg"), session_id=child.id, agent=ctx.agent, created=_now())
        emit(MessageUpdated(user))
        emit(
            PartUpdated(TextPart(id=ids.ascending("prt"), session_id=child.id, message_id=user.id, text=code))
        )
        message = AssistantInfo(
            id=ids.ascending("msg"),
            session_id=child.id,
            parent_id=user.id,
            agent=ctx.agent,
            model="codemode",
            created=_now(),
        )
        emit(MessageUpdated(message))
        return cls(sessions, message)

    def start(self, call_id: str, name: str, value: Any) -> None:
        """The inner call is running with input ``value``."""
        self._parts.handle(ToolCallEvent(id=call_id, name=name, input=_storable(value)))

    def recorder(self, call_id: str) -> PermissionRecorder:
        """Where the inner call's permission decisions go: on its own part, at once (law 7)."""
        return self._parts.recorder(call_id)

    def settle(self, call_id: str, outcome: Outcome) -> None:
        """Record the inner call's outcome."""
        self._parts.settle(call_id, outcome)

    def close(self, error: str | None) -> None:
        """Mark inner calls still running aborted, and finish the assistant message (``error``: why it stopped)."""
        self._parts.fail_unsettled(ABORTED, kind="aborted", interrupted=True)
        failed = None if error is None else MessageError(kind="error", message=error)
        self._parts.emitter.durable(
            MessageUpdated(replace(self._info, completed=_now(), finish="stop", error=failed))
        )


def _storable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=repr))
    except (TypeError, ValueError):
        return repr(value)

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
from ..session import AssistantInfo, MessageError, MessageUpdated, PartUpdated, TextPart, ToolPart, UserInfo
from ..tools import Completed, Outcome, ToolContext

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
    """The child session of one ``execute`` call and its inner calls' parts."""

    __slots__ = ("_emit", "_info", "_parts", "session_id")

    def __init__(self, sessions: Sessions, info: AssistantInfo) -> None:
        self._emit = sessions.emitter.durable
        self.session_id = info.session_id
        self._info = info
        self._parts: dict[str, ToolPart] = {}

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
        part = ToolPart(
            id=ids.ascending("prt"),
            session_id=self.session_id,
            message_id=self._info.id,
            call_id=call_id,
            tool=name,
            state="running",
            input=_storable(value),
            started=_now(),
        )
        self._emit(PartUpdated(part))
        self._parts[call_id] = part

    def settle(self, call_id: str, outcome: Outcome) -> None:
        """Record the inner call's outcome."""
        part = self._parts.pop(call_id)
        if isinstance(outcome, Completed):
            done = _evolve(
                part,
                state="completed",
                content=outcome.content,
                metadata=outcome.metadata,
                title=outcome.title,
                output_paths=outcome.output_paths,
            )
        else:
            done = _evolve(
                part,
                state="error",
                error=outcome.error,
                error_kind=outcome.kind,
                content=outcome.partial,
                metadata=outcome.metadata,
                output_paths=outcome.output_paths,
            )
        self._emit(PartUpdated(done))

    def close(self, error: str | None) -> None:
        """Mark inner calls still running aborted, and finish the assistant message (``error``: why it stopped)."""
        for part in self._parts.values():
            self._emit(
                PartUpdated(
                    _evolve(part, state="error", error=ABORTED, error_kind="aborted", interrupted=True)
                )
            )
        self._parts.clear()
        failed = None if error is None else MessageError(kind="error", message=error)
        self._emit(MessageUpdated(replace(self._info, completed=_now(), finish="stop", error=failed)))


def _evolve(part: ToolPart, **changes: Any) -> ToolPart:
    return replace(part, ended=_now(), **changes)


def _storable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=repr))
    except (TypeError, ValueError):
        return repr(value)

"""One step: create the assistant message, stream the model, dispatch calls, and close the step durably.

A call starts on the turn's call tasks (``CallPool``) as soon as its input is complete, while the stream goes on; the
step ends only when every call has settled. A provider error stops the stream but lets started calls finish (their
results stay in the history). Cancellation stops the stream and the running tools; every unsettled tool part then
becomes ``error`` with ``Tool execution aborted`` and ``interrupted: true`` (law 3: cancellation is never a result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from .. import ids
from ..errors import ProviderError
from ..llm import AssistantMessage, Model, ModelRequest, TextContent
from ..tools import Materialization
from ._dispatch import CallPool, Dispatcher, DoomLoopDetector, PermissionAsserter
from ._events import MessageUpdated
from ._history import History
from ._model import AssistantInfo, MessageError, StepFinishPart, StepStartPart, ToolPart, now_ms
from ._processor import Emitter, StepProcessor
from ._prompts import ABORTED_ERROR, INCOMPLETE_CALL_ERROR, MAX_STEPS_PROMPT

__all__ = ["StepResult", "run_step"]

_FINAL_TAIL = (AssistantMessage(content=(TextContent(text=MAX_STEPS_PROMPT),)),)


@dataclass(slots=True)
class StepResult:
    info: AssistantInfo
    processor: StepProcessor
    calls: int
    declined: bool
    error: ProviderError | None


async def run_step(
    *,
    emitter: Emitter,
    session_id: str,
    parent_id: str,
    agent: str,
    model: Model,
    materialization: Materialization,
    history: History,
    step: int,
    system: Sequence[str],
    options: Mapping[str, Any],
    doom: DoomLoopDetector,
    permissions: PermissionAsserter | None,
    limiter: anyio.CapacityLimiter | None,
    live_calls: dict[str, StepProcessor],
    pool: CallPool,
) -> StepResult:
    """Run one step against ``model``; its parts are emitted and appended to ``history`` (also when cancelled).

    Raises:
        Cancelled: the step was cancelled (after the parts were marked aborted).
    """
    final = materialization.final_step
    info = AssistantInfo(
        id=ids.ascending("msg"),
        session_id=session_id,
        parent_id=parent_id,
        agent=agent,
        model=model.name,
        created=now_ms(),
    )
    emitter.durable(MessageUpdated(info))
    processor = StepProcessor(emitter, session_id=session_id, message_id=info.id)
    processor.put(
        StepStartPart(
            id=ids.ascending("prt"), session_id=session_id, message_id=info.id, step=step, final=final
        )
    )
    request = ModelRequest(
        system=system,
        messages=history.view(_FINAL_TAIL if final else ()),
        tools=materialization.definitions,
        tool_choice="none" if final else "auto",
        options=options,
    )
    error: ProviderError | None = None
    dispatcher = Dispatcher(
        pool,
        materialization=materialization,
        processor=processor,
        agent=agent,
        doom=doom,
        permissions=permissions,
        limiter=limiter,
    )
    try:
        stream = model.stream(request)
        try:
            async for event in stream:
                call = processor.handle(event)
                if call is not None:
                    live_calls[call.id] = processor
                    dispatcher.start(call)
        except ProviderError as exc:
            error = exc
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
        await dispatcher.wait()
    except anyio.get_cancelled_exc_class():
        # Synchronous on purpose: nothing here awaits, so the cleanup cannot be cancelled half-way.
        _close(processor, live_calls)
        processor.fail_unsettled(ABORTED_ERROR, kind="aborted", interrupted=True)
        emitter.durable(
            MessageUpdated(
                replace(
                    info,
                    completed=now_ms(),
                    finish=processor.finish_reason,
                    usage=processor.usage,
                    error=MessageError(kind="aborted", message="The step was cancelled"),
                )
            )
        )
        history.add_step(processor.parts.values())
        raise
    _close(processor, live_calls)
    # Parts still pending never received a complete call (the stream ended mid-input).
    processor.fail_unsettled(INCOMPLETE_CALL_ERROR, kind="invalid_input", interrupted=False)
    message_error = None
    if error is not None:
        message_error = MessageError(kind="provider", message=error.message, retryable=error.retryable)
    finish = processor.finish_reason or ("error" if error is not None else "unknown")
    processor.put(
        StepFinishPart(
            id=ids.ascending("prt"),
            session_id=session_id,
            message_id=info.id,
            reason=finish,
            usage=processor.usage,
        )
    )
    info = replace(info, completed=now_ms(), finish=finish, usage=processor.usage, error=message_error)
    emitter.durable(MessageUpdated(info))
    history.add_step(processor.parts.values())
    return StepResult(
        info=info, processor=processor, calls=dispatcher.calls, declined=dispatcher.declined, error=error
    )


def _close(processor: StepProcessor, live_calls: dict[str, StepProcessor]) -> None:
    processor.close_blocks()
    for part in processor.parts.values():
        if isinstance(part, ToolPart):
            live_calls.pop(part.call_id, None)

"""One step: create the assistant message, stream the model, dispatch calls, and close the step durably.

A call starts on the turn's call tasks (``CallPool``) as soon as its input is complete, while the stream goes on; the
step ends only when every call has settled. A provider error stops the stream but lets started calls finish (their
results stay in the history), and the step finishes with it. What any other exception or a cancellation does to the
calls, the step and the turn is decided in one place, :class:`~tether.session._failures.StepFailures` (law 3): this
module only sequences the step.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, fields
from types import AsyncGeneratorType
from typing import Any, cast

import anyio

from .. import ids
from ..errors import ProviderError
from ..llm import AssistantMessage, Event, ModelRequest, TextContent
from ..records import AssistantInfo, MessageError, MessageUpdated, StepFinishPart, StepStartPart
from ..records.internal import now_ms
from ..tools.internal import Materialization
from ._dispatch import Dispatcher
from ._failures import StepFailures
from ._observer import ObservedEmitter
from ._processor import StepProcessor
from ._prompts import INCOMPLETE_CALL_ERROR, MAX_STEPS_PROMPT
from ._turn import AgentLike, TurnContext

__all__ = ["CANCEL_GRACE", "StepResult", "run_step"]

CANCEL_GRACE = 2.0
"""Seconds a cancelled step waits for its cancelled calls to finish their cleanup before marking them aborted."""

_FINAL_TAIL = (AssistantMessage(content=(TextContent(text=MAX_STEPS_PROMPT),)),)

_INFO_FIELDS = (
    "id",
    "session_id",
    "parent_id",
    "agent",
    "model",
    "created",
    "completed",
    "finish",
    "usage",
    "error",
)
assert tuple(f.name for f in fields(AssistantInfo)) == (*_INFO_FIELDS, "role"), "_finish names every field"


@dataclass(slots=True)
class StepResult:
    info: AssistantInfo
    processor: StepProcessor
    calls: int
    declined: bool
    error: ProviderError | None


async def run_step(
    turn: TurnContext,
    *,
    parent_id: str,
    agent: AgentLike,
    materialization: Materialization,
    step: int,
) -> StepResult:
    """Run step number ``step`` of ``turn``; its parts are emitted and appended to the history (also when it fails).

    Raises:
        Cancelled: the step was cancelled (after the parts were marked aborted).
        StoreError: the store refused a write (after the step was closed, see ``_failures``).
        Exception: any other defect of the stream or the runner, after the step was closed the same way.
    """
    session_id = turn.info.id
    final = materialization.final_step
    # Built first: an option the request rejects (UsageError) leaves no half-written step behind.
    request = ModelRequest(
        system=turn.system,  # the whole system prompt, agent's text included (``Session.prompt``)
        messages=turn.history.view(_FINAL_TAIL if final else ()),
        tools=materialization.definitions,
        tool_choice="none" if final else "auto",
        # the agent's options (temperature, top_p) under the caller's; ModelRequest checks them (RequestOptions)
        options=cast(Any, {**agent.options, **turn.options} if agent.options else turn.options),
    )
    info = AssistantInfo(
        id=ids.ascending("msg"),
        session_id=session_id,
        parent_id=parent_id,
        agent=agent.name,
        model=turn.model.name,
        created=now_ms(),
    )
    turn.emitter.durable(MessageUpdated(info))
    chat = (
        None if turn.trace is None else turn.trace.chat(request, info, step)
    )  # observed (telemetry: chat span)
    emitter = turn.emitter if chat is None else ObservedEmitter(turn.emitter, chat)
    processor = StepProcessor(emitter, session_id=session_id, message_id=info.id)
    processor.put(
        StepStartPart(
            id=ids.ascending("prt"), session_id=session_id, message_id=info.id, step=step, final=final
        )
    )
    failures = StepFailures(processor, info, turn.history, grace=turn.cancel_grace)
    dispatcher = Dispatcher(
        turn.pool,
        materialization=materialization,
        processor=processor,
        agent=agent.name,
        doom=turn.doom,
        permissions=turn.permissions,
        failures=failures,
        limiter=turn.limiter,
        root=turn.root,
        deps=turn.deps,
    )

    async def run_stream() -> ProviderError | None:
        try:
            stream = turn.model.stream(request)
        except ProviderError as exc:  # an adapter that fails before streaming
            return exc
        try:
            return await failures.contain(lambda: _consume(stream, processor, dispatcher))
        finally:
            aclose: Callable[[], Awaitable[object]] | None = getattr(stream, "aclose", None)
            # An async generator that ran to its end (``ag_frame`` gone: every step of a stream read whole) has
            # nothing to close: no shielded scope for it (two per step otherwise: its scope and the close).
            if aclose is not None and not (
                isinstance(stream, AsyncGeneratorType) and stream.ag_frame is None
            ):
                with anyio.CancelScope(shield=True):
                    await failures.contain(aclose)

    def finish(error: ProviderError | None) -> StepResult:
        return _finish(processor, info, turn, dispatcher, error)

    work = run_stream if chat is None else chat.wrap(run_stream, processor, lambda: failures.defect)
    return await failures.run(work, dispatcher.wait, finish)


async def _consume(
    events: AsyncIterator[Event], processor: StepProcessor, dispatcher: Dispatcher
) -> ProviderError | None:
    """Consume the stream, starting each complete call; a ``ProviderError`` ends it and is returned."""
    try:
        async for event in events:
            call = processor.handle(event)
            if call is not None:
                dispatcher.start(call)
    except ProviderError as exc:
        return exc
    return None


def _finish(
    processor: StepProcessor,
    info: AssistantInfo,
    turn: TurnContext,
    dispatcher: Dispatcher,
    error: ProviderError | None,
) -> StepResult:
    processor.close_blocks()
    # Parts still pending never received a complete call (the stream ended mid-input).
    processor.fail_unsettled(INCOMPLETE_CALL_ERROR, kind="invalid_input", interrupted=False)
    message_error = None
    if error is not None:
        message_error = MessageError(kind="provider", message=error.message, retryable=error.retryable)
    finish = processor.finish_reason or ("error" if error is not None else "unknown")
    processor.put(
        StepFinishPart(
            id=ids.ascending("prt"),
            session_id=processor.session_id,
            message_id=info.id,
            reason=finish,
            usage=processor.usage,
        )
    )
    info = (
        AssistantInfo(  # not dataclasses.replace: 3.6 -> 1.4 us a step (every field is named: _INFO_FIELDS)
            id=info.id,
            session_id=info.session_id,
            parent_id=info.parent_id,
            agent=info.agent,
            model=info.model,
            created=info.created,
            completed=now_ms(),
            finish=finish,
            usage=processor.usage,
            error=message_error,
        )
    )
    processor.emitter.durable(MessageUpdated(info))
    turn.history.add_step(processor.parts.values())
    return StepResult(
        info=info, processor=processor, calls=dispatcher.calls, declined=dispatcher.declined, error=error
    )

"""One step: create the assistant message, stream the model, dispatch calls, and close the step durably.

A call starts on the turn's call tasks (``CallPool``) as soon as its input is complete, while the stream goes on; the
step ends only when every call has settled. A provider error stops the stream but lets started calls finish (their
results stay in the history). Cancellation stops the stream and the running tools; the step gives them up to
``CANCEL_GRACE`` seconds to settle (to run their shielded cleanup: a shell tool kills and reaps its processes), then
every unsettled tool part becomes ``error`` with ``Tool execution aborted`` and ``interrupted: true`` (law 3:
cancellation is never a result, so an outcome a tool still returns after the cancellation is dropped). A tool that
shields its cleanup for longer is marked at the end of the grace; anyio still waits for its shield to end.

Any other exception (an adapter raising something other than a ``ProviderError``, the store refusing a write) is a
defect of the step, not of a tool: the stream stops, started calls still finish (a sibling is never cancelled),
every unsettled part becomes ``error`` with ``Tool execution failed: ...`` (kind ``defect``), the assistant message
is completed with the error, the step joins the history, and the exception is raised. Nothing stays ``running``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from .. import ids
from ..errors import ProviderError, StoreError
from ..llm import AssistantMessage, Model, ModelRequest, TextContent
from ..tools import Materialization
from ._dispatch import CallPool, Dispatcher, DoomLoopDetector, PermissionAsserter
from ._events import MessageUpdated
from ._history import History
from ._model import AssistantInfo, MessageError, StepFinishPart, StepStartPart, now_ms
from ._processor import Emitter, StepProcessor
from ._prompts import ABORTED_ERROR, DEFECT_PREFIX, INCOMPLETE_CALL_ERROR, MAX_STEPS_PROMPT

__all__ = ["CANCEL_GRACE", "StepResult", "run_step"]

CANCEL_GRACE = 2.0
"""Seconds a cancelled step waits for its cancelled calls to finish their cleanup before marking them aborted."""

log = logging.getLogger("tether.session")

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
    pool: CallPool,
    grace: float = CANCEL_GRACE,
) -> StepResult:
    """Run one step against ``model``; its parts are emitted and appended to ``history`` (also when it fails).

    Raises:
        Cancelled: the step was cancelled (after the parts were marked aborted).
        StoreError: the store refused a write (after the step was closed, see the module docstring).
        Exception: any other defect of the stream or the runner, after the step was closed the same way.
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
        error, failure = await _stream(model, request, processor, dispatcher)
        await dispatcher.wait()
    except anyio.get_cancelled_exc_class():
        # The cancellation reached the calls too; each gets the grace to run its cleanup (a shell tool kills and reaps
        # its process group) before its part is marked. A call still cleaning up after the grace is marked anyway.
        dispatcher.cancelled = True
        with anyio.move_on_after(grace, shield=True):
            await dispatcher.wait()
        _abandon(
            processor,
            info,
            history,
            error=ABORTED_ERROR,
            kind="aborted",
            interrupted=True,
            message=MessageError(kind="aborted", message="The step was cancelled"),
        )
        raise
    failure = failure or dispatcher.failure
    if failure is None:
        try:
            return _finish(processor, info, history, dispatcher, error)
        except Exception as exc:  # the store refused a write: fail the step like any other defect
            failure = exc
    _abandon(
        processor,
        info,
        history,
        error=f"{DEFECT_PREFIX}{failure}",
        kind="defect",
        interrupted=False,
        message=MessageError(
            kind="store" if isinstance(failure, StoreError) else "error", message=str(failure)
        ),
    )
    raise failure


async def _stream(
    model: Model,
    request: ModelRequest,
    processor: StepProcessor,
    dispatcher: Dispatcher,
) -> tuple[ProviderError | None, Exception | None]:
    """Consume the stream, starting each complete call; return the provider error or the defect that ended it.

    Any other exception (an adapter bug, a store write refused) ends the stream like a provider error does: calls
    already started keep running and the step waits for them. Only cancellation propagates.
    """
    error: ProviderError | None = None
    failure: Exception | None = None
    stream = None
    try:
        stream = model.stream(request)
        async for event in stream:
            call = processor.handle(event)
            if call is not None:
                dispatcher.start(call)
    except ProviderError as exc:
        error = exc
    except Exception as exc:
        failure = exc
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await aclose()
                except Exception as exc:
                    failure = failure or exc
    return error, failure


def _finish(
    processor: StepProcessor,
    info: AssistantInfo,
    history: History,
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
    info = replace(info, completed=now_ms(), finish=finish, usage=processor.usage, error=message_error)
    processor.emitter.durable(MessageUpdated(info))
    history.add_step(processor.parts.values())
    return StepResult(
        info=info, processor=processor, calls=dispatcher.calls, declined=dispatcher.declined, error=error
    )


def _abandon(
    processor: StepProcessor,
    info: AssistantInfo,
    history: History,
    *,
    error: str,
    kind: str,
    interrupted: bool,
    message: MessageError,
) -> None:
    """Close a step that did not finish (cancelled, or a defect): fail its unsettled calls, complete its message.

    Synchronous on purpose: nothing here awaits, so a cancellation cannot cut it half-way. Best effort: a write the
    store refuses does not stop the rest (the store keeps its error and raises it from its next write or flush);
    every part is failed in memory and the step always reaches the history, so every call there has a result.
    """
    writes: tuple[Callable[[], object], ...] = (
        processor.close_blocks,
        lambda: processor.fail_unsettled(error, kind=kind, interrupted=interrupted),
        lambda: processor.emitter.durable(
            MessageUpdated(
                replace(
                    info,
                    completed=now_ms(),
                    finish=processor.finish_reason,
                    usage=processor.usage,
                    error=message,
                )
            )
        ),
    )
    for write in writes:
        try:
            write()
        except StoreError as exc:  # expected once the store failed: the turn raises it, no traceback to show
            log.debug("session %s: the store refused a write closing a step: %s", processor.session_id, exc)
        except Exception:
            log.warning(
                "session %s: a write failed while closing a step", processor.session_id, exc_info=True
            )
    history.add_step(processor.parts.values())

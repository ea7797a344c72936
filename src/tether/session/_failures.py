"""The failure policy of a step and of a turn: the one place in the runner that decides what an exception does.

Law 3: cancellation is not a result, and an unexpected exception is a defect. A tool's own defects never reach this
module: ``settle`` turns them into a failed call (``Tool execution failed: ...``, kind ``defect``). Everything else
that can go wrong while a turn runs is decided here, and nowhere else in ``tether.session`` catches broadly (other
sites catch only a typed, expected error: ``ProviderError`` from the stream, the permission outcomes of the
doom-loop gate, ``StoreError`` from a write that closes a step):

=============================================  ===============================================================
what                                           what it does
=============================================  ===============================================================
a call's runner-side work raises (a write      that call fails (``error``, ``Tool execution failed: ...``, kind
refused while settling it, the doom-loop gate  ``defect``); its siblings go on, never cancelled; the step raises
failing)                                       the first defect once every started call has settled
the store refuses a write (``StoreError``)     as above, and no further call of the step starts (law 12: nothing
                                               runs unrecorded); the step raises, so the turn stops
the model stream raises a ``ProviderError``    not a defect: the step finishes with it; the runner retries or
                                               raises it
the model stream raises anything else          the stream stops; started calls finish; every unsettled part fails
                                               as a defect; the message is completed with the error; the step
                                               joins the history; the exception is raised
closing the step raises (a refused write)      the step is closed as for a defect, and the exception is raised
cancellation (``Session.cancel``, an outer     propagates as cancellation; the step's calls get ``cancel_grace``
scope)                                         seconds for their cleanup, then unsettled parts become ``Tool
                                               execution aborted`` (``interrupted``); an outcome a tool still
                                               returns is dropped; the turn ends ``cancelled``
any exception out of the turn                  the turn's call tasks are cancelled and it is raised unwrapped
                                               (never an ``ExceptionGroup``)
=============================================  ===============================================================

Closing a step that did not finish is synchronous (nothing awaits, so a cancellation cannot cut it half-way) and
best effort: every part is failed in memory and the step always reaches the history, so every call there has a
result; a write the store refuses is logged (the store keeps its error and raises it from its next write).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any, TypeVar

import anyio

from ..errors import StoreError
from ..records import AssistantInfo, MessageError, MessageUpdated
from ..records.internal import ToolErrorKind, now_ms
from ..tools import Failed
from ._history import History
from ._pool import CallPool
from ._processor import StepProcessor
from ._prompts import ABORTED_ERROR, DEFECT_PREFIX

__all__ = ["StepFailures", "turn_calls"]

log = logging.getLogger("tether.session")

T = TypeVar("T")
R = TypeVar("R")


class StepFailures:
    """The failure policy of one step (see the module docstring): it guards the stream, each call and the close."""

    __slots__ = ("_grace", "_history", "_info", "_processor", "cancelled", "defect")

    def __init__(
        self, processor: StepProcessor, info: AssistantInfo, history: History, *, grace: float
    ) -> None:
        self._processor = processor
        self._info = info
        self._history = history
        self._grace = grace
        self.cancelled = False
        """The step was cancelled: an outcome a call still returns is dropped (law 3)."""
        self.defect: Exception | None = None
        """The first defect of the step (raised when it closes)."""

    @property
    def store_failed(self) -> bool:
        """Whether the store refused a write in this step: no further call may start (law 12)."""
        return isinstance(self.defect, StoreError)

    async def run(
        self,
        work: Callable[[], Awaitable[T]],
        wait: Callable[[], Awaitable[None]],
        finish: Callable[[T | None], R],
    ) -> R:
        """Run the step: ``work`` (the stream), then ``wait`` for its calls, then ``finish`` (close it normally).

        Raises:
            Cancelled: the step was cancelled (after its unsettled parts were marked aborted).
            Exception: the first defect of the stream, a call or the close (after the step was closed).
        """
        try:
            result = await self.contain(work)
            await wait()
        except anyio.get_cancelled_exc_class():
            # The cancellation reached the calls too; each gets the grace to run its cleanup (a shell tool kills and
            # reaps its process group) before its part is marked. A call still cleaning up then is marked anyway.
            self.cancelled = True
            with anyio.move_on_after(self._grace, shield=True):
                await wait()
            self._abandon(
                ABORTED_ERROR,
                kind="aborted",
                interrupted=True,
                message=MessageError(kind="aborted", message="The step was cancelled"),
            )
            raise
        if self.defect is None:
            try:
                return finish(result)
            except Exception as exc:  # the store refused a write: closed like any other defect below
                self.defect = exc
        defect = self.defect
        self._abandon(
            f"{DEFECT_PREFIX}{defect}",
            kind="defect",
            interrupted=False,
            message=MessageError(
                kind="store" if isinstance(defect, StoreError) else "error", message=str(defect)
            ),
        )
        raise defect

    async def contain(self, work: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``work``; a defect is recorded (the first one wins) and ``None`` returned. Cancellation propagates."""
        try:
            return await work()
        except Exception as exc:
            self.defect = self.defect or exc
            return None

    async def call(self, call_id: str, settle: Coroutine[Any, Any, None]) -> None:
        """Await one call's ``settle``; a defect fails that call only (siblings go on) and is recorded for the step.

        A call that has not started when the store has already refused a write never runs; the step fails it.
        """
        if self.store_failed:
            settle.close()
            return
        try:
            await settle
        except Exception as exc:
            self.defect = self.defect or exc
            failed = Failed(error=f"{DEFECT_PREFIX}{exc}", kind="defect")
            self._write(lambda: self._processor.settle(call_id, failed))

    def _abandon(self, error: str, *, kind: ToolErrorKind, interrupted: bool, message: MessageError) -> None:
        """Close a step that did not finish: fail its unsettled calls, complete its message, add it to the history."""
        processor = self._processor
        self._write(processor.close_blocks)
        self._write(lambda: processor.fail_unsettled(error, kind=kind, interrupted=interrupted))
        info = replace(
            self._info,
            completed=now_ms(),
            finish=processor.finish_reason,
            usage=processor.usage,
            error=message,
        )
        self._write(lambda: processor.emitter.durable(MessageUpdated(info)))
        self._history.add_step(processor.parts.values())

    def _write(self, write: Callable[[], object]) -> None:
        # Best effort: the part changes in memory whatever the store says (see the module docstring).
        try:
            write()
        except StoreError as exc:  # expected once the store failed: the turn raises it, no traceback to show
            log.debug("session %s: the store refused a write closing a call or step: %s", self._session, exc)
        except Exception:
            log.warning("session %s: a write failed closing a call or step", self._session, exc_info=True)

    @property
    def _session(self) -> str:
        return self._processor.session_id


@asynccontextmanager
async def turn_calls() -> AsyncGenerator[CallPool]:
    """The turn's call tasks; an exception out of the turn cancels them and is raised unwrapped."""
    failure: Exception | None = None
    async with anyio.create_task_group() as call_tasks:
        pool = CallPool(call_tasks)
        try:
            yield pool
        except Exception as exc:
            # Raised again below, outside the task group, so the caller sees it unwrapped (not an ExceptionGroup).
            failure = exc
            call_tasks.cancel_scope.cancel()
        finally:
            pool.close()
    if failure is not None:
        raise failure

"""Dispatch: settle each tool call as soon as its input is complete, concurrently, on the turn's call tasks.

A call runs the tool captured by its step's materialization (law 5). Outcomes are written to the call's part the
moment they exist; the parts (and so the results the model reads) keep the model's order whatever order the calls
finish in. One call's failure never affects a sibling.

Before settling, two runner-level checks apply: an ``incomplete`` call (the response was cut off mid-arguments), an
``invalid`` one (its arguments did not parse: the event carries the adapter's one parse, never redone here) and one
whose arguments hold a lone surrogate fail without running, and the third identical call in a row (same tool, same input) asks the ``doom_loop`` permission.
A ``declined`` outcome (the user rejected without feedback) marks the step so the runner stops after it.

Calls run on the turn's :class:`~tether.session._pool.CallPool` (long-lived tasks of the turn's task group, see
``_pool.py``), each on its task's :class:`~tether.tools.internal.Lane`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.lowlevel import checkpoint

from ..errors import BlockedError, CorrectedError, DeclinedError
from ..llm import ToolCallEvent
from ..location import PermissionAsserter
from ..permissions import PermissionRequest
from ..records import ToolProgress
from ..storable import has_surrogates, visible
from ..tools import Failed, Outcome, ToolCall, ToolContext
from ..tools.internal import DECLINED_ERROR, Asker, Expiry, Lane, Materialization
from ._pool import CallPool
from ._processor import StepProcessor
from ._prompts import DOOM_LOOP_BLOCKED, INCOMPLETE_CALL_ERROR

if TYPE_CHECKING:
    from ._failures import StepFailures

__all__ = ["DOOM_LOOP_THRESHOLD", "CallPool", "Dispatcher", "DoomLoopDetector", "PermissionAsserter"]

DOOM_LOOP_THRESHOLD = 3

SURROGATE_INPUT_ERROR = (
    "Invalid input: the arguments contain text that is not valid Unicode (a lone surrogate escape such as \\ud800). "
    "Nothing was run. Send the arguments as valid text; a file name shown with an escape like \\xff is passed "
    "exactly as shown."
)


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a JSON value holds a string that cannot be encoded as UTF-8 (a tool must never act on it: a path
    mangled into valid text could name a different existing file). ASCII strings are checked in O(1)."""
    if isinstance(value, str):
        return has_surrogates(value)
    if isinstance(value, dict):
        # A loop, not any() over a generator: every call's input passes here (a flat object of strings, mostly).
        for k, v in value.items():  # pyright: ignore[reportUnknownVariableType]
            if (isinstance(k, str) and has_surrogates(k)) or (
                has_surrogates(v) if isinstance(v, str) else _has_lone_surrogate(v)
            ):
                return True
        return False
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)  # pyright: ignore[reportUnknownVariableType]
    return False


def _invalid_arguments(event: ToolCallEvent) -> str:
    """What the model reads for a call whose arguments did not parse (``event.invalid`` says why)."""
    raw = event.input if isinstance(event.input, str) else repr(event.input)
    echo = raw if len(raw) <= 2_000 else raw[:2_000] + "…"
    return visible(
        f'Invalid input for tool "{event.name}":\n- {event.invalid}\nArguments received: {echo}\n'
        "Nothing was run. Update the arguments and call the tool again."
    )


class DoomLoopDetector:
    """Counts identical consecutive calls (same tool name, equal input) across a session's steps.

    Inputs are compared with ``==`` (JSON values: key order does not matter), holding a reference to the last input;
    nothing here mutates inputs.
    """

    __slots__ = ("_count", "_input", "_name")

    def __init__(self) -> None:
        self._name: str | None = None
        self._input: Any = None
        self._count = 0

    def check(self, name: str, value: Any) -> bool:
        """Record a call; true when it is the third (or later) identical call in a row."""
        if name == self._name and _same(value, self._input):
            self._count += 1
        else:
            self._name = name
            self._input = value
            self._count = 1
        return self._count >= DOOM_LOOP_THRESHOLD


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # an exotic input whose __eq__ fails is simply not a repeat
        return False


def permission_asker(permissions: PermissionAsserter) -> Asker:
    """What ``ToolContext.ask`` calls: a request built from the call's context, asserted like a built-in's."""

    async def ask(
        ctx: ToolContext[Any],
        action: str,
        resources: tuple[str, ...],
        save: tuple[str, ...],
        metadata: Mapping[str, Any] | None,
    ) -> None:
        request = PermissionRequest.from_context(
            ctx, action=action, resources=resources, save=save, metadata=metadata
        )
        await permissions.assert_(request)

    return ask


class Dispatcher:
    """Settles each local tool call of one step on the turn's :class:`CallPool` and records its outcome on its part."""

    __slots__ = (
        "_agent",
        "_asker",
        "_deps",
        "_done",
        "_doom",
        "_failures",
        "_limiter",
        "_materialization",
        "_outstanding",
        "_permissions",
        "_pool",
        "_processor",
        "_root",
        "calls",
        "declined",
    )

    def __init__(
        self,
        pool: CallPool,
        *,
        materialization: Materialization,
        processor: StepProcessor,
        agent: str,
        doom: DoomLoopDetector,
        permissions: PermissionAsserter | None,
        failures: StepFailures,
        limiter: anyio.CapacityLimiter | None = None,
        root: Path | None = None,
        deps: Any = None,
    ) -> None:
        self._pool = pool
        self._root = root
        self._deps = deps
        self._asker = None if permissions is None else permission_asker(permissions)
        self._failures = failures
        self._materialization = materialization
        self._processor = processor
        self._agent = agent
        self._doom = doom
        self._permissions = permissions
        self._limiter = limiter
        self._outstanding = 0
        self._done: anyio.Event | None = None
        self.calls = 0
        self.declined = False

    def start(self, event: ToolCallEvent) -> None:
        """Begin settling ``event`` (the doom-loop check runs now, in the model's order)."""
        self.calls += 1
        doom = False
        if not event.incomplete and not self._materialization.final_step:
            doom = self._doom.check(event.name, event.input)
        self._outstanding += 1
        self._pool.submit(lambda lane: self._run(event, doom, lane))

    async def wait(self) -> None:
        """Return when every started call has settled."""
        if self._outstanding:
            # One pass of the loop first: the tasks woken for the calls run before this task resumes, so a call that
            # settles without waiting (most) is over by then, and the step goes on without an event of its own and
            # a second pass of the loop to be woken by it.
            await checkpoint()
            if self._outstanding:
                done = self._done = self._pool.event()
                await done.wait()

    async def _run(self, event: ToolCallEvent, doom: bool, lane: Lane) -> None:
        # The step's failure policy decides what an exception here does (``_failures``): never a sibling's business.
        try:
            await self._failures.call(event.id, self._settle(event, doom, lane))
        finally:
            if lane.expiry is None:  # else the call timed out: the lane's task finishes it (``Lane.expiry``)
                self._one_done()

    def _one_done(self) -> None:
        self._outstanding -= 1
        if self._outstanding == 0 and self._done is not None:
            self._done.set()

    async def _settle(self, event: ToolCallEvent, doom: bool, lane: Lane) -> None:
        processor = self._processor
        outcome: Outcome | None = None
        if event.incomplete:
            outcome = Failed(error=INCOMPLETE_CALL_ERROR, kind="invalid_input")
        elif event.invalid is not None:  # the adapter's one parse failed: not parsed again, never run (law 2)
            outcome = Failed(error=_invalid_arguments(event), kind="invalid_input")
        elif _has_lone_surrogate(event.input):
            outcome = Failed(error=SURROGATE_INPUT_ERROR, kind="invalid_input")
        else:
            ctx = ToolContext(
                session_id=processor.session_id,
                agent=self._agent,
                message_id=processor.message_id,
                call_id=event.id,
                progress=self._progress(event.id),
                record_permission=processor.recorder(event.id),
                deps=self._deps,
                location_root=self._root,
                asker=self._asker,
            )
            if doom:
                outcome = await self._doom_gate(event, ctx)
            if outcome is None:
                call = ToolCall(call_id=event.id, name=event.name, input=event.input)
                try:
                    if self._limiter is None:
                        outcome = await self._materialization.settle(call, ctx, lane=lane)
                    else:
                        async with self._limiter:
                            outcome = await self._materialization.settle(call, ctx, lane=lane)
                except anyio.get_cancelled_exc_class():
                    if lane.expired:  # the call's deadline: unwound to the lane's scope, finished out of it
                        lane.expiry = self._expiry(event, call, ctx, lane)
                    raise
        self._record(event.id, outcome)

    def _expiry(self, event: ToolCallEvent, call: ToolCall, ctx: ToolContext, lane: Lane) -> Expiry:
        async def record() -> None:
            self._record(event.id, await self._materialization.expired(call, ctx, lane))

        async def expired() -> None:
            try:
                await self._failures.call(event.id, record())
            finally:
                self._one_done()

        return Expiry(expired, self._one_done)

    def _record(self, call_id: str, outcome: Outcome) -> None:
        if self._failures.cancelled:
            return  # the step was cancelled: the part becomes aborted, whatever the tool still returned (law 3)
        if isinstance(outcome, Failed) and outcome.kind == "declined":
            self.declined = True
        self._processor.settle(call_id, outcome)

    def _progress(self, call_id: str) -> Any:
        # Tools call ``progress`` from worker threads too (bash's pump thread, sync tools); bus subscribers (SSE,
        # memory streams) must run on the event loop, so an update from another thread is handed to the loop.
        processor = self._processor
        live = processor.emitter.live
        pool = self._pool
        loop_thread = pool.loop_thread

        def deliver(event: ToolProgress) -> None:
            processor.note_progress(call_id, event.update)  # an aborted part keeps the last output
            live(event)

        def progress(update: Mapping[str, Any]) -> None:
            event = ToolProgress(
                session_id=processor.session_id,
                message_id=processor.message_id,
                call_id=call_id,
                update=update,
            )
            if threading.get_ident() == loop_thread:
                deliver(event)
            else:
                pool.call_soon(deliver, event)

        return progress

    async def _doom_gate(self, event: ToolCallEvent, ctx: ToolContext) -> Failed | None:
        if self._permissions is None:
            return Failed(error=DOOM_LOOP_BLOCKED, kind="blocked")
        request = PermissionRequest.from_context(
            ctx,
            action="doom_loop",
            resources=(event.name,),
            save=(event.name,),
            metadata={"tool": event.name, "input": event.input},
        )
        try:
            await self._permissions.assert_(request)
        except BlockedError as exc:
            return Failed(error=exc.message, kind="blocked")
        except CorrectedError as exc:
            return Failed(error=exc.message, kind="corrected")
        except DeclinedError:
            return Failed(error=DECLINED_ERROR, kind="declined")
        return None

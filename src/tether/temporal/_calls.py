"""The tool call activity: settle one call on a worker, write its part, and never run a finished call twice.

The call id is the activity's idempotency key. The activity reads the call's part from the store first:

* a settled part is the answer (a completed call never executes again, whoever asks);
* a part still ``running`` on a second attempt means the worker that ran it died: an idempotent tool
  (``Tool(idempotent=True)``) runs again, any other call is written ``interrupted`` (``Tool execution interrupted``,
  as the store's crash recovery writes it) and the model reads that;
* a part the store's recovery already marked interrupted is opened again only to re-run it (after an ask was
  answered, or for an idempotent tool).

A permission ask or a question never holds the worker: the activity answers it from the answers the workflow gave
(matched by what is asked, as the call asks the same things in the same order when it runs again); an ask with no
answer stops the call (its settle is cancelled before the tool acts, law 4) and returns ``ask`` to the workflow,
which waits for a person and runs the call again with the answer.

While it runs the activity heartbeats (every :data:`HEARTBEAT_SECONDS`), so a dead worker is noticed within the
heartbeat timeout, and a workflow's cancellation reaches the tool as cancellation (law 3) within about a second: the
part becomes aborted and the cancellation propagates.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from temporalio import activity

from ..content import text_of
from ..errors import BlockedError, CorrectedError, DeclinedError, NotFoundError
from ..permissions import PermissionAsked, PermissionRequest
from ..records.internal import now_ms
from ..session import QuestionAsked, ToolPart
from ..session.internal import ABORTED_ERROR, Emitter, StepProcessor, permission_asker, resolve_agent
from ..session.internal import model_catalog as _model_catalog
from ..store import StoredMessage
from ..store.internal import INTERRUPTED_ERROR
from ..tools import Failed, Outcome, ToolCall, ToolContext
from ..tools.internal import DECLINED_ERROR
from ._faults import fault
from ._types import Answer, AskInfo, CallOutcome, CallRequest, CallSpec
from ._workflow import CALL

if TYPE_CHECKING:
    from .._runtime import Runtime
    from ..llm import Model

__all__ = ["HEARTBEAT_SECONDS", "CallActivity", "adopt", "beat_every", "find_message", "heartbeating"]

_T = TypeVar("_T")

HEARTBEAT_SECONDS = 0.5
"""The longest time between two heartbeats of a running activity, and the worker's cap on how long the SDK holds a
heartbeat back (``max_heartbeat_throttle_interval``, ``_worker.py``). Temporal hands an activity its cancellation
only in a heartbeat's response, so this, not the heartbeat timeout, bounds how long a cancelled turn's call (a bash
command in ``sleep``) goes on: the SDK's own throttle, 0.8 of a 30 s timeout, made a Ctrl-C wait 24 s for it
(docs/temporal.md, Cancellation)."""


def beat_every() -> float:
    """Seconds between two heartbeats of the running activity: :data:`HEARTBEAT_SECONDS`, or a third of its heartbeat
    timeout when that is shorter (a dead worker is noticed within the timeout)."""
    timeout = activity.info().heartbeat_timeout
    if timeout is None:
        return HEARTBEAT_SECONDS
    return min(HEARTBEAT_SECONDS, timeout.total_seconds() / 3)


async def heartbeating(body: Callable[[], Awaitable[_T]]) -> _T:
    """Run ``body`` while heartbeating (:func:`beat_every`): a worker that dies (or whose event loop is stuck) stops,
    and Temporal retries the activity elsewhere after the timeout; a cancel reaches ``body`` within about a second.

    What ``body`` raises is raised as it is (not wrapped in the task group's ``ExceptionGroup``): an activity's
    ``ApplicationError`` must reach Temporal as it was raised (``non_retryable``).
    """
    every = beat_every()
    failure: Exception | None = None
    result: list[_T] = []

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await anyio.sleep(every)

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        try:
            result.append(await body())
        except Exception as exc:  # re-raised unchanged below, outside the task group
            failure = exc
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result[0]


def find_message(stored: Sequence[StoredMessage], message_id: str) -> StoredMessage | None:
    for message in reversed(stored):
        if message.info.id == message_id:
            return message
    return None


def adopt(processor: StepProcessor, part: ToolPart) -> None:
    """Make ``processor`` hold a tool part read from the store, as if it had written it."""
    processor.parts[part.id] = part
    processor._tools[part.call_id] = part.id  # pyright: ignore[reportPrivateUsage]


def permission_key(action: str, resources: Sequence[str]) -> str:
    return json.dumps(["permission", action, list(resources)])


def question_key(questions: list[dict[str, Any]]) -> str:
    return json.dumps(["question", questions], sort_keys=True)


class CallActivity:
    """The ``tether.tool_call`` activity on one worker's runtime (see the module docstring)."""

    def __init__(self, runtime: Runtime, emitter: Emitter, model: Callable[[str], Model]) -> None:
        self._rt = runtime
        self._emitter = emitter
        self._model = model

    @activity.defn(name=CALL)
    async def tool_call(self, request: CallRequest) -> CallOutcome:
        rt = self._rt
        spec = request.call
        # the one message, by key: a call's lookup does not grow with the session (law 10)
        message = await rt.store.load_message(request.session_id, request.message_id)
        part = None
        if message is not None:
            part = next(
                (p for p in message.parts if isinstance(p, ToolPart) and p.call_id == spec.call_id), None
            )
        if part is None:
            raise NotFoundError(f"No tool part for call {spec.call_id} in message {request.message_id}")
        processor = StepProcessor(self._emitter, session_id=request.session_id, message_id=request.message_id)
        adopt(processor, part)
        again = activity.info().attempt > 1  # the worker of an earlier attempt died (or the attempt failed)
        if part.settled:
            recovered = part.error_kind == "interrupted"
            # interrupted by the store's recovery before any activity started it (its step's worker died): it runs
            never_started = recovered and part.started is None
            if not (recovered and (never_started or request.rerun or (again and spec.idempotent))):
                return _outcome(part)
        elif part.state == "running" and again and not spec.idempotent:
            # started by an earlier attempt whose worker died: it may have acted, so it never runs again
            interrupted = processor.put(
                replace(
                    part,
                    state="error",
                    error=INTERRUPTED_ERROR,
                    error_kind="interrupted",
                    interrupted=True,
                    ended=now_ms(),
                )
            )
            await rt.store.flush()
            assert isinstance(interrupted, ToolPart)
            return _outcome(interrupted)
        if part.state != "running" or part.settled:
            # the start is committed before the tool runs: a call is started at most once (law 14)
            processor.put(
                replace(
                    part,
                    state="running",
                    error=None,
                    error_kind=None,
                    interrupted=False,
                    started=now_ms(),
                    ended=None,
                )
            )
            await rt.store.flush()
            fault("call-started")
        outcome = await self._run(request, processor)
        await rt.store.flush()
        fault("call-stored")
        return outcome

    async def _run(self, request: CallRequest, processor: StepProcessor) -> CallOutcome:
        rt = self._rt
        spec = request.call
        session = await rt.sessions.get(request.session_id)
        info = session.info
        agent = resolve_agent(rt.agents, info.agent)
        rules = (*agent.rules, *info.rules) if info.rules else agent.rules
        # the per-model catalog rules, as the step advertised the tools
        visible = _model_catalog(rt.sessions.service.catalog, self._model(request.model))
        materialization = session.tools.materialize(rules, visible=visible)
        ctx = ToolContext(
            session_id=info.id,
            agent=agent.name,
            message_id=request.message_id,
            call_id=spec.call_id,
            record_permission=processor.recorder(spec.call_id),
            deps=session.deps,
            location_root=session.location.root,
            asker=permission_asker(rt.permissions),
        )
        answers = {a.key: a for a in request.answers}
        needed: list[AskInfo] = []
        scope = anyio.CancelScope()
        send, receive = anyio.create_memory_object_stream[Any](64)

        this_call = (request.session_id, request.message_id, spec.call_id)

        def asked(event: Any) -> None:
            # the bus carries every session's asks on this worker: a call id alone is not unique across sessions
            if _asker(event) == this_call:
                send.send_nowait(event)

        async def answer() -> None:
            async for event in receive:
                if isinstance(event, QuestionAsked) and not request.answers_questions:
                    # no person behind the submitter: the question fails as in an in-process run without one
                    await rt.questions.unanswerable(event.request.id)
                    continue
                if not await self._answer(event, answers):
                    needed.append(_ask_info(event, spec.call_id))
                    scope.cancel()  # the tool has not acted (it asks first): stop it and wait for a person

        async def beat(every: float) -> None:
            while True:
                activity.heartbeat()
                await anyio.sleep(every)

        every = beat_every()  # a turn's cancel reaches the tool within about a second
        outcome: Outcome | None = None
        with send, receive, rt.bus.subscribe(PermissionAsked, asked), rt.bus.subscribe(QuestionAsked, asked):
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(answer)
                    tg.start_soon(beat, every)
                    with scope:
                        if spec.doom:
                            outcome = await self._doom_gate(spec, ctx)
                        if outcome is None:
                            outcome = await materialization.settle(
                                ToolCall(call_id=spec.call_id, name=spec.name, input=spec.input), ctx
                            )
                    tg.cancel_scope.cancel()
            except anyio.get_cancelled_exc_class():
                # Cancelled by the workflow (or the worker shuts down): the part is aborted, unless the worker is
                # going away, when the next attempt on another worker decides (interrupted, or a re-run).
                with anyio.CancelScope(shield=True):
                    if not activity.is_worker_shutdown():
                        processor.fail_unsettled(ABORTED_ERROR, kind="aborted", interrupted=True)
                    await rt.store.flush()
                raise
        if outcome is None:
            return CallOutcome(call_id=spec.call_id, status="ask", ask=needed[0])
        fault("call-ran")
        part = processor.settle(spec.call_id, outcome)
        assert part is not None
        return _outcome(part)

    async def _doom_gate(self, spec: CallSpec, ctx: ToolContext) -> Failed | None:
        """The third identical call in a row asks ``doom_loop`` first, as in a live session (``_dispatch``)."""
        request = PermissionRequest.from_context(
            ctx,
            action="doom_loop",
            resources=(spec.name,),
            save=(spec.name,),
            metadata={"tool": spec.name, "input": spec.input},
        )
        try:
            await self._rt.permissions.assert_(request)
        except BlockedError as exc:
            return Failed(error=exc.message, kind="blocked")
        except CorrectedError as exc:
            return Failed(error=exc.message, kind="corrected")
        except DeclinedError:
            return Failed(error=DECLINED_ERROR, kind="declined")
        return None

    async def _answer(self, event: Any, answers: dict[str, Answer]) -> bool:
        """Answer an ask from the workflow's answers; false when no one has answered it yet."""
        rt = self._rt
        if isinstance(event, PermissionAsked):
            request = event.request.request
            given = answers.get(permission_key(request.action, request.resources))
            if given is None:
                return False
            await rt.permissions.reply(event.request.id, given.reply, given.message)
            return True
        pending = event.request
        given = answers.get(question_key([q.to_json() for q in pending.questions]))
        if given is None:
            return False
        if given.reply == "reject" or given.answers is None:
            await rt.questions.reject(pending.id)
        else:
            await rt.questions.reply(pending.id, given.answers)
        return True


def _asker(event: Any) -> tuple[str, str | None, str | None]:
    """The call an ask comes from: session, message and call id."""
    pending = event.request
    if isinstance(event, QuestionAsked):
        return (pending.session_id, pending.message_id, pending.call_id)
    request = pending.request
    source = request.source
    return (
        (request.session_id, None, None)
        if source is None
        else (request.session_id, source.message_id, source.call_id)
    )


def _ask_info(event: Any, call_id: str) -> AskInfo:
    pending = event.request
    if isinstance(event, PermissionAsked):
        request = pending.request
        return AskInfo(
            id=pending.id,
            key=permission_key(request.action, request.resources),
            kind="permission",
            call_id=call_id,
            request=pending.to_json(),
        )
    return AskInfo(
        id=pending.id,
        key=question_key([q.to_json() for q in pending.questions]),
        kind="question",
        call_id=call_id,
        request=pending.to_json(),
    )


def _outcome(part: ToolPart) -> CallOutcome:
    return CallOutcome(
        call_id=part.call_id,
        status="completed" if part.state == "completed" else "error",
        content=text_of(part.content),
        error=part.error,
        error_kind=part.error_kind,
    )

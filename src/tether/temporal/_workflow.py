"""The turn workflow: the step loop of ``session/_runner.py`` as a deterministic Temporal workflow.

What runs here is only the turn's decisions: which step comes next, which calls run (in parallel, one activity each),
when a call waits for a person, when the turn stops. Everything that touches the world (the store, the model, the
tools, the clock, ids) runs in activities (``_activities.py``); this module reads nothing but its inputs and the
activities' results, so a replay on any worker takes the same path.

A call that must ask a person comes back from its activity as ``ask``: the workflow publishes the ask (the ``asks``
query), waits on :meth:`TurnWorkflow.answer` (an update; no worker is held while it waits, for as long as it takes),
and runs the call again with every answer so far. Cancelling the workflow cancels the running call activities (they
mark their parts aborted), then one last activity closes the step, and the turn ends ``cancelled``.

Every update and query carries a payload signed with the workers' key (``_codec.py``, docs/temporal.md "Trust
boundary"): one unsigned or signed with another key never converts, so the SDK rejects the update or fails the query
before a handler runs; one that carries no payload at all is refused by the query itself or the update's validator.
The turn takes no signals: each is dropped. Every refusal is one ``WARNING`` line on the ``tether.temporal`` logger.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ApplicationError, is_cancelled_exception
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from ._types import (
        Answer,
        AnswerInput,
        AskInfo,
        AsksQuery,
        BeginRequest,
        BeginResult,
        CallOutcome,
        CallRequest,
        CallSpec,
        CloseRequest,
        HoldInput,
        HoldRequest,
        HoldState,
        StepRequest,
        StepResult,
        TurnEvent,
        TurnInput,
        TurnOutput,
    )

__all__ = ["BEGIN", "CALL", "CLOSE", "DOOM_LOOP_THRESHOLD", "HOLD", "STEP", "WORKFLOW", "TurnWorkflow"]

WORKFLOW = "tether.turn"
BEGIN = "tether.begin_turn"
STEP = "tether.model_step"
CALL = "tether.tool_call"
CLOSE = "tether.close_step"
HOLD = "tether.hold_session"
CLAIM_PATCH = "session-claim"
"""Turns started before the session claim existed replay without it."""

DOOM_LOOP_THRESHOLD = 3
"""As the in-process runner's (``session/_dispatch.py``): a test pins the two equal."""
_NO_DEADLINE = 24 * 3600.0
"""A call's start-to-close when its tool has no timeout: heartbeats still find a dead worker within seconds."""
_MARGIN = 30.0
"""Seconds past the tool's own timeout before Temporal gives up: settle's "timed out" failure must come first."""
_SHORT = timedelta(minutes=2)
_STEP = timedelta(minutes=30)
_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10), maximum_attempts=10
)
"""An attempt fails mostly because its worker died or its store failed (a provider's error is returned, not raised):
another worker takes it over, so attempts are many, and each finds what the earlier ones stored (no work twice)."""
_CALL_RETRY = _RETRY
"""A call's later attempt reports it interrupted or, for an idempotent tool, runs it again (never twice)."""
_HOLD_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=10)
)
"""A dead worker's hold moves to another worker (its claim is taken over there); "busy" is never retried."""
_HOLD_DEADLINE = timedelta(days=366)
_T = TypeVar("_T")
_log = logging.getLogger("tether.temporal")


@workflow.defn(name=WORKFLOW)
class TurnWorkflow:
    """One turn of one session (see the module docstring)."""

    def __init__(self) -> None:
        self._events: list[TurnEvent] = []
        self._asks: dict[str, AskInfo] = {}
        self._answers: dict[str, Answer] = {}
        self._session_id: str | None = None
        self._repeat: tuple[str, str, int] = ("", "", 0)  # the last call's tool, input and how many in a row
        self._held = False  # the hold activity has the session's claim
        self._hold_handle: workflow.ActivityHandle[None] | None = None
        self._claiming: str | None = None  # the session the hold activity claims (its ``hold`` must name it)
        self._ending = False  # the turn is over: the hold releases the claim

    # -- what a client reads and sends -------------------------------------------------------------------------------
    # The checks of a signed payload live in the queries and the update validators only: neither runs on replay, so a
    # history recorded before updates carried one (``hold`` had no payload) replays through the same handler bodies,
    # and no ``workflow.patched`` is needed (tests/temporal/test_strangers.py replays such histories).

    @workflow.query(name="events")
    def events(self, after: int | None = None) -> list[TurnEvent]:
        """The turn's events from index ``after`` on."""
        return self._events[_signed("events query", after, int) :]

    @workflow.query(name="asks")
    def asks(self, request: AsksQuery | None = None) -> list[AskInfo]:
        """The asks waiting for an answer, oldest first (``request`` says nothing but its signature)."""
        _signed("asks query", request, AsksQuery)
        return list(self._asks.values())

    @workflow.update(name="answer")
    def answer(self, given: AnswerInput | None = None) -> None:
        """Answer a waiting ask; its call runs again with the answer."""
        assert given is not None  # the validator refused an answer without a payload
        ask = self._asks.pop(given.ask_id)
        self._answers[ask.id] = Answer(
            key=ask.key, kind=ask.kind, reply=given.reply, message=given.message, answers=given.answers
        )
        self._emit("answer", id=ask.id, reply=given.reply)

    @answer.validator
    def _check_answer(self, given: AnswerInput | None = None) -> None:
        given = _signed("answer update", given, AnswerInput)
        ask = self._asks.get(given.ask_id)
        if ask is None:
            raise ValueError(f"No waiting ask {given.ask_id} in this turn (answered already, or never asked)")
        if given.reply not in ("once", "always", "reject"):
            raise ValueError(f"A reply is once, always or reject; got {given.reply!r}")
        if ask.kind == "question" and given.reply != "reject":
            count = len(ask.request.get("questions", ()))
            if given.answers is None or len(given.answers) != count:
                raise ValueError(f"Answer {ask.id} with one list of answers per question ({count} lists)")

    @workflow.update(name="hold")
    async def hold(self, claim: HoldInput | None = None) -> None:
        """Sent by the hold activity once it has the session's claim; returns when the turn is over. (``None`` only
        in histories recorded before the claim was signed: the validator refuses it now.)"""
        self._held = True
        await workflow.wait_condition(lambda: self._ending)

    @hold.validator
    def _check_hold(self, claim: HoldInput | None = None) -> None:
        claim = _signed("hold update", claim, HoldInput)
        if claim.run_id != workflow.info().run_id or claim.session_id != self._claiming:
            raise _refusal(
                "hold update",
                f"it claims session {claim.session_id} for the run {claim.run_id}, not what this run claims "
                f"({self._claiming or 'nothing yet'} for {workflow.info().run_id}): a claim copied from another turn",
            )
        if self._held:
            # A retried hold activity (its first worker died) that raced the query below. Accepting it would record
            # an update accepted beside other commands of a busy turn, which the SDK does not replay (TMPRL1100
            # "Update machine does not handle this event", docs/temporal.md "Determinism"); a rejected update leaves
            # nothing in the history.
            raise ValueError(
                f"The turn already holds session {claim.session_id}: wait for its end with hold_state"
            )

    @workflow.query(name="hold_state")
    def hold_state(self, claim: HoldInput | None = None) -> HoldState:
        """Whether the turn waits for its claim (``waiting``), has it (``held``) or is over (``ending``): what a retried
        hold activity asks instead of sending ``hold`` again."""
        _signed("hold_state query", claim, HoldInput)
        return HoldState(state="ending" if self._ending else "held" if self._held else "waiting")

    @workflow.signal(dynamic=True)
    def dropped(self, name: str, args: Sequence[RawValue]) -> None:
        """The turn takes no signals: each one, signed or not, is dropped with a line in the log."""
        if not workflow.unsafe.is_replaying():
            _log.warning(
                "Dropped the signal %r sent to the turn %s: a turn takes no signals (docs/temporal.md, Trust boundary)",
                name,
                workflow.info().workflow_id,
            )

    # -- the turn ----------------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, turn: TurnInput) -> TurnOutput:
        claim = workflow.patched(CLAIM_PATCH)
        closed = False
        try:
            if claim and turn.session_id is not None:  # claimed before anything is written
                await self._hold(turn.session_id, turn)
            return await self._turn(turn, claim and turn.session_id is None)
        except GeneratorExit:
            # a worker dropped this run from its cache without cancelling it (its shutdown): the coroutine is closed
            # outside any event loop, where awaiting fails; the run goes on wherever its history is replayed
            closed = True
            raise
        finally:
            self._ending = True
            if self._hold_handle is not None and not closed:  # a lost claim does not change the turn's end
                await asyncio.wait([self._hold_handle])

    async def _hold(self, session_id: str, turn: TurnInput) -> None:
        """Start the activity that claims the session for the turn, and wait until it has (or was refused)."""
        handle = workflow.start_activity(
            HOLD,
            HoldRequest(session_id=session_id),
            start_to_close_timeout=_HOLD_DEADLINE,
            heartbeat_timeout=timedelta(seconds=turn.heartbeat_timeout),
            retry_policy=_HOLD_RETRY,
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        self._hold_handle = handle
        self._claiming = session_id
        await workflow.wait_condition(lambda: self._held or handle.done())
        if not self._held:
            self._hold_handle = None
            await handle  # raises the refusal: "session ... is busy"

    async def _turn(self, turn: TurnInput, claim_new: bool) -> TurnOutput:
        # every activity heartbeats: a dead worker's attempt is retried after the heartbeat timeout, not _SHORT (the
        # timeouts are not part of the replayed decisions: histories without them replay alike)
        heartbeat = timedelta(seconds=turn.heartbeat_timeout)
        begin = await workflow.execute_activity(
            BEGIN,
            BeginRequest(turn=turn),
            result_type=BeginResult,
            start_to_close_timeout=_SHORT,
            heartbeat_timeout=heartbeat,
            retry_policy=_RETRY,
        )
        if claim_new:  # a session this turn created: no one else knew it before begin returned
            await self._hold(begin.session_id, turn)
        self._session_id = begin.session_id
        self._emit("session", session_id=begin.session_id)
        out = TurnOutput(session_id=begin.session_id, stop="done", steps=0, tool_calls=0, text="")
        message_id: list[str | None] = [None]
        try:
            await self._steps(turn, begin, out, message_id)
        except BaseException as exc:  # only to close the step after a cancellation; anything else propagates
            if not is_cancelled_exception(exc):
                raise
            await workflow.execute_activity(
                CLOSE,
                CloseRequest(session_id=begin.session_id, message_id=message_id[0]),
                start_to_close_timeout=_SHORT,
                heartbeat_timeout=heartbeat,
                retry_policy=_RETRY,
            )
            out.stop = "cancelled"
        self._emit("done", stop=out.stop)
        return out

    async def _steps(
        self, turn: TurnInput, begin: BeginResult, out: TurnOutput, current: list[str | None]
    ) -> None:
        step = 0
        attempt = 0
        heartbeat = timedelta(seconds=turn.heartbeat_timeout)
        while True:
            step += 1
            final = step >= begin.max_steps
            self._emit("step", step=step, final=final)
            result = await workflow.execute_activity(
                STEP,
                StepRequest(
                    session_id=begin.session_id,
                    parent_id=begin.user_message_id,
                    model=turn.model,
                    step=step,
                    final=final,
                    system=begin.system,
                    options=turn.options,
                    retry_attempt=attempt,
                ),
                result_type=StepResult,
                start_to_close_timeout=_STEP,
                heartbeat_timeout=heartbeat,
                retry_policy=_RETRY,
            )
            current[0] = result.message_id
            if not final:
                for spec in result.calls:
                    spec.doom = self._doom(spec)
            out.message_ids.append(result.message_id)
            out.steps = step
            if result.usage:
                _add_usage(out.usage, result.usage)
            if result.text:
                out.text = result.text
                self._emit("text", text=result.text)
            out.calls.extend(result.settled)
            for settled in result.settled:
                self._emit("call", **settled)
            outcomes = await asyncio.gather(
                *(
                    self._call(begin.session_id, result.message_id, spec, turn, heartbeat)
                    for spec in result.calls
                )
            )
            out.tool_calls += len(result.calls) + len(result.settled)
            for spec, outcome in zip(result.calls, outcomes, strict=True):
                out.calls.append(_turn_call(spec, outcome))
            if result.error is not None:
                if result.retry_in is None:
                    raise ApplicationError(result.error, type="ProviderError", non_retryable=True)
                attempt += 1
                self._emit("retry", attempt=attempt, message=result.error, retry_in=result.retry_in)
                step -= 1
                await workflow.sleep(result.retry_in)
                continue
            attempt = 0
            if any(o.error_kind == "declined" for o in outcomes) or any(
                c.get("error_kind") == "declined" for c in result.settled
            ):
                out.stop = "declined"
                return
            if final:
                out.stop = "max_steps"
                return
            if not result.calls and not result.settled:
                return

    async def _call(
        self, session_id: str, message_id: str, spec: CallSpec, turn: TurnInput, heartbeat: timedelta
    ) -> CallOutcome:
        answers: list[Answer] = []
        run = 0
        deadline = timedelta(seconds=(spec.timeout if spec.timeout is not None else _NO_DEADLINE) + _MARGIN)
        while True:
            run += 1
            outcome = await workflow.execute_activity(
                CALL,
                CallRequest(
                    session_id=session_id,
                    message_id=message_id,
                    call=spec,
                    model=turn.model,
                    answers=list(answers),
                    rerun=run > 1,
                    answers_questions=turn.answers_questions,
                ),
                result_type=CallOutcome,
                activity_id=f"{spec.call_id}.{run}",  # the call id is the activity's idempotency key
                start_to_close_timeout=deadline,
                heartbeat_timeout=heartbeat,
                retry_policy=_CALL_RETRY,
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
            ask = outcome.ask
            if outcome.status != "ask" or ask is None:
                self._emit("call", **_turn_call(spec, outcome))
                return outcome
            self._asks[ask.id] = ask
            self._emit("ask", id=ask.id, kind=ask.kind, call_id=spec.call_id, request=ask.request)
            await workflow.wait_condition(_answered(self._answers, ask.id))
            answers.append(self._answers.pop(ask.id))

    def _doom(self, spec: CallSpec) -> bool:
        """Whether ``spec`` is the third (or later) identical call in a row, across steps (``DoomLoopDetector``)."""
        value = json.dumps(spec.input, sort_keys=True, default=repr)
        name, last, count = self._repeat
        count = count + 1 if (spec.name, value) == (name, last) else 1
        self._repeat = (spec.name, value, count)
        return count >= DOOM_LOOP_THRESHOLD

    def _emit(self, event: Any, /, **data: Any) -> None:
        self._events.append(TurnEvent(kind=event, data=data))


def _signed(what: str, value: object, kind: type[_T]) -> _T:
    """``value``, the payload of ``what`` that the codec verified; a missing one is refused and logged (one the codec
    could not verify never converts, and one of another type fails to convert)."""
    if not isinstance(value, kind):
        raise _refusal(what, "it carries no payload with a valid tether signature (the sender lacks the key)")
    return value


def _refusal(what: str, why: str) -> ValueError:
    """The error refusing ``what`` (a validator's rejects the update, a query's fails it), logged once."""
    message = f"Refused the {what} of the turn {workflow.info().workflow_id}: {why} (docs/temporal.md, Trust boundary)"
    _log.warning("%s", message)
    return ValueError(message)


def _answered(answers: dict[str, Answer], ask_id: str) -> Callable[[], bool]:
    return lambda: ask_id in answers


def _turn_call(spec: CallSpec, outcome: CallOutcome) -> dict[str, Any]:
    return {
        "call_id": spec.call_id,
        "name": spec.name,
        "input": spec.input,
        "outcome": "completed" if outcome.status == "completed" else "error",
        "content": outcome.content,
        "error": outcome.error,
        "error_kind": outcome.error_kind,
    }


def _add_usage(total: dict[str, Any], usage: dict[str, Any]) -> None:
    for key, value in usage.items():
        if isinstance(value, int | float):
            total[key] = total.get(key, 0) + value

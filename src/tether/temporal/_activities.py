"""The turn's activities on a worker: begin the turn, run one model step, close a cancelled step.

Each writes the session store exactly as the in-process runner does (the same events through the same
``StepProcessor``), so ``tether session show`` shows a Temporal-run session like any other, and each waits for the
store (``flush``) before it returns: what the workflow records as done is durable first. The tool call activity is in
``_calls.py``.

Unlike the in-process runner, a worker keeps no session in memory between activities: a step reads the session's
history from the store (the step after it may run on another worker). That is the price of durability; the
in-process runner stays the fast path.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from temporalio import activity
from temporalio.client import (
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from .. import ids
from ..codemode import CodeMode
from ..content import text_of
from ..errors import NotFoundError, ProviderError, UsageError
from ..llm import AssistantMessage, ModelRequest, TextContent, ToolCallEvent
from ..permissions import DEFAULT_AGENT
from ..records import AssistantInfo, MessageError, UserInfo
from ..records.internal import now_ms
from ..session import (
    MessageUpdated,
    PartUpdated,
    Session,
    SessionUpdated,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
)
from ..session.internal import (
    ABORTED_ERROR,
    DEFAULT_MAX_STEPS,
    INCOMPLETE_CALL_ERROR,
    MAX_STEPS_PROMPT,
    SURROGATE_INPUT_ERROR,
    Emitter,
    History,
    StepProcessor,
    resolve_agent,
)
from ..session.internal import has_lone_surrogate as _has_lone_surrogate
from ..session.internal import invalid_arguments as _invalid_arguments
from ..session.internal import model_catalog as _model_catalog
from ..session.internal import session_title as _title
from ..session.internal import user_parts as _user_parts
from ..store import StoredMessage
from ..tools import Failed
from ._calls import CallActivity, adopt, find_message, heartbeating
from ._faults import fault
from ._types import (
    BeginRequest,
    BeginResult,
    CallSpec,
    CloseRequest,
    HoldInput,
    HoldRequest,
    HoldState,
    StepRequest,
    StepResult,
)
from ._workflow import BEGIN, CLOSE, HOLD, STEP

if TYPE_CHECKING:
    from .._runtime import Runtime
    from ..llm import Model
    from ..tools.internal import Materialization

__all__ = ["TurnActivities"]

log = logging.getLogger("tether.temporal")

_FINAL_TAIL = (AssistantMessage(content=(TextContent(text=MAX_STEPS_PROMPT),)),)
_TEST_MODEL_NAMES = ("replay", "replay/demo")
_TEST_MODULES = ("tether.testing", "tether.demo")


def _busy(message: str) -> ApplicationError:
    return ApplicationError(message, type="UsageError", non_retryable=True)


def _refused(name: str) -> ApplicationError:
    return ApplicationError(
        f"This worker does not run test models ({name!r}): a test model plays whatever its script says. Start the "
        "worker with --allow-test-models (tether worker) or allow_test_models=True to serve them",
        type="UsageError",
        non_retryable=True,
    )


class TurnActivities:
    """The activities of :class:`~tether.temporal.TurnWorkflow` on one worker's open :class:`~tether.Runtime`.

    Args:
        runtime: the worker's runtime (its store, tools, agents, permissions and questions).
        models: models by the name a turn gives (tests and applications with their own ``Model``).
        resolve: turns any other name into a model (default: a ``provider/model`` spec resolved with the runtime's
            config); called once per name.
        roots: the directories a turn's session may be in (or below); another is refused before anything is written.
        allow_test_models: whether ``resolve`` may give a test model (``scripted:<path>``, ``replay``, a model from
            ``tether.testing`` or ``tether.demo``): one plays whatever its script says, so off by default.
    """

    def __init__(
        self,
        runtime: Runtime,
        models: Mapping[str, Model] | None = None,
        resolve: Callable[[str], Model] | None = None,
        *,
        roots: Sequence[str | os.PathLike[str]] = (),
        allow_test_models: bool = False,
    ) -> None:
        self._rt = runtime
        self._models = dict(models or {})
        self._resolve = resolve if resolve is not None else runtime._resolve_model  # pyright: ignore[reportPrivateUsage]
        self._roots = tuple(Path(root).resolve() for root in roots)
        self._allow_test_models = allow_test_models
        self._emitter = Emitter(runtime.store, runtime.bus)
        self._calls = CallActivity(runtime, self._emitter, self.model)
        self._held: dict[str, str] = {}
        """Session id → the workflow whose turn this worker's store claims it for (the claim's owner is the store,
        shared by every turn on this worker: this map tells the turns apart)."""

    def all(self) -> list[Any]:
        """Every activity, to give ``temporalio.worker.Worker(activities=...)``."""
        return [self.begin_turn, self.model_step, self._calls.tool_call, self.close_step, self.hold_session]

    @activity.defn(name=HOLD)
    async def hold_session(self, request: HoldRequest) -> None:
        """Claim the session in the store for this turn and keep the claim until the turn ends (one session, one
        writer: an in-process ``tether run`` and another turn are refused meanwhile).

        The claim is this worker's store's, so it lasts as long as the worker does: the activity heartbeats, and when
        the worker dies its claim is gone (SQLite: its process; PostgreSQL: its lease) and the next attempt takes
        it over on another worker. The workflow's ``hold`` update (signed, naming the session and the run, so a
        claim copied from another turn is refused) tells the turn the claim is taken and returns when the turn is
        over; then the claim is released.

        Raises:
            ApplicationError: (non-retryable) ``UsageError``: a live owner runs the session (``session … is busy``)
                or it is in a directory this worker does not serve; ``NotFoundError``: no such session.
        """
        session_id = request.session_id
        info = activity.info()
        workflow_id, run_id = info.workflow_id, info.workflow_run_id
        assert workflow_id is not None and run_id is not None  # started by the turn workflow
        try:
            found = await self._rt.store.get_session(session_id)
        except NotFoundError as exc:
            raise ApplicationError(exc.message, type="NotFoundError", non_retryable=True) from exc
        self._check_directory(found.directory)  # nothing claimed for a turn this worker refuses
        holder = self._held.get(session_id)
        if holder is not None and holder != workflow_id:
            raise _busy(f"session {session_id} is busy (the Temporal turn {holder} runs it)")
        # taken before the first await: two turns of this worker on one session race here
        self._held[session_id] = workflow_id
        store = self._rt.store
        try:
            try:
                await store.claim(session_id)
            except UsageError as exc:
                raise _busy(exc.message) from exc
            timeout = info.heartbeat_timeout
            every = timeout.total_seconds() / 3 if timeout is not None else 5.0
            async with anyio.create_task_group() as tg:

                async def beat() -> None:
                    while True:
                        activity.heartbeat()
                        await anyio.sleep(every)

                tg.start_soon(beat)
                turn = activity.client().get_workflow_handle(workflow_id, run_id=run_id)
                claim = HoldInput(session_id=session_id, run_id=run_id)
                # a retry (the first attempt's worker died) tells the turn only if it still waits: a second "hold"
                # accepted while the turn runs would make its history unreplayable (_workflow._check_hold)
                ended = False
                if info.attempt == 1 or await _hold_state(turn, claim) == "waiting":
                    try:
                        await turn.execute_update("hold", claim)  # returns when the turn is over
                        ended = True
                    except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
                        cancelled = exc.__cause__
                        if isinstance(cancelled, anyio.get_cancelled_exc_class()):
                            # the SDK turns the activity's cancellation (its worker stopping) into this error: it
                            # stays a cancellation, and the next attempt takes the claim over (law 3)
                            raise cancelled from None
                        raise
                    except WorkflowUpdateFailedError:
                        if await _hold_state(turn, claim) == "waiting":
                            raise
                while not ended:
                    await anyio.sleep(_HOLD_POLL)
                    ended = await _hold_state(turn, claim) == "ending"
                tg.cancel_scope.cancel()
        finally:
            if self._held.get(session_id) == workflow_id:
                del self._held[session_id]
                with anyio.CancelScope(shield=True):
                    await store.release(session_id)

    def model(self, name: str) -> Model:
        """The model a turn names: one of ``models``, else resolved (once), never a test model unless allowed.

        Raises:
            ApplicationError: (non-retryable) a test model on a worker that does not allow them.
        """
        found = self._models.get(name)
        if found is None:
            if not self._allow_test_models and (name.startswith("scripted:") or name in _TEST_MODEL_NAMES):
                raise _refused(name)
            found = self._resolve(name)
            if not self._allow_test_models and type(found).__module__.startswith(_TEST_MODULES):
                raise _refused(name)
            self._models[name] = found
        return found

    def _check_directory(self, directory: str) -> None:
        path = Path(directory).resolve()
        if not any(path.is_relative_to(root) for root in self._roots):
            roots = ", ".join(str(root) for root in self._roots) or "(none)"
            raise ApplicationError(
                f"This worker does not run turns in {directory}: it serves {roots} (tether worker --dir D, "
                "repeatable)",
                type="UsageError",
                non_retryable=True,
            )

    def _check_codemode(self, agent: str) -> None:
        codemode = self._rt.sessions.service.codemode
        if isinstance(codemode, CodeMode) and agent in codemode.agents:
            raise ApplicationError(
                f"Code Mode does not run on Temporal yet: the agent {agent!r} has codemode on "
                f"(agent.{agent}.codemode). Run this agent in process, or use another agent for durable turns",
                type="UsageError",
                non_retryable=True,
            )

    @activity.defn(name=BEGIN)
    async def begin_turn(self, request: BeginRequest) -> BeginResult:
        """Open (or create) the session, append the user's input, and build the turn's system prompt once."""
        return await heartbeating(lambda: self._begin(request))

    async def _begin(self, request: BeginRequest) -> BeginResult:
        """The body of :meth:`begin_turn`.

        A later attempt (its worker died after writing) finds what the earlier one wrote instead of writing it twice:
        a new session's id is derived from the turn's run (:func:`turn_id`), the user message's and its parts' from
        the activity (:func:`keyed_id`), so the session is created once and the prompt stored once.
        """
        rt = self._rt
        turn = request.turn
        key = activity_key()
        again = activity.info().attempt > 1
        # refused before anything is written: a model, a directory or an agent this worker does not serve
        model = self.model(turn.model)
        if turn.session_id is not None:
            session = await rt.sessions.get(turn.session_id)
            self._check_directory(session.info.directory)
            self._check_codemode(session.info.agent)
        else:
            self._check_directory(turn.directory)
            self._check_codemode(turn.agent or DEFAULT_AGENT)
            session_id = turn_id("ses", key)
            session = await self._created(session_id) if again else None
            if session is None:
                location = await rt.location(turn.directory)
                await rt.sessions.service.create(
                    location, agent=turn.agent or DEFAULT_AGENT, session_id=session_id
                )
                session = await rt.sessions.get(session_id)
        # the store's record, not this worker's cached handle: another worker may have titled the session
        info = await rt.store.get_session(session.id)
        emitter = self._emitter
        if info.title == "" and turn.prompt:
            info = replace(info, title=_title(turn.prompt), updated=now_ms())
            emitter.durable(SessionUpdated(info))
            session._info = info  # pyright: ignore[reportPrivateUsage]
        agent = resolve_agent(rt.agents, info.agent)
        system = await rt.sessions.service.system_prompt(
            session.location, agent=agent.name, model=model.name, directory=info.directory
        )
        written: dict[str, str] = {}  # key tail -> id of what an earlier attempt stored
        if again:
            for message in await rt.store.load_messages(info.id):
                if isinstance(message.info, UserInfo):
                    written[message.info.id[-_TAIL:]] = message.info.id
                    written.update((part.id[-_TAIL:], part.id) for part in message.parts)
        user_id = written.get(key_tail(f"{key}/user")) or keyed_id("msg", f"{key}/user")
        if user_id not in written.values():
            emitter.durable(
                MessageUpdated(UserInfo(id=user_id, session_id=info.id, agent=agent.name, created=now_ms()))
            )
        for index, part in enumerate(_user_parts(turn.prompt)):
            if key_tail(f"{key}/user/{index}") in written:
                continue
            text = getattr(part, "text", "")
            emitter.durable(
                PartUpdated(
                    TextPart(
                        id=keyed_id("prt", f"{key}/user/{index}"),
                        session_id=info.id,
                        message_id=user_id,
                        text=text,
                    )
                )
            )
        await rt.store.flush()
        fault("begin-stored")
        return BeginResult(
            session_id=info.id,
            user_message_id=user_id,
            system=list(system),
            max_steps=agent.steps if agent.steps is not None else DEFAULT_MAX_STEPS,
        )

    async def _created(self, session_id: str) -> Session | None:
        """The session an earlier attempt of this ``begin_turn`` created, if it got that far."""
        try:
            return await self._rt.sessions.get(session_id)
        except NotFoundError:
            return None

    @activity.defn(name=STEP)
    async def model_step(self, request: StepRequest) -> StepResult:
        """Run one model request; write its parts; settle the calls that can never run; return the others.

        A later attempt (its worker died) finds what the earlier ones wrote by the message id's tail, derived from the
        activity (:func:`keyed_id`): an answer stored whole is returned as it is (the model is never asked twice for
        it); a message cut off mid-stream is closed (its calls aborted, never run) and the model asked again.
        """
        return await heartbeating(lambda: self._step(request))

    async def _step(self, request: StepRequest) -> StepResult:
        rt = self._rt
        session = await rt.sessions.get(request.session_id)
        info = session.info
        agent = resolve_agent(rt.agents, info.agent)
        model = self.model(request.model)
        rules = (*agent.rules, *info.rules) if info.rules else agent.rules
        await session.tools.caught_up()  # an MCP server's announced tools are in this step (as in the runner)
        materialization = session.tools.materialize(
            rules, final_step=request.final, visible=_model_catalog(rt.sessions.service.catalog, model)
        )
        stored = await rt.store.load_messages(info.id)
        key = activity_key()
        answered, unfinished = _attempts(stored, request.parent_id, key_tail(key))
        if answered is not None:  # an earlier attempt stored the model's answer: it is never asked again
            return await self._answered(answered, request, materialization, model)
        earlier = activity.info().heartbeat_details
        if earlier:  # a step of an earlier tether names its message only in its heartbeat
            found = find_message(stored, str(earlier[0]))
            if found is not None and found not in unfinished:
                unfinished.append(found)
        if (
            unfinished
        ):  # a worker died mid-stream: that attempt's message is closed before the history is read
            for message in unfinished:
                await self._close(info.id, message)
            stored = await rt.store.load_messages(info.id)
        history = History.from_stored(stored)
        options: Any = {**agent.options, **request.options} if agent.options else request.options
        model_request = ModelRequest(
            system=tuple(request.system),
            messages=history.view(_FINAL_TAIL if request.final else ()),
            tools=materialization.definitions,
            tool_choice="none" if request.final else "auto",
            options=options,
        )
        message = AssistantInfo(
            id=keyed_id("msg", key),
            session_id=info.id,
            parent_id=request.parent_id,
            agent=agent.name,
            model=model.name,
            created=now_ms(),
        )
        self._emitter.durable(MessageUpdated(message))
        processor = StepProcessor(self._emitter, session_id=info.id, message_id=message.id)
        processor.put(
            StepStartPart(
                id=ids.ascending("prt"),
                session_id=info.id,
                message_id=message.id,
                step=request.step,
                final=request.final,
            )
        )
        calls: list[ToolCallEvent] = []
        error: ProviderError | None = None
        try:
            stream = model.stream(model_request)
            try:
                async for event in stream:
                    call = processor.handle(event)
                    if call is not None:
                        calls.append(call)
                    fault("step-streaming")
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
        except ProviderError as exc:
            error = exc
        specs: list[CallSpec] = []
        settled: list[dict[str, Any]] = []
        for call in calls:
            failed = _never_runs(call)
            if failed is not None:
                part = processor.settle(call.id, failed)
                if part is not None:
                    settled.append(_settled_call(part))
                continue
            specs.append(_call_spec(materialization, call.id, call.name, call.input))
        processor.close_blocks()
        for part in processor.tool_parts():  # never received a complete call (the stream ended mid-input)
            if part.state == "pending":
                done = processor.settle(
                    part.call_id, Failed(error=INCOMPLETE_CALL_ERROR, kind="invalid_input")
                )
                if done is not None:
                    settled.append(_settled_call(done))
        message_error = None
        retry_in: float | None = None
        if error is not None:
            message_error = MessageError(kind="provider", message=error.message, retryable=error.retryable)
            retry = model.retry or rt.sessions.service.retry
            attempt = request.retry_attempt + 1
            if error.retryable and attempt < retry.attempts:
                retry_in = retry.delay(attempt, error)
        for spec in specs:
            # decided, not started: the call's activity marks it running when its tool starts, so a call found
            # running was started, and one found pending (or interrupted but never started) may still run
            part = processor.tool(spec.call_id)
            if part is not None and part.state == "running":
                processor.put(replace(part, state="pending", started=None))
        finish = processor.finish_reason or ("error" if error is not None else "unknown")
        processor.put(
            StepFinishPart(
                id=ids.ascending("prt"),
                session_id=info.id,
                message_id=message.id,
                reason=finish,
                usage=processor.usage,
            )
        )
        self._emitter.durable(
            MessageUpdated(
                replace(
                    message, completed=now_ms(), finish=finish, usage=processor.usage, error=message_error
                )
            )
        )
        await rt.store.flush()
        fault("step-stored")
        text = "\n".join(p.text for p in processor.parts.values() if isinstance(p, TextPart) and p.text)
        return StepResult(
            message_id=message.id,
            calls=specs,
            settled=settled,
            text=text,
            usage=asdict(processor.usage) if processor.usage is not None else None,
            error=error.message if error is not None else None,
            retry_in=retry_in,
        )

    async def _answered(
        self, stored: StoredMessage, request: StepRequest, materialization: Materialization, model: Model
    ) -> StepResult:
        """The result of a step an earlier attempt ran to its end, read back from its stored message.

        The calls it returns are the ones no tool activity has settled: still ``pending``, or interrupted by the
        store's recovery before they started (the tool activity runs those). A message whose completion did not
        reach the store (the worker died between the two writes) is completed now.
        """
        info = stored.info
        assert isinstance(info, AssistantInfo)
        finish = next(p for p in stored.parts if isinstance(p, StepFinishPart))
        if info.completed is None:
            self._emitter.durable(
                MessageUpdated(replace(info, completed=now_ms(), finish=finish.reason, usage=finish.usage))
            )
            await self._rt.store.flush()
        specs: list[CallSpec] = []
        settled: list[dict[str, Any]] = []
        for part in stored.parts:
            if not isinstance(part, ToolPart) or part.provider_executed:
                continue
            if part.settled and part.error_kind != "interrupted":
                settled.append(_settled_call(part))
                continue
            specs.append(_call_spec(materialization, part.call_id, part.tool, part.input))
        error = info.error if info.error is not None and info.error.kind == "provider" else None
        retry_in: float | None = None
        if error is not None and error.retryable:
            retry = model.retry or self._rt.sessions.service.retry
            attempt = request.retry_attempt + 1
            if attempt < retry.attempts:
                failure = ProviderError(error.message)
                failure.retryable = True
                retry_in = retry.delay(attempt, failure)
        return StepResult(
            message_id=info.id,
            calls=specs,
            settled=settled,
            text="\n".join(p.text for p in stored.parts if isinstance(p, TextPart) and p.text),
            usage=asdict(finish.usage) if finish.usage is not None else None,
            error=error.message if error is not None else None,
            retry_in=retry_in,
        )

    @activity.defn(name=CLOSE)
    async def close_step(self, request: CloseRequest) -> None:
        """After a cancelled turn: every unsettled call of the step becomes aborted (as ``Session.cancel`` does)."""
        message_id = request.message_id
        if message_id is None:
            return

        async def close() -> None:
            # the one message, by key (law 10)
            await self._close(
                request.session_id, await self._rt.store.load_message(request.session_id, message_id)
            )

        await heartbeating(close)

    async def _close(self, session_id: str, message: StoredMessage | None) -> None:
        if message is None:
            return
        processor = StepProcessor(self._emitter, session_id=session_id, message_id=message.info.id)
        for part in message.parts:
            if isinstance(part, ToolPart):
                adopt(processor, part)
        processor.fail_unsettled(ABORTED_ERROR, kind="aborted", interrupted=True)
        info = message.info
        if isinstance(info, AssistantInfo) and info.completed is None:
            error = MessageError(kind="aborted", message=ABORTED_ERROR, retryable=False)
            self._emitter.durable(
                MessageUpdated(replace(info, completed=now_ms(), finish="error", error=error))
            )
        await self._rt.store.flush()


def _never_runs(call: ToolCallEvent) -> Failed | None:
    """The runner's checks before settle (``session/_dispatch``): a call that fails them is settled in the step."""
    if call.incomplete:
        return Failed(error=INCOMPLETE_CALL_ERROR, kind="invalid_input")
    if call.invalid is not None:
        return Failed(error=_invalid_arguments(call), kind="invalid_input")
    if _has_lone_surrogate(call.input):
        return Failed(error=SURROGATE_INPUT_ERROR, kind="invalid_input")
    return None


def _call_spec(materialization: Materialization, call_id: str, name: str, input: Any) -> CallSpec:
    """What the workflow needs to run one call: its step's tool's timeout and idempotence (none for an unknown name)."""
    tool = materialization.tool(name)
    return CallSpec(
        call_id=call_id,
        name=name,
        input=input,
        timeout=tool.timeout if tool is not None else None,
        idempotent=tool.idempotent if tool is not None else False,
    )


def _settled_call(part: ToolPart) -> dict[str, Any]:
    return {
        "call_id": part.call_id,
        "name": part.tool,
        "input": part.input,
        "outcome": "completed" if part.state == "completed" else "error",
        "content": text_of(part.content),
        "error": part.error,
        "error_kind": part.error_kind,
    }


_HOLD_POLL = 1.0
"""Seconds between a retried hold activity's questions to its turn (is it over?)."""


async def _hold_state(turn: WorkflowHandle[Any, Any], claim: HoldInput) -> str:
    """The turn's ``hold_state``; a query that fails (no worker answers it now, a server restart) is asked again."""
    while True:
        try:
            found: HoldState = await turn.query("hold_state", claim, result_type=HoldState)
        except (RPCError, WorkflowQueryFailedError) as exc:
            log.info("hold_state of %s not answered yet (%s): asking again", turn.id, exc)
            await anyio.sleep(_HOLD_POLL)
            continue
        return found.state


_TAIL = 14
"""Hex digits of an id's random tail (``tether.ids``): where a keyed id carries its key."""


def activity_key() -> str:
    """What names this activity across its attempts (and nothing else): the turn's run and the activity's id."""
    info = activity.info()
    return f"{info.workflow_run_id}/{info.activity_id}"


def key_tail(key: str) -> str:
    """The id tail :func:`keyed_id` derives from ``key``."""
    return hashlib.blake2b(key.encode(), digest_size=_TAIL // 2).hexdigest()


def keyed_id(prefix: ids.Prefix, key: str) -> str:
    """A new ascending id whose tail is derived from ``key`` instead of random: a later attempt of the activity that
    wrote it finds it by that tail (the head still sorts it among the session's other ids as ``ids.ascending`` does)."""
    return ids.ascending(prefix)[:-_TAIL] + key_tail(key)


def turn_id(prefix: ids.Prefix, key: str) -> str:
    """An id every attempt of this activity derives alike: the head from the time the activity was first scheduled
    (the same for each attempt), the tail from ``key``."""
    scheduled = int(activity.info().scheduled_time.timestamp() * 1000)
    return f"{prefix}_{scheduled * 4096:0{_TAIL}x}{key_tail(key)}"


def _attempts(
    stored: Sequence[StoredMessage], parent_id: str, tail: str
) -> tuple[StoredMessage | None, list[StoredMessage]]:
    """The messages earlier attempts of this step wrote (their ids end in ``tail``): the one that ran to its end (it
    has its step-finish part), if any, and those that did not (closed by the next attempt before it asks again)."""
    answered: StoredMessage | None = None
    unfinished: list[StoredMessage] = []
    for message in stored:
        info = message.info
        if not (isinstance(info, AssistantInfo) and info.parent_id == parent_id and info.id.endswith(tail)):
            continue
        finish = next((p for p in message.parts if isinstance(p, StepFinishPart)), None)
        # a provider error is stored on the message's completion only: a finish without it is not the whole answer
        if finish is not None and (finish.reason != "error" or info.completed is not None):
            answered = message
        elif info.completed is None or any(isinstance(p, ToolPart) and not p.settled for p in message.parts):
            unfinished.append(message)
    return answered, unfinished

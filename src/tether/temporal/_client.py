"""Submitting turns to Temporal and following them: :class:`TemporalRunner`, :func:`submit_turn`, :class:`TurnHandle`.

A client needs only the Temporal server: the session store is written by the workers. Events are read with the
workflow's ``events`` query (what the turn did, step by step and call by call; text deltas are not streamed), asks
with ``asks``, and answered with the ``answer`` update, from this process or any other that knows the workflow id
and holds the key: each carries a signed payload (``asks`` an empty ``AsksQuery``), and a worker refuses one without.
Temporal's exceptions are mapped here, in one place.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from ..errors import NotFoundError, ProviderError, TetherError, UsageError
from ..llm import Usage
from ..session import TurnCall, TurnResult
from ._codec import data_converter, load_key
from ._types import AnswerInput, AskInfo, AsksQuery, TurnEvent, TurnInput, TurnOutput
from ._workflow import WORKFLOW

__all__ = [
    "BACKOFF_CAP",
    "DEFAULT_TASK_QUEUE",
    "PATIENCE_SECONDS",
    "POLL_SECONDS",
    "TemporalRunner",
    "TurnHandle",
    "TurnUnreadable",
    "connect",
    "submit_turn",
]

DEFAULT_TASK_QUEUE = "tether"
_REPLIES = ("once", "always", "reject")
POLL_SECONDS = 0.2
"""How often a follower asks the workflow for new events (a query: it adds nothing to the workflow's history)."""
BACKOFF_CAP = 5.0
"""Longest wait between two attempts of a failing read of a turn."""
PATIENCE_SECONDS = 600.0
"""How long a follower keeps retrying reads that fail before it gives up (the turn goes on without it)."""
_REFUSED = (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNAUTHENTICATED, RPCStatusCode.INVALID_ARGUMENT)
_T = TypeVar("_T")


async def connect(
    target: str,
    *,
    key: bytes | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    namespace: str = "default",
    tls: bool = False,
    api_key: str | None = None,
) -> Client:
    """A Temporal client for ``HOST:PORT`` that signs what it sends and checks what it reads (``_codec.py``).

    Args:
        target: the server, ``HOST:PORT``.
        key: the signing key (default: ``$TETHER_TEMPORAL_KEY``, else the key file of ``data_dir``).
        data_dir: the data directory whose key file is used (default: ``$TETHER_DATA_DIR`` or the user data dir).
        namespace: the Temporal namespace.
        tls: connect with TLS (system roots); needed by Temporal Cloud and by a server that requires it.
        api_key: a Temporal API key (sent as a bearer token; Temporal Cloud).

    Raises:
        UsageError: ``target`` is not ``HOST:PORT``, no Temporal server answers there, or the key cannot be read.
    """
    host, sep, port = target.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UsageError(
            f"--temporal {target!r}: give the Temporal server as HOST:PORT (for example 127.0.0.1:7233)"
        )
    if key is None:
        where = Path(data_dir) if data_dir is not None else None
        key = await anyio.to_thread.run_sync(lambda: load_key(where))
    try:
        return await Client.connect(
            target, namespace=namespace, tls=tls, api_key=api_key, data_converter=data_converter(key)
        )
    except RuntimeError as exc:  # the SDK's bridge reports a failed connection as RuntimeError
        raise UsageError(f"Cannot reach the Temporal server at {target}: {exc}") from exc


class TurnHandle:
    """One submitted turn: follow its events, answer its asks, cancel it, wait for its result."""

    def __init__(self, handle: WorkflowHandle[Any, Any]) -> None:
        self._handle = handle

    @property
    def workflow_id(self) -> str:
        return self._handle.id

    async def events(
        self,
        after: int = 0,
        *,
        patience: float = PATIENCE_SECONDS,
        reconnecting: Callable[[TetherError], object] | None = None,
    ) -> AsyncIterator[TurnEvent]:
        """The turn's events from index ``after`` on, as they happen, until the turn is over.

        Following never changes the turn. A read that fails for a while (the Temporal server restarting, no worker
        answering the query, a query timing out under load) is retried with backoff (:data:`POLL_SECONDS` doubling
        to :data:`BACKOFF_CAP`), ``reconnecting`` hearing each failure, for ``patience`` seconds of failures in a
        row; then the last failure is raised. The turn goes on meanwhile.

        Raises:
            NotFoundError: there is no such turn on the server.
            TetherError: the turn could not be read for ``patience`` seconds (it goes on: follow it again later).
        """
        retry = _Retry(patience, reconnecting)
        while True:
            found: list[TurnEvent] = await retry(
                partial(self._query, "events", after, result_type=list[TurnEvent])
            )
            for event in found:
                yield event
                if event.kind == "done":
                    return
            after += len(found)
            if not found and await retry(self._closed):
                return
            await anyio.sleep(POLL_SECONDS)

    async def asks(self) -> list[AskInfo]:
        """The asks waiting for an answer (permission requests and questions), oldest first."""
        return await self._query("asks", AsksQuery(), result_type=list[AskInfo])

    async def answer(
        self,
        ask_id: str,
        reply: Literal["once", "always", "reject"] = "once",
        *,
        message: str | None = None,
        answers: Sequence[Sequence[str]] | None = None,
    ) -> None:
        """Answer the ask ``ask_id``: a permission with ``once``/``always``/``reject`` (``message``: feedback for the
        model), a question with ``answers`` (one list per question) or ``reject`` to dismiss it.

        Raises:
            NotFoundError: the turn has no such waiting ask (answered already, or never asked).
            UsageError: the answer does not fit the ask.
            TurnUnreadable: the server gave up waiting for a worker to take the answer (the ask still waits).
        """
        if reply not in _REPLIES:
            raise UsageError(f"A reply is once, always or reject; got {reply!r}")
        given = AnswerInput(
            ask_id=ask_id,
            reply=reply,
            message=message,
            answers=None if answers is None else [list(a) for a in answers],
        )
        try:
            await self._handle.execute_update("answer", given)
        except WorkflowUpdateRPCTimeoutOrCancelledError as exc:
            cancelled = exc.__cause__
            if isinstance(cancelled, anyio.get_cancelled_exc_class()):
                # the SDK turns the caller's cancellation (Ctrl-C) into this error: it stays a cancellation (law 3)
                raise cancelled from None
            raise TurnUnreadable(
                f"The turn {self.workflow_id} did not take the answer in time (no worker polling?): answer again"
            ) from exc
        except WorkflowUpdateFailedError as exc:
            text = str(exc.cause.message if isinstance(exc.cause, ApplicationError) else exc.cause or exc)
            if text.startswith("No waiting ask"):
                raise NotFoundError(text) from exc
            raise UsageError(text) from exc

    async def cancel(self) -> None:
        """Cancel the turn: running calls are cancelled (their parts aborted) and the turn ends ``cancelled``.

        Returns once the server has recorded the request; the workers act on it within about a second (their
        calls' heartbeats bring it, docs/temporal.md "Cancellation"), whether the caller waits or not.

        Raises:
            NotFoundError: there is no such turn on the server.
            TetherError: the server refused or could not be reached (the turn is not cancelled).
        """
        try:
            await self._handle.cancel()
        except RPCError as exc:
            raise self._unreadable(exc) from exc

    async def result(
        self,
        *,
        patience: float = PATIENCE_SECONDS,
        reconnecting: Callable[[TetherError], object] | None = None,
    ) -> TurnResult:
        """Wait for the turn to end (a server that cannot be reached is retried as :meth:`events` does).

        Raises:
            ProviderError: the model failed and retrying did not help.
            UsageError: a worker refused the turn before it wrote anything (``session … is busy``, a directory it
                does not serve, a test model, Code Mode).
            NotFoundError: the session the turn continues does not exist.
            TetherError: the turn failed for another reason (its message says why), or the server could not be
                reached for ``patience`` seconds (the turn goes on).
        """
        try:
            out: TurnOutput = await _Retry(patience, reconnecting)(self._wait)
        except WorkflowFailureError as exc:
            cause = exc.cause
            while cause is not None and not isinstance(cause, ApplicationError):
                cause = cause.__cause__
            if isinstance(cause, ApplicationError) and cause.type == "ProviderError":
                raise ProviderError(cause.message) from exc
            # refused before anything was written: busy, a directory, a model; or no such session to continue
            if isinstance(cause, ApplicationError) and cause.type == "UsageError":
                raise UsageError(cause.message) from exc
            if isinstance(cause, ApplicationError) and cause.type == "NotFoundError":
                raise NotFoundError(cause.message) from exc
            raise TetherError(f"The turn {self.workflow_id} failed: {cause or exc}") from exc
        return _result(out)

    async def _wait(self) -> TurnOutput:
        try:
            return await self._handle.result()
        except RPCError as exc:
            raise self._unreadable(exc) from exc

    async def session_id(self) -> str | None:
        """The turn's session, once its first activity created or opened it."""
        for event in await self._query("events", 0, result_type=list[TurnEvent]):
            if event.kind == "session":
                return str(event.data["session_id"])
        return None

    async def _query(self, name: str, *args: Any, result_type: Any) -> Any:
        try:
            return await self._handle.query(name, args=args, result_type=result_type)
        except RPCError as exc:
            raise self._unreadable(exc) from exc
        except WorkflowQueryFailedError as exc:
            # the query reached a worker that could not answer it (its workflow task failed): the turn is untouched
            raise TurnUnreadable(f"The turn {self.workflow_id} cannot be read now: {exc.message}") from exc

    def _unreadable(self, exc: RPCError) -> TetherError:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return NotFoundError(f"No turn {self.workflow_id} on the Temporal server: {exc.message}")
        if exc.status in _REFUSED:
            return TetherError(
                f"The Temporal server refused to show the turn {self.workflow_id}: {exc.message}"
            )
        # the server is unreachable or busy, or no worker polls the queue to answer a query (the turn itself is safe)
        return TurnUnreadable(f"The turn {self.workflow_id} cannot be read now: {exc.message}")

    async def _closed(self) -> bool:
        try:
            description = await self._handle.describe()
        except RPCError as exc:
            raise self._unreadable(exc) from exc
        return description.close_time is not None


class TurnUnreadable(TetherError):
    """A turn could not be read for a while (the server unreachable, no worker answering its queries): raised by
    :meth:`TurnHandle.events` and :meth:`TurnHandle.result` once their patience is spent. The turn is untouched."""


class _Retry:
    """Runs a read of a turn, retrying :class:`TurnUnreadable` failures with backoff for ``patience`` seconds of failures
    in a row (a success starts the count again); ``reconnecting`` hears each failure."""

    def __init__(self, patience: float, reconnecting: Callable[[TetherError], object] | None) -> None:
        self._patience = patience
        self._reconnecting = reconnecting

    async def __call__(self, read: Callable[[], Awaitable[_T]]) -> _T:
        failing_since: float | None = None
        delay = POLL_SECONDS
        while True:
            try:
                return await read()
            except TurnUnreadable as exc:
                now = anyio.current_time()
                failing_since = now if failing_since is None else failing_since
                if now - failing_since >= self._patience:
                    raise
                if self._reconnecting is not None:
                    self._reconnecting(exc)
                await anyio.sleep(delay)
                delay = min(delay * 2, BACKOFF_CAP)


async def submit_turn(
    client: Client,
    prompt: str,
    *,
    model: str,
    directory: str | os.PathLike[str] = ".",
    session_id: str | None = None,
    agent: str | None = None,
    options: dict[str, Any] | None = None,
    task_queue: str = DEFAULT_TASK_QUEUE,
    workflow_id: str | None = None,
    heartbeat_timeout: float = 30.0,
    answers_questions: bool = True,
) -> TurnHandle:
    """Start one turn as a workflow on ``task_queue`` and return its handle (a worker must serve the queue).

    Args:
        prompt: the user's text.
        model: a ``provider/model`` spec, or a name the workers' ``models`` give.
        directory: the working directory, as the workers see it (a new session is created there).
        session_id: continue this session instead of creating one.
        agent: the new session's agent (default: the workers' default).
        workflow_id: the turn's workflow id (default: ``tether-session-<session_id>`` for a continued session, so
            Temporal refuses a second turn of it while one runs; ``tether-turn-<random>`` for a new one).
        heartbeat_timeout: seconds without a heartbeat before a call's worker counts as dead.
        answers_questions: whether someone answers the turn's questions (:meth:`TurnHandle.answer`); ``False``: a
            question fails at once with "no one can answer" and the model goes on with its best judgement.

    Raises:
        UsageError: ``prompt`` is empty, ``heartbeat_timeout`` is not positive, or a turn of ``session_id`` runs
            (``session ses_… is busy``). The workers refuse a session another owner runs the same way: the turn's
            :meth:`TurnHandle.result` raises it.
    """
    if not prompt:
        raise UsageError("A turn needs a non-empty prompt")
    if not heartbeat_timeout > 0:
        raise UsageError(f"heartbeat_timeout must be a positive number of seconds; got {heartbeat_timeout!r}")
    turn = TurnInput(
        prompt=prompt,
        model=model,
        directory=_absolute(directory),
        session_id=session_id,
        agent=agent,
        options=dict(options or {}),
        heartbeat_timeout=heartbeat_timeout,
        answers_questions=answers_questions,
    )
    if workflow_id is None:
        workflow_id = f"tether-session-{session_id}" if session_id else f"tether-turn-{uuid.uuid4().hex}"
    try:
        handle = await client.start_workflow(
            WORKFLOW,
            turn,
            id=workflow_id,
            task_queue=task_queue,
            result_type=TurnOutput,
            # one running turn per id; a finished one may be followed by the next turn of the session
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
    except WorkflowAlreadyStartedError as exc:
        what = f"session {session_id}" if session_id else f"workflow {workflow_id}"
        raise UsageError(f"{what} is busy (the Temporal turn {workflow_id} runs it)") from exc
    return TurnHandle(handle)


class TemporalRunner:
    """Runs turns on Temporal workers: ``await TemporalRunner.connect("HOST:PORT")``, then :meth:`submit` or
    :meth:`run` (submit and wait), or :meth:`turn` for a turn submitted elsewhere (to answer its asks)."""

    def __init__(self, client: Client, *, task_queue: str = DEFAULT_TASK_QUEUE) -> None:
        self.client = client
        self.task_queue = task_queue

    @classmethod
    async def connect(
        cls, target: str, *, task_queue: str = DEFAULT_TASK_QUEUE, **options: Any
    ) -> TemporalRunner:
        """Connect to the Temporal server at ``target`` (``options``: :func:`connect`'s ``key``, ``data_dir``,
        ``namespace``, ``tls``, ``api_key``).

        Raises:
            UsageError: as :func:`connect`.
        """
        return cls(await connect(target, **options), task_queue=task_queue)

    async def submit(self, prompt: str, *, model: str, **options: Any) -> TurnHandle:
        """Start a turn (:func:`submit_turn`'s keyword arguments) and return its handle."""
        return await submit_turn(self.client, prompt, model=model, task_queue=self.task_queue, **options)

    async def run(self, prompt: str, *, model: str, **options: Any) -> TurnResult:
        """Run a turn to its end (no one answers its asks here: use :meth:`submit` to answer them)."""
        return await (await self.submit(prompt, model=model, **options)).result()

    def turn(self, workflow_id: str) -> TurnHandle:
        """The handle of a turn submitted earlier (by any process)."""
        return TurnHandle(self.client.get_workflow_handle(workflow_id, result_type=TurnOutput))


def _absolute(directory: str | os.PathLike[str]) -> str:
    return os.path.abspath(directory)


def _result(out: TurnOutput) -> TurnResult:
    usage_fields = {k: v for k, v in out.usage.items() if k in Usage.__dataclass_fields__}
    return TurnResult(
        session_id=out.session_id,
        stop=out.stop,
        steps=out.steps,
        tool_calls=out.tool_calls,
        text=out.text,
        usage=Usage(**usage_fields),
        message_ids=tuple(out.message_ids),
        calls=tuple(TurnCall(**call) for call in out.calls),
    )

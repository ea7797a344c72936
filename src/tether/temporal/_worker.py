"""A Temporal worker for tether turns: the turn workflow and its activities on an open :class:`~tether.Runtime`.

The workflow runs in the SDK's sandbox; ``tether`` is passed through (imported once, outside it): the workflow
module imports only its own dataclasses from tether and does no I/O, and passing the package through keeps the
sandbox from re-importing the whole runtime for every workflow run.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import anyio
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ..errors import StoreError, UsageError
from ._activities import TurnActivities
from ._calls import HEARTBEAT_SECONDS
from ._client import DEFAULT_TASK_QUEUE
from ._codec import PayloadConverter, SigningCodec
from ._faults import check_faults
from ._workflow import TurnWorkflow

if TYPE_CHECKING:
    from .._runtime import Runtime
    from ..llm import Model

__all__ = ["STORE_CHECK_SECONDS", "run_worker", "worker", "workflow_runner"]

STORE_CHECK_SECONDS = 1.0
"""How often a running worker checks that its store can still write."""


def worker(
    runtime: Runtime,
    client: Client,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    models: Mapping[str, Model] | None = None,
    resolve: Callable[[str], Model] | None = None,
    graceful_shutdown: float = 0.0,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    allow_test_models: bool = False,
) -> Worker:
    """A ``temporalio.worker.Worker`` that runs tether turns on ``runtime`` (``async with`` it, or ``await .run()``).

    Args:
        runtime: an open runtime: the store, tools, agents and permissions every activity uses.
        client: a connected Temporal client.
        task_queue: the queue ``submit_turn`` sends turns to.
        models: models by the name a turn gives.
        resolve: turns any other model name into a model (default: ``provider/model`` with the runtime's config).
        graceful_shutdown: seconds running calls get to finish when the worker stops; then they are cancelled and
            left to the next worker (which reports them interrupted unless the tool is idempotent).
        roots: the directories turns may work in (and below); default: the current directory. A turn for a
            session elsewhere fails before it creates or touches anything.
        allow_test_models: serve turns whose model ``resolve`` makes from ``tether.testing`` or ``tether.demo``
            (``scripted:<path>``, ``replay``); off, such a turn fails. ``models`` given here are always served.

    Raises:
        UsageError: ``client`` does not sign its payloads (make it with :func:`tether.temporal.connect`), or
            ``$TETHER_TEMPORAL_FAULT`` (a test's fault injection, ``_faults.py``) names no fault point.
    """
    converter = client.data_converter
    if (
        not isinstance(converter.payload_codec, SigningCodec)
        or converter.payload_converter_class is not PayloadConverter
    ):
        raise UsageError(
            "A tether worker needs a client that signs its payloads: connect with tether.temporal.connect "
            "(docs/temporal.md, Trust boundary)"
        )
    try:
        check_faults()
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    activities = TurnActivities(
        runtime,
        models,
        resolve,
        roots=[os.getcwd()] if roots is None else roots,
        allow_test_models=allow_test_models,
    )
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[TurnWorkflow],
        activities=activities.all(),
        workflow_runner=workflow_runner(),
        graceful_shutdown_timeout=timedelta(seconds=graceful_shutdown),
        # a cancel reaches an activity only in a heartbeat's response: sent as they come (each activity beats every
        # HEARTBEAT_SECONDS), never held back 0.8 of the heartbeat timeout (24 s at the default 30 s)
        max_heartbeat_throttle_interval=timedelta(seconds=HEARTBEAT_SECONDS),
        default_heartbeat_throttle_interval=timedelta(seconds=HEARTBEAT_SECONDS),
    )


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox the turn workflow runs in, ``tether`` passed through (a worker's, and a replayer's)."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("tether")
    )


async def run_worker(
    runtime: Runtime,
    target: str,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    models: Mapping[str, Model] | None = None,
    resolve: Callable[[str], Model] | None = None,
    ready: Callable[[], Awaitable[None] | None] | None = None,
    stop: anyio.Event | None = None,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    allow_test_models: bool = False,
    **options: Any,
) -> None:
    """Connect to the Temporal server at ``target`` (``HOST:PORT``) and run a worker until ``stop`` is set (or the
    call is cancelled). Stopping by ``stop`` shuts the worker down in order: its running calls are cancelled and left
    to the next worker (reported interrupted there, or run again when idempotent). ``roots`` and
    ``allow_test_models`` are :func:`worker`'s; ``options`` :func:`tether.temporal.connect`'s (the key defaults to
    the runtime's data directory's).

    A worker whose store fails (a PostgreSQL restart ends its connection, and with it its lease: the store never
    writes again, law 12) stops in order within :data:`STORE_CHECK_SECONDS` and raises: run it under a supervisor
    that starts it again (``Restart=always``), with a fresh store.

    Raises:
        UsageError: the server cannot be reached, or the key cannot be read.
        StoreError: the runtime's store failed while the worker ran.
    """
    from ._client import connect

    options.setdefault("data_dir", runtime.data_dir)
    client = await connect(target, **options)
    async with worker(
        runtime,
        client,
        task_queue=task_queue,
        models=models,
        resolve=resolve,
        roots=roots,
        allow_test_models=allow_test_models,
    ):
        if ready is not None:
            done = ready()
            if done is not None:
                await done
        failure: StoreError | None = None
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal failure
                while True:
                    await anyio.sleep(STORE_CHECK_SECONDS)
                    try:
                        await runtime.store.flush()  # a failed store raises its failure on every flush
                    except StoreError as exc:
                        failure = exc
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch)
            await (stop.wait() if stop is not None else anyio.sleep_forever())
            tg.cancel_scope.cancel()
        if failure is not None:
            # every activity here would fail: stop polling, so the turns' activities go to workers that can write
            raise StoreError(
                f"{failure.message}; this worker stopped (start it again: it opens the store anew)"
            )

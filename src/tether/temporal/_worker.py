"""A Temporal worker for tether turns: the turn workflow and its activities on an open :class:`~tether.Runtime`.

The workflow runs in the SDK's sandbox; ``tether`` is passed through (imported once, outside it): the workflow
module imports only its own dataclasses from tether and does no I/O, and passing the package through keeps the
sandbox from re-importing the whole runtime for every workflow run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING

import anyio
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ._activities import TurnActivities
from ._client import DEFAULT_TASK_QUEUE
from ._workflow import TurnWorkflow

if TYPE_CHECKING:
    from .._runtime import Runtime
    from ..llm import Model

__all__ = ["run_worker", "worker"]


def worker(
    runtime: Runtime,
    client: Client,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    models: Mapping[str, Model] | None = None,
    resolve: Callable[[str], Model] | None = None,
    graceful_shutdown: float = 0.0,
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
    """
    activities = TurnActivities(runtime, models, resolve)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[TurnWorkflow],
        activities=activities.all(),
        workflow_runner=SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules("tether")
        ),
        graceful_shutdown_timeout=timedelta(seconds=graceful_shutdown),
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
) -> None:
    """Connect to the Temporal server at ``target`` (``HOST:PORT``) and run a worker until ``stop`` is set (or the
    call is cancelled). Stopping by ``stop`` shuts the worker down in order: its running calls are cancelled and left
    to the next worker (reported interrupted there, or run again when idempotent).

    Raises:
        UsageError: the server cannot be reached.
    """
    from ._client import connect

    client = await connect(target)
    async with worker(runtime, client, task_queue=task_queue, models=models, resolve=resolve):
        if ready is not None:
            done = ready()
            if done is not None:
                await done
        await (stop.wait() if stop is not None else anyio.sleep_forever())

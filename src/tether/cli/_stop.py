"""How a serving command stops (``tether serve``, ``tether mcp serve``): in order on SIGTERM or SIGINT, at once on a
second signal or when the grace deadline passes.

A service manager (systemd, ``docker stop``, Kubernetes) stops a process with SIGTERM and kills it some seconds
later. The first SIGTERM or SIGINT sets :attr:`Stop.event`: the command stops accepting requests, cancels its running
turns (their calls are recorded as aborted, as a Ctrl-C in ``tether run`` records them), closes its runtime (the
store's last writes, its owner row released) and exports the telemetry spans still buffered within the export
timeout, then exits 0. A second signal, or :data:`STOP_GRACE` seconds (plus the export timeout) after the first,
ends the process at once with 130, after killing the process groups bash calls still have alive; a store left
that way is recovered by the next process that opens it (its running calls are marked interrupted).

``tether worker`` stops on the same signals through the Temporal worker's own shutdown.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from ._common import CANCELLED, err_console

if TYPE_CHECKING:
    from anyio.abc import TaskStatus

    from ..telemetry import Telemetry

__all__ = ["STOP_GRACE", "Stop", "stop_on_signals"]

STOP_GRACE = 10.0
"""Seconds from the first signal to a forced exit, besides the telemetry export timeout: a turn's calls get two for
their cleanup (``cancel_grace``), open connections one, closing the store the rest."""


@dataclass(kw_only=True, slots=True)
class Stop:
    """A serving command's stop: :attr:`event` is set by the first signal.

    Attributes:
        event: set by the first SIGTERM or SIGINT; the command stops serving when it is.
        grace: seconds from the first signal to a forced exit.
        telemetry: the exporter configured by :meth:`export_telemetry`, flushed once the command has stopped.
    """

    command: str
    event: anyio.Event
    grace: float
    telemetry: Telemetry | None = None

    def export_telemetry(self, config: Mapping[str, Any]) -> None:
        """Export spans as the config says (``telemetry.otlp_endpoint``); the last ones are sent as the command stops.

        Raises:
            UsageError: export is asked for but the ``tether[otel]`` extra is not installed.
        """
        from ..telemetry import export_from_config, settings_from_config

        self.telemetry = export_from_config(config)
        settings = settings_from_config(config)
        if self.telemetry is not None and settings is not None:
            self.grace += (
                settings.timeout_ms / 1000
            )  # the flush has its own bound; the deadline allows for it


@asynccontextmanager
async def stop_on_signals(command: str, *, grace: float = STOP_GRACE) -> AsyncGenerator[Stop]:
    """SIGTERM and SIGINT stop ``command`` in order while the block runs (see the module docstring).

    The block serves until :attr:`Stop.event` is set and then closes what it opened; when it has, the telemetry
    configured through :meth:`Stop.export_telemetry` is flushed (in a worker thread, within the export timeout).
    """
    stop = Stop(command=command, event=anyio.Event(), grace=grace)
    async with anyio.create_task_group() as group:
        await group.start(_watch, stop, group)  # listening before the block runs
        yield stop
        if stop.telemetry is not None:
            await anyio.to_thread.run_sync(stop.telemetry.shutdown)
        group.cancel_scope.cancel()
    if stop.event.is_set():
        err_console().print(f"{command}: stopped", markup=False, highlight=False)


async def _watch(
    stop: Stop, group: Any, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            name = signal.Signals(signum).name
            if stop.event.is_set():
                _exit_now(f"{stop.command}: {name} again, exiting at once")
            stop.event.set()
            err_console().print(
                f"{stop.command}: {name}, stopping (running turns are cancelled; a second signal exits at once)",
                markup=False,
                highlight=False,
            )
            group.start_soon(_deadline, stop)


async def _deadline(stop: Stop) -> None:
    await anyio.sleep(stop.grace)
    _exit_now(f"{stop.command}: not stopped within {stop.grace:g} s, exiting at once")


def _exit_now(message: str) -> None:
    from ._turn import kill_live_shells

    kill_live_shells()  # os._exit skips the bash calls' cleanup: their process groups must not outlive us
    err_console().print(message, markup=False, highlight=False)
    sys.stderr.flush()
    os._exit(CANCELLED)

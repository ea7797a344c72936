"""uvicorn inside a tether process (``tether serve``, ``tether mcp serve --http``): the process's signals are left
to the command, and a stop event ends the serving in order.

uvicorn's own ``Server.serve`` replaces the SIGINT and SIGTERM handlers while it serves and, once it has stopped,
raises the signal again with the previous handlers back. Under SIGTERM's default handler that kills the process the
moment serving ends, before the code around it runs: the runtime is never closed (running turns are not recorded as
cancelled, the store's owner row stays) and buffered telemetry is lost. tether's commands own their signals
(``cli/_stop.py``) and stop the server through ``stop``; an application embedding :func:`tether.server.serve` keeps
its own handlers. Overriding ``capture_signals`` is how uvicorn is embedded without its signal handling (uvicorn has
no setting for it).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Generator

import anyio
import uvicorn

__all__ = ["Server", "serve"]


class Server(uvicorn.Server):
    """A uvicorn server that never touches the process's signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


async def serve(
    server: uvicorn.Server,
    sock: socket.socket,
    *,
    stop: anyio.Event | None = None,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve on the listening ``sock`` until the server is told to exit, ``stop`` is set, or the task is cancelled.

    When ``stop`` is set the server stops accepting connections, gives open ones its ``timeout_graceful_shutdown``,
    and returns; ``on_stop`` runs at that moment (cancel the work requests started, so their last events still reach
    their clients).
    """
    async with anyio.create_task_group() as group:
        if stop is not None:

            async def exit_when_stopped() -> None:
                await stop.wait()
                server.should_exit = True
                if on_stop is not None:
                    on_stop()

            group.start_soon(exit_when_stopped)
        await server.serve(sockets=[sock])
        group.cancel_scope.cancel()

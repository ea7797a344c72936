"""The stdio transport of ``tether mcp serve``: the MCP SDK's ``stdio_server``, over a stdin a stop can abandon.

:func:`serve_stdio` serves until the client closes stdin, or until ``stop`` is set (SIGTERM or SIGINT): then the
running calls are cancelled (recorded as aborted) and the transport ends at once.

The SDK reads stdin in a worker thread that cancellation cannot interrupt, so a server told to stop (SIGTERM: how an
MCP client, or a service manager, ends a server) would wait for the client's next line or its EOF before it could
close its runtime. Here each read is abandoned when cancelled: the thread stays blocked on the client's pipe until
the process exits, and nothing else reads that pipe. While serving, fd 0 points at the null device, as the SDK
points it for its own reads, so nothing in the process (nor a child that inherits it) reads the client's messages.
stdout is claimed by the SDK as always (fd 1 points at stderr while serving).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from ._server import ToolServer

__all__ = ["serve_stdio", "stdio_streams"]


async def serve_stdio(served: ToolServer, *, stop: anyio.Event | None = None) -> None:
    """Serve ``served`` on stdin/stdout until the client closes stdin or ``stop`` is set; inside ``served.running()``."""
    with anyio.CancelScope() as serving:  # a stop ends the transport's reader and writer too
        async with stdio_streams() as (read, write), anyio.create_task_group() as group:
            if stop is not None:

                async def stop_serving() -> None:
                    await stop.wait()
                    served.stop_calls()
                    serving.cancel()

                group.start_soon(stop_serving)
            await served.server.run(read, write, served.server.create_initialization_options())
            group.cancel_scope.cancel()  # the client closed stdin


class _Lines:
    """The client's lines as text (undecodable bytes replaced, as the SDK reads them), each read abandonable."""

    def __init__(self, wire: BinaryIO) -> None:
        self._wire = wire

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await anyio.to_thread.run_sync(self._wire.readline, abandon_on_cancel=True)
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


@asynccontextmanager
async def stdio_streams() -> AsyncGenerator[tuple[Any, Any]]:
    """The read and write streams of the MCP session on this process's stdin and stdout."""
    from mcp.server.stdio import stdio_server

    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    # never closed: an abandoned read may still block on it, and a closed descriptor could be reused under it
    reader = os.fdopen(wire, "rb", closefd=False)
    try:
        async with stdio_server(stdin=cast(Any, _Lines(reader))) as streams:
            yield streams
    finally:
        os.dup2(wire, 0)

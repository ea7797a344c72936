"""One MCP server's connection: a supervisor task that connects, serves and restarts it, and the requests made on it.

:meth:`Connection.run` is the supervisor, started in the runtime's task group. It starts the transport (a stdio
process, streamable HTTP, or SSE, with SSE tried once when a remote server refuses streamable HTTP), initializes the
session and lists the tools (every page) within the connect deadline, then serves until it is stopped or the
connection is lost. The transport's context managers are entered and left in this one task, as anyio requires.

- A server that fails its first connection is ``failed`` and skipped (its error is its status); it is not retried,
  as in OpenCode: a wrong command would otherwise start again and again.
- A server that was connected and is lost (it exited, or it hung: a call went silent and a ping then went
  unanswered) is restarted with backoff (0.5 s doubling to 30 s); after five failed restarts in a row it is
  ``failed`` and its tools leave the catalog. Its calls in flight fail one by one with a message naming the server; new calls fail at once while it
  is down. Nothing here ever fails a session.
- ``notifications/tools/list_changed`` makes the supervisor list the tools again; :class:`Connection` then calls
  ``on_tools``, which re-registers what changed (the next step's catalog; the current step keeps what it captured).
  The announcement is counted as the read stream yields it (``_Watched``), in the order the server sent it, so a
  change announced before a call's result is known when the call returns: the next step waits (``McpServers.
  caught_up``, bounded) until a listing made after it is registered (:attr:`Connection.owes_listing`).
- A server's error output goes to a temporary file, for the messages that explain its failures; past 1 MiB only its
  end is kept (checked after each call and every minute).
- A line on stdout that is not JSON-RPC fails the calls in flight with that line's error (their answer may be the
  line); before the connection is up it is ignored (some servers print a banner).

Requests: :meth:`call_tool` runs one ``tools/call`` with an idle deadline that every progress notification restarts,
forwarding the notifications to ``ctx.progress``; a call cancelled by tether (the turn, the deadline) abandons the
request, and the SDK then sends ``notifications/cancelled``.

The supervisor is the one place that catches a server's unexpected failure (:func:`~._errors.connect_errors` and any
other ``Exception``, logged): a server of any quality is reported and skipped, never fatal to the runtime.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import sys
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import ObjectReceiveStream

from ..errors import ToolFailure
from ._errors import call_errors, closed, describe
from ._schemas import schema_codecs
from ._spec import ServerSpec

if TYPE_CHECKING:
    from mcp import ClientSession, types

    from ..tools import ToolContext
    from ..tools.internal import Codec

__all__ = ["Connection", "State", "every_page"]

log = logging.getLogger("tether.mcp")


def _not_a_parse_failure(record: logging.LogRecord) -> bool:
    """The SDK logs each line that is not JSON-RPC with its whole traceback (``logger.exception``) and no server
    name; tether reports the same line itself, one line naming the server (:meth:`Connection._malformed`)."""
    return record.msg != "Failed to parse JSONRPC message from server"


logging.getLogger("mcp.client.stdio").addFilter(_not_a_parse_failure)

State = Literal["disabled", "connecting", "connected", "restarting", "failed", "closed"]
"""``disabled`` (``enabled: false``), ``connecting`` (the first attempt), ``connected``, ``restarting`` (lost, waiting
or reconnecting), ``failed`` (its first connection failed, or five restarts did), ``closed`` (the runtime closed)."""

_MAX_RESTARTS = 5
_BACKOFF = 0.5  # seconds before the first restart, doubling after each failed one
_MAX_BACKOFF = 30.0
_PING_TIMEOUT = 5.0
_STDERR_TAIL = 400
_GUARD = Path(__file__).with_name("_stdio_guard.py")
_STDERR_KEEP = 1 << 20  # bytes of a server's error output kept; past them only the end is kept
_TRIM_EVERY = 60.0
_LIST_CHANGED = "notifications/tools/list_changed"


async def every_page(list_page: Callable[..., Awaitable[Any]], field: str, *, limit: int = 1000) -> list[Any]:
    """Every item of a paginated MCP listing (``list_tools``, ``list_resources``), page after page; a server that
    never stops paging is cut off after ``limit`` pages, not followed forever."""
    from mcp import types

    found: list[Any] = []
    cursor: str | None = None
    for _ in range(limit):
        page = await list_page(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        found.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return found


def _executable(command: str, path: str, cwd: Path) -> str:
    """The file ``exec`` runs for ``command`` in ``cwd``: a relative command, or a relative entry of ``path``, is
    resolved against ``cwd`` (the working directory the server gets), never tether's own.

    Raises:
        FileNotFoundError: no such executable file.
    """
    places = (
        [cwd / command] if "/" in command else [cwd / entry / command for entry in path.split(os.pathsep)]
    )
    for place in places:
        if place.is_file() and os.access(place, os.X_OK):
            return str(place)
    raise FileNotFoundError(errno.ENOENT, "no such executable", command)


class _Watched(ObjectReceiveStream[Any]):
    """The transport's read stream as the session reads it, watched on the way (no task of its own, no extra hop):
    a malformed message goes to ``Connection._malformed`` instead of the session, and the end of the stream tells the
    connection it is lost."""

    def __init__(self, inner: ObjectReceiveStream[Any], connection: Connection) -> None:
        from mcp_types import JSONRPCNotification

        self._inner = inner
        self._connection = connection
        self._notification = JSONRPCNotification

    async def receive(self) -> Any:
        while True:
            try:
                item = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._connection._ended()  # pyright: ignore[reportPrivateUsage]
                raise anyio.EndOfStream from None
            if isinstance(item, Exception):
                self._connection._malformed(item)  # pyright: ignore[reportPrivateUsage]
                continue
            message = item.message  # a SessionMessage (the transport's other items are its exceptions)
            if isinstance(message, self._notification) and message.method == _LIST_CHANGED:
                # counted here, in receive order: before the session reads the result that may follow it
                self._connection._announce()  # pyright: ignore[reportPrivateUsage]
            return item

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Call:
    """One request in flight: its cancel scope, and the failure that cancelled it (a malformed line, a loss)."""

    __slots__ = ("doing", "failure", "scope")

    def __init__(self, scope: anyio.CancelScope, doing: str) -> None:
        self.scope = scope
        self.doing = doing
        self.failure: str | None = None

    def fail(self, failure: str) -> None:
        """Fail the request with ``failure`` (kept if it already failed) and cancel it."""
        self.failure = self.failure or f"{failure} (while {self.doing})"
        self.scope.cancel()


class Connection:
    """One configured server (see the module docstring).

    Args:
        spec: the server's resolved config.
        root: the project root: offered as the server's MCP root, and a stdio server's working directory unless
            ``workdir`` is given.
        on_tools: called after each successful listing (the first one and every re-listing).
        workdir: an untrusted project's stdio servers start here (an empty private directory), never in ``root``,
            with ``PYTHONSAFEPATH=1``: the repository cannot shadow what ``python -m``, ``npx`` or a relative
            command runs.
    """

    def __init__(
        self,
        spec: ServerSpec,
        root: Path,
        on_tools: Callable[[Connection], None],
        on_state: Callable[[], None] = lambda: None,
        *,
        workdir: Path | None = None,
    ) -> None:
        self.spec = spec
        self.root = root
        self.workdir = workdir
        self.on_tools = on_tools
        self.on_state = on_state
        self._state: State = "connecting" if spec.enabled else "disabled"
        self.error: str | None = None
        self.tools: tuple[types.Tool, ...] = ()
        # the codecs of self.tools by raw name (or why one cannot be built), built off the event loop
        self.codecs: dict[str, tuple[Codec, Codec | None] | str] = {}
        self.instructions: str | None = None
        self.server: str | None = None  # the server's own name and version, once connected
        self.restarts = 0
        self.listings = 0  # successful tools/list rounds (the first, each re-listing, each reconnection)
        self.announced = 0  # list_changed notifications received
        self.listed = 0  # the announcements the latest successful listing covers (it started after them)
        self.resources = False  # the server offers resources
        self.transport = spec.transport
        self.session: ClientSession | None = None
        self.settled = anyio.Event()  # the first connection attempt is over (connected or failed)
        self.done = anyio.Event()  # the supervisor has left (every process it started is gone)
        self._stopping = False
        self._wake = anyio.Event()
        self._lost: str | None = None
        self._relist = False
        self._suspect = False
        self._calls: set[_Call] = set()
        self._errlog: Any = None
        self._up = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state(self) -> State:
        return self._state

    @state.setter
    def state(self, value: State) -> None:
        self._state = value
        self.on_state()

    # -- supervisor --------------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the supervisor to close the connection and leave (:attr:`done` is set when it has)."""
        self._stopping = True
        self._wake.set()

    async def run(self) -> None:
        """The supervisor (start it in a task group; :meth:`stop` ends it)."""
        try:
            if self.state == "disabled":
                return
            failures = 0
            connected_once = False
            while not self._stopping:
                was_connected = await self._attempt()
                if self._stopping:
                    break
                connected_once = connected_once or was_connected
                failures = 0 if was_connected else failures + 1
                if not connected_once or failures > _MAX_RESTARTS:
                    self.state = "failed"
                    if self.tools:  # given up: its tools leave the catalog of the next step
                        self.tools = ()
                        self.on_tools(self)
                    break
                self.state = "restarting"
                self.restarts += 1
                log.warning("MCP server %s: %s; restarting", self.name, self.error)
                with anyio.move_on_after(min(_MAX_BACKOFF, _BACKOFF * 2**failures)):
                    await self._sleep()
        finally:
            if self.state != "failed" and self.state != "disabled":
                self.state = "closed"
            if self._errlog is not None:
                self._errlog.close()
            self.settled.set()
            self.done.set()

    async def _sleep(self, *, work: bool = False) -> None:
        """Wait for :attr:`_wake` (set by stop, loss, a re-listing or a health check), unless one is already due."""
        self._wake = anyio.Event()
        if self._stopping or (work and (self._relist or self._suspect or self._lost is not None)):
            return
        await self._wake.wait()

    async def _attempt(self) -> bool:
        """One connection, from start to loss: whether it connected. Its end is in :attr:`error`."""
        self._up = False  # set by _connected: an error after it ends a connection, it does not refuse one
        try:
            await self._connect(self.transport)
        except (
            Exception
        ) as exc:  # the supervisor's one boundary: a server's failure is never fatal (module doc)
            if not self._up and self.transport == "http" and self.spec.fallback_sse and not self._stopping:
                first = describe(exc)
                try:
                    await self._connect("sse")
                except Exception as again:
                    self.error = f"{first} (and over SSE: {describe(again)})"
                    log.debug("MCP server %s failed over SSE", self.name, exc_info=again)
            else:
                self.error = self._with_stderr(describe(exc))
            if not isinstance(exc, call_errors()):
                log.debug("MCP server %s failed", self.name, exc_info=exc)
        return self._up

    async def _connect(self, transport: str) -> None:
        from mcp import ClientSession, types

        from .._version import __version__

        self._lost = None
        with anyio.CancelScope() as deadline:
            deadline.deadline = anyio.current_time() + self.spec.connect_timeout
            async with (
                self._transport(transport) as (read, write),
                ClientSession(
                    _Watched(read, self),
                    write,
                    message_handler=self._on_message,
                    list_roots_callback=self._roots,
                    client_info=types.Implementation(name="tether", version=__version__),
                ) as session,
            ):
                result = await session.initialize()
                announced = self.announced
                tools = await self._list_tools(session)
                deadline.deadline = math.inf
                self.transport = transport  # SSE, once a remote server refused streamable HTTP
                self._connected(session, result, tools, announced)
                await self._serve(session)
                self.session = None
        self.session = None
        if deadline.cancelled_caught and not self._up:
            self.error = self._with_stderr(
                f"did not start within {self.spec.connect_timeout:g}s (initialize and tools/list unanswered)"
            )
        elif self._lost is not None:
            self.error = self._lost

    def _connected(
        self,
        session: ClientSession,
        result: types.InitializeResult,
        tools: tuple[types.Tool, ...],
        announced: int,
    ) -> None:
        self.session = session
        self._up = True
        self.state = "connected"
        self.error = None
        self.instructions = result.instructions or None
        self.server = f"{result.server_info.name} {result.server_info.version}"
        self.resources = result.capabilities.resources is not None
        self.tools = tools
        self.listings += 1
        self.listed = announced
        self.on_tools(self)
        self.settled.set()

    async def _serve(self, session: ClientSession) -> None:
        """Wait for work: a re-listing, a health check, the loss of the connection or the stop."""
        while not self._stopping and self._lost is None:
            with anyio.move_on_after(_TRIM_EVERY):
                await self._sleep(work=True)
            self._trim_stderr()
            if self._relist and self._lost is None and not self._stopping:
                self._relist = False
                announced = self.announced
                with anyio.move_on_after(self.spec.connect_timeout) as scope:
                    self.tools = await self._list_tools(session)
                    self.listings += 1
                    self.listed = announced
                    self.on_tools(self)
                if scope.cancelled_caught:
                    self._lose("did not answer tools/list after announcing a change of its tools")
            if self._suspect and self._lost is None and not self._stopping:
                self._suspect = False
                with anyio.move_on_after(_PING_TIMEOUT) as scope:
                    try:
                        await session.send_ping()
                    except call_errors() as exc:
                        self._lose(f"did not answer a ping ({describe(exc)})")
                if scope.cancelled_caught:
                    self._lose(f"hung: a call went silent and a ping got no answer within {_PING_TIMEOUT:g}s")

    @property
    def owes_listing(self) -> bool:
        """Whether the server announced a change of its tools that no registered listing covers yet, while it is
        connected (a lost or stopping server lists nothing more on this connection)."""
        return (
            self.announced > self.listed
            and self._state == "connected"
            and self._lost is None
            and not self._stopping
        )

    def _announce(self) -> None:
        """The server sent ``notifications/tools/list_changed``: list its tools again."""
        self.announced += 1
        self._relist = True
        self._wake.set()

    async def _list_tools(self, session: ClientSession) -> tuple[types.Tool, ...]:
        """Every tool, with their codecs built in a worker thread (:attr:`codecs`) under the caller's deadline."""
        tools = tuple(await every_page(session.list_tools, "tools"))
        self.codecs = await anyio.to_thread.run_sync(schema_codecs, tools, abandon_on_cancel=True)
        return tools

    def _lose(self, reason: str) -> None:
        """The connection is lost for ``reason``: fail the calls in flight, wake the supervisor to restart it."""
        if self._lost is None:
            self._lost = reason
            for call in list(self._calls):
                call.fail(self._failure(reason))
            self.on_state()  # a step waiting for this server's re-listing (owes_listing) goes on at once
        self._wake.set()

    def _ended(self) -> None:
        """The transport's stream ended: the connection is lost, unless tether is closing it."""
        if not self._stopping:
            self._lose(self._with_stderr("closed the connection (the process exited or the stream ended)"))

    def _malformed(self, exc: Exception) -> None:
        text = f"wrote a message that is not JSON-RPC ({describe(exc)[:200]})"
        if self.state != "connected":
            log.debug("MCP server %s %s while connecting; ignored", self.name, text)
            return
        self.error = text
        log.warning("MCP server %s %s", self.name, text)
        for call in list(self._calls):
            call.fail(self._failure(text))

    async def _roots(self, context: Any) -> types.ListRootsResult:
        """``roots/list``: the project root, so a server learns the project without running in it."""
        from mcp import types

        root = types.Root(uri=self.root.as_uri(), name=self.root.name)  # pyright: ignore[reportArgumentType]
        return types.ListRootsResult(roots=[root])

    async def _on_message(self, message: Any) -> None:
        # list_changed is counted earlier, as it is read (_Watched), not here: the SDK runs this in a task of its
        # own, which may start after the session has handed the call's result back
        if isinstance(message, Exception):
            self._malformed(message)

    @asynccontextmanager
    async def _transport(self, transport: str) -> AsyncGenerator[tuple[Any, Any]]:
        spec = self.spec
        if transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            if self._errlog is None:
                self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            from mcp.client.stdio import get_default_environment

            env = {**get_default_environment(), **spec.env}
            neutral = self.workdir is not None and not spec.run_in_project
            if neutral:
                # no implicit sys.path entry (neither the cwd nor a script's directory); a config may set it empty
                env.setdefault("PYTHONSAFEPATH", "1")
            cwd = self.workdir if neutral and self.workdir is not None else self.root
            command, args = spec.command[0], list(spec.command[1:])
            if os.name == "posix":  # under a guard: nothing the server starts outlives tether (_stdio_guard)
                found = await anyio.to_thread.run_sync(_executable, command, env.get("PATH", os.defpath), cwd)
                command, args = sys.executable, ["-S", "-I", str(_GUARD), found, command, *args]
            params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
            async with stdio_client(params, errlog=self._errlog) as streams:
                yield streams
        elif transport == "sse":
            from mcp.client.sse import sse_client

            async with sse_client(
                spec.url, headers=dict(spec.headers), timeout=spec.connect_timeout
            ) as streams:
                yield streams
        else:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            async with (
                create_mcp_http_client(headers=dict(spec.headers)) as client,
                streamable_http_client(spec.url, http_client=client) as streams,
            ):
                yield streams[0], streams[1]

    def _with_stderr(self, text: str) -> str:
        """``text`` and the end of the server's error output, if it wrote any (what a crash usually explains)."""
        errlog = self._errlog
        if errlog is None or errlog.closed:
            return text
        try:
            errlog.flush()
            size = os.fstat(errlog.fileno()).st_size
            errlog.seek(max(0, size - _STDERR_TAIL * 4))
            tail = errlog.read()[-_STDERR_TAIL:].strip()
            errlog.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return text
        return f"{text}; its last error output: {tail}" if tail else text

    def _trim_stderr(self) -> None:
        """Keep a chatty server's error output (a temporary file it writes to directly) from growing without bound:
        past 1 MiB only its end is kept. The server's descriptor shares the file's offset, so it writes on after it."""
        errlog = self._errlog
        if errlog is None or errlog.closed:
            return
        try:
            size = os.fstat(errlog.fileno()).st_size
            if size <= _STDERR_KEEP:
                return
            errlog.seek(size - _STDERR_TAIL * 4)
            tail = errlog.read()
            errlog.seek(0)
            errlog.truncate()
            errlog.write(tail)
            errlog.flush()
        except (OSError, ValueError):
            return

    # -- requests ----------------------------------------------------------------------------------------------------

    def _failure(self, what: str) -> str:
        return f'MCP server "{self.name}" {what}'

    def _session(self) -> ClientSession:
        session = self.session
        if session is None or self.state != "connected":
            why = f" ({self.error})" if self.error else ""
            raise ToolFailure(
                self._failure(
                    f"is {self.state}{why}, so this call was not sent. Try again later, or go on without it."
                )
            )
        return session

    async def call_tool(
        self, tool: str, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> types.CallToolResult:
        """Run ``tools/call`` for ``tool`` (its raw name on the server).

        Raises:
            ToolFailure: the server is down, the call went silent for the call timeout, the connection was lost, or
                the server answered with an error or a malformed result.
        """
        session = self._session()
        idle = self.spec.call_timeout

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            call.scope.deadline = anyio.current_time() + idle
            update: dict[str, Any] = {"progress": progress}
            if total is not None:
                update["total"] = total
            if message:
                update["message"] = message[:500]
            ctx.progress(update)

        call = _Call(anyio.CancelScope(deadline=anyio.current_time() + idle), f'running "{tool}"')
        self._calls.add(call)
        result: types.CallToolResult | None = None
        try:
            with call.scope:
                try:
                    result = await session.call_tool(tool, dict(arguments), progress_callback=progress)
                except call_errors() as exc:
                    if call.failure is None:
                        call.failure = self._request_failure(f'running "{tool}"', exc)
        finally:
            self._calls.discard(call)
            self._trim_stderr()
        if call.failure is not None:
            raise ToolFailure(call.failure)
        if result is None:  # the idle deadline passed (any other cancellation propagated out of the scope)
            self._suspect = True
            self._wake.set()
            raise ToolFailure(
                self._failure(
                    f'sent nothing for {idle:g}s while running "{tool}" (no result, no progress), so the call was '
                    "cancelled. Try again with a smaller request, or go on without it."
                )
            )
        return result

    def _request_failure(self, doing: str, exc: BaseException) -> str:
        if closed(exc):
            return self._failure(self._with_stderr(f"closed the connection while {doing}"))
        return self._failure(f"failed while {doing}: {describe(exc)}")

    async def request(self, doing: str, send: Callable[[ClientSession], Any]) -> Any:
        """One other request (list or read resources) under the call timeout.

        Raises:
            ToolFailure: as :meth:`call_tool`.
        """
        session = self._session()
        with anyio.move_on_after(self.spec.call_timeout) as scope:
            try:
                return await send(session)
            except call_errors() as exc:
                raise ToolFailure(self._request_failure(doing, exc)) from exc
        assert scope.cancelled_caught
        raise ToolFailure(self._failure(f"did not answer within {self.spec.call_timeout:g}s while {doing}"))

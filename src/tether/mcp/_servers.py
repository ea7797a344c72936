"""The MCP servers of one project root: started together, their tools registered in every Location of the root.

:class:`McpServers` is what ``Runtime.location`` wires in: :meth:`start` starts every configured server's
supervisor in the runtime's task group, in parallel, and waits until each has connected or failed (each within its
own connect deadline); :meth:`attach` registers the servers' tools in a Location's registry (the Location
placement: one registration per tool, so closing it reveals what was there before) and keeps them current as
servers list their tools again; :meth:`aclose` stops the supervisors, which close their sessions and end their
processes. A failed server is a status (:meth:`statuses`, what ``tether mcp list`` shows), never an error.

A server's ``list_changed`` reaches the next step: :meth:`attach` also registers :meth:`caught_up` as the registry's
``pending`` source, which every step awaits before it materializes. It waits, bounded by the server's connect
timeout (the re-listing's own deadline), until a listing made after the announcements received so far is
registered; with nothing announced it returns at once.

A tool whose name, description and schemas did not change keeps its registration across re-listings and restarts,
so a step that captured it still calls it (law 5: only a changed or removed tool makes a captured call stale).
Imports of the ``mcp`` SDK happen only when a server is configured.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from .._record import record
from ._names import tool_names
from ._spec import ServerSpec

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ..tools import Registration, Tool, ToolRegistry
    from ._connection import Connection, State

__all__ = ["McpServers", "ServerStatus"]

log = logging.getLogger("tether.mcp")

_CLOSE_TIMEOUT = 15.0
_MAX_INSTRUCTIONS = 8192


@record
class ServerStatus:
    """One server as ``tether mcp list`` shows it.

    Attributes:
        name: the configured name.
        state: ``connected``, ``failed``, ``disabled``, ... (see ``Connection.State``).
        transport: ``stdio``, ``http`` or ``sse`` (the one in use).
        tools: the effective names of its tools, with the raw name each stands for.
        error: why it failed or was last lost.
        server: the server's own name and version, once connected.
        skipped: tools left out (a schema tether cannot use), with the reason.
    """

    name: str
    state: State
    transport: str
    tools: tuple[tuple[str, str], ...]
    error: str | None
    server: str | None
    skipped: tuple[str, ...] = ()


class _Attached:
    """One Location registry's registrations of the servers' tools: name -> (fingerprint, registration)."""

    __slots__ = ("entries", "pending", "registry")

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.entries: dict[str, tuple[str, Registration]] = {}
        self.pending: Registration | None = None

    def close(self) -> None:
        if self.pending is not None:
            self.pending.close()
        for _, registration in self.entries.values():
            registration.close()
        self.entries.clear()


class McpServers:
    """The servers of one project root (see the module docstring).

    Args:
        specs: the configured servers.
        root: the project root (offered to the servers as their MCP root).
        taken: effective names the servers' tools must not take (the built-ins).
        workdir: the stdio servers' working directory when the project is untrusted (``None``: the project root).
    """

    def __init__(
        self, specs: Sequence[ServerSpec], root: Path, taken: Sequence[str] = (), workdir: Path | None = None
    ) -> None:
        self.root = root
        self.workdir = workdir
        self._taken = frozenset(taken)
        self._specs = tuple(specs)
        self.connections: tuple[Connection, ...] = ()
        self._attached: list[_Attached] = []
        self._tools: dict[
            str, tuple[str, Tool[Any, Any], str]
        ] = {}  # effective name -> (fingerprint, tool, origin)
        self._names: dict[str, tuple[tuple[str, str], ...]] = {}  # server -> (effective, raw) pairs
        self._skipped: dict[str, tuple[str, ...]] = {}
        self._started = anyio.Event()
        self._starting = False
        self._update = anyio.Event()  # set (and renewed) at every change of a state or a listing

    def _notify(self) -> None:
        self._update.set()
        self._update = anyio.Event()

    async def wait(self, done: Callable[[], bool]) -> None:
        """Return once ``done()`` holds, checking after every change of a server's state or tools (bound it with
        ``anyio.fail_after``)."""
        while not done():
            await self._update.wait()

    async def start(self, task_group: TaskGroup) -> None:
        """Start every enabled server and wait until each has connected or failed (idempotent: a second caller
        waits for the first)."""
        if self._starting:
            await self._started.wait()
            return
        self._starting = True
        try:
            if self._specs:
                from ._connection import Connection

                self.connections = tuple(
                    Connection(spec, self.root, self._changed, self._notify, workdir=self.workdir)
                    for spec in self._specs
                )
                for connection in self.connections:
                    task_group.start_soon(connection.run, name=f"tether mcp {connection.name}")
                for connection in self.connections:
                    await connection.settled.wait()
        finally:
            self._started.set()

    async def aclose(self) -> None:
        """Stop every server and wait (bounded) until their processes are gone; drop every registration."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            for connection in self.connections:
                connection.stop()
            for connection in self.connections:
                await connection.done.wait()
        for attached in self._attached:
            attached.close()
        self._attached.clear()

    def attach(self, registry: ToolRegistry) -> _Attached:
        """Register the servers' tools in ``registry`` and keep them current; ``close()`` the result to remove
        them."""
        attached = _Attached(registry)
        self._attached.append(attached)
        self._sync(attached)
        attached.pending = registry.pending(self.caught_up)
        return attached

    async def caught_up(self) -> None:
        """Return once each server that announced a change of its tools has registered a listing made after the
        announcements received so far (or is no longer connected); each wait is bounded by that server's connect
        timeout, after which the step goes on with the tools registered then. Returns at once when none owes one."""
        owed = [(c, c.announced) for c in self.connections if c.owes_listing]
        if not owed:
            return
        # a hang guard: the re-listing has this deadline of its own, and a server that misses it is lost (which
        # ends this wait), but the supervisor may first finish a ping
        with anyio.move_on_after(max(c.spec.connect_timeout for c, _ in owed)):
            await self.wait(lambda: all(c.listed >= n or not c.owes_listing for c, n in owed))

    def statuses(self) -> tuple[ServerStatus, ...]:
        """Every configured server, in config order."""
        return tuple(
            ServerStatus(
                name=c.name,
                state=c.state,
                transport=c.transport,
                tools=self._names.get(c.name, ()),
                error=c.error,
                server=c.server,
                skipped=self._skipped.get(c.name, ()),
            )
            for c in self.connections
        )

    def instructions(self) -> tuple[tuple[str, str], ...]:
        """``(server, instructions)`` of the connected servers that sent any (capped at 8 KiB each)."""
        return tuple(
            (c.name, c.instructions[:_MAX_INSTRUCTIONS])
            for c in self.connections
            if c.instructions and c.state == "connected"
        )

    def instruction_texts(self) -> tuple[str, ...]:
        """:meth:`instructions` as system texts (``prompts.server_instructions``), sent after the project's."""
        from ..prompts import server_instructions

        return tuple(server_instructions(name, text) for name, text in self.instructions())

    # -- keeping registrations current -------------------------------------------------------------------------------

    def _changed(self, connection: Connection) -> None:
        """A server listed its tools (connected, restarted or announced a change): rebuild the wanted tools and
        bring every attached registry to them."""
        from ._tools import mcp_tool, resource_tools

        live = [c for c in self.connections if c.tools or c is connection]
        names = tool_names(((c.name, t.name) for c in live for t in c.tools), self._taken)
        wanted: dict[str, tuple[str, Tool[Any, Any], str]] = {}
        shown: dict[str, list[tuple[str, str]]] = {}
        skipped: dict[str, list[str]] = {}
        for c in live:
            for raw in c.tools:
                name = names[c.name, raw.name]
                fingerprint = json.dumps(
                    [c.name, raw.name, raw.description, raw.title, raw.input_schema, raw.output_schema],
                    sort_keys=True,
                    default=str,
                )
                known = self._tools.get(name)
                if known is not None and known[0] == fingerprint:
                    wanted[name] = known
                else:
                    try:
                        wanted[name] = (fingerprint, mcp_tool(c, raw, name), f"mcp:{c.name}")
                    except (TypeError, ValueError) as exc:
                        skipped.setdefault(c.name, []).append(f"{raw.name}: {exc}")
                        log.warning("MCP server %s: tool %s left out: %s", c.name, raw.name, exc)
                        continue
                shown.setdefault(c.name, []).append((name, raw.name))
        if any(c.resources for c in self.connections):
            for name, tool in resource_tools(lambda: self.connections).items():
                wanted[name] = self._tools.get(name) or ("resources", tool, "mcp")
        self._tools = wanted
        self._names = {k: tuple(v) for k, v in shown.items()}
        self._skipped = {k: tuple(v) for k, v in skipped.items()}
        for attached in self._attached:
            self._sync(attached)
        self._notify()

    def _sync(self, attached: _Attached) -> None:
        for name in list(attached.entries):
            fingerprint, registration = attached.entries[name]
            now = self._tools.get(name)
            if now is None or now[0] != fingerprint:
                registration.close()
                del attached.entries[name]
        for name, (fingerprint, tool, origin) in self._tools.items():
            if name not in attached.entries:
                registration = attached.registry.register({name: tool}, origin=origin)
                attached.entries[name] = (fingerprint, registration)

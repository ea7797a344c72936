"""Serving a Location's tools to MCP clients (``tether mcp serve``): the catalog, and each call through the full path.

The server is the MCP SDK's low-level ``Server`` with two handlers:

* ``tools/list`` is the agent's catalog, exactly as a model's step sees it (``materialize`` over the agent's rules:
  a tool its rules deny on ``*`` is hidden). A tool with a typed output advertises its ``outputSchema`` (MCP wants an
  object schema; any other output is described by its text only).
* ``tools/call`` settles the call as a one-call turn (:class:`~tether.session.internal.OneCallModel`, the model
  behind ``tether tool call``) in the client's session, named ``mcp: <clientInfo.name>``. The turn decodes the input,
  asks permission at the point of action, runs hooks, bounds the content (the full output stays in the managed
  store) and records the call durably, so ``tether session show`` shows it like a model's call. The client receives
  what a model would read: the bounded content, or the error text as an ``isError`` result (an unknown tool, an input
  that does not validate, a failure, a rejected ask). ``structuredContent`` is the typed output when the tool
  declares one.

Each call runs on its own handle of the client's session (:meth:`~tether.session.Session.beside`), so one client's
calls run in parallel and a client's ``notifications/cancelled`` (which the SDK turns into cancelling the handler)
cancels only that call's turn: the part is recorded as aborted and interrupted, as tether records any cancellation.
While a call runs, its permission asks (``permission.asked``) are answered for it (:mod:`._serve_asks`) and its
progress (``ctx.progress``) becomes MCP progress notifications when the client sent a progress token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .. import ids
from ..content import File, Text
from ..errors import UsageError
from ..permissions import PendingRequest, PermissionAsked
from ..session import Session, ToolProgress
from ..storable import printable, visible
from ..tools import AfterEvent, Completed
from ._serve_asks import AskMode, ElicitChannel, answer_ask

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from .._runtime import Runtime, RuntimeLocation

__all__ = ["SESSION_PREFIX", "ToolServer"]

SESSION_PREFIX = "mcp: "
"""The title of a served client's session: ``mcp: <clientInfo.name>``."""

_PROGRESS_BUFFER = (
    64  # progress updates are a live tail: when the client reads slower than a tool reports, drop
)
_NAME_CHARS = 100
NOT_RECORDED_ERROR = (
    "The call ended before its result was recorded (the session's store refused a write, or the call was "
    "cancelled). Nothing more is known; check `tether session show` on the server."
)


@dataclass(kw_only=True, slots=True)
class _LiveCall:
    """A call in flight: where its asks are answered and its progress goes."""

    context: Any  # the SDK's ServerRequestContext of the tools/call
    tool: str
    tool_input: Any
    tasks: TaskGroup
    progress: MemoryObjectSendStream[Mapping[str, Any]]
    count: int = 0
    replies: list[str] = field(default_factory=list[str])


def _client_name(context: Any) -> str:
    params = context.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    name = " ".join(printable(str(name)).split())[:_NAME_CHARS]
    return name or "unnamed client"


def _transport_key(context: Any) -> str:
    """The MCP session a request belongs to: its ``Mcp-Session-Id`` over HTTP, the one connection over stdio."""
    from starlette.requests import Request

    request = context.request
    if isinstance(request, Request):
        return request.headers.get("mcp-session-id") or ""
    return ""


def _object_schema(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    # MCP's outputSchema (and so structuredContent) must describe an object.
    if schema is None or schema.get("type") != "object":
        return None
    return dict(schema)


def _mcp_content(part: Any) -> Any:
    import mcp_types as types

    if isinstance(part, Text):
        return types.TextContent(type="text", text=part.text)
    if isinstance(part, File):
        if part.data is not None and part.mime.startswith("image/"):
            return types.ImageContent(type="image", data=part.data, mime_type=part.mime)
        if part.data is not None and part.mime.startswith("audio/"):
            return types.AudioContent(type="audio", data=part.data, mime_type=part.mime)
        if part.data is not None:
            uri = f"tether://file/{part.name or 'attachment'}"
            return types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(uri=uri, mime_type=part.mime, blob=part.data),
            )
        return types.ResourceLink(
            type="resource_link", uri=part.uri or "", name=part.name or "file", mime_type=part.mime
        )
    raise TypeError(f"not a content part: {part!r}")  # the content shape is closed (law 8)


class ToolServer:
    """One Location's catalog for one agent, served to MCP clients; build :attr:`server` and run it on a transport.

    Args:
        runtime: the open runtime (store, permissions, bus).
        location: the open Location whose tools are served.
        agent: the agent whose rules filter the catalog and decide every call.
        ask: how an ask is answered when the client cannot elicit (``mcp_serve.ask``).

    Raises:
        UsageError: no such agent.
    """

    def __init__(self, runtime: Runtime, location: RuntimeLocation, *, agent: str, ask: AskMode) -> None:
        if agent not in runtime.agents:
            raise UsageError(f'no agent "{agent}"; agents: {", ".join(sorted(runtime.agents))}')
        self._rt = runtime
        self._location = location
        self._agent = agent
        self._ask: AskMode = ask
        self._sessions: dict[tuple[str, str], Session] = {}
        self._creating = anyio.Lock()
        self._calls: dict[str, _LiveCall] = {}
        self.server: Server[Any] = self._build()

    def _build(self) -> Server[Any]:
        from importlib.metadata import version

        from mcp.server.lowlevel import Server

        return Server(
            "tether",
            version=version("tether"),
            instructions=f"tether's coding tools for the project at {self._location.root}, under the permission "
            f"rules of the agent {self._agent}; every call is recorded in a tether session.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def _catalog(self) -> Any:
        agent = self._rt.agents[self._agent]
        return self._location.tools.materialize(agent.rules)

    # -- handlers ----------------------------------------------------------------------------------------------------

    async def _list_tools(
        self, context: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        import mcp_types as types

        tools = [
            types.Tool(
                name=definition.name,
                description=definition.description,
                input_schema=dict(definition.input_schema),
                output_schema=_object_schema(definition.output_schema),
            )
            for definition in self._catalog().definitions
        ]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, context: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        import mcp_types as types

        from ..session.internal import OneCallModel

        name, arguments = params.name, params.arguments if params.arguments is not None else {}
        declared = next((d for d in self._catalog().definitions if d.name == name), None)
        handle = (await self._session(context)).beside()
        call_id = ids.ascending("call")
        model = OneCallModel(name, arguments, call_id)
        outputs: list[Any] = []

        def keep_output(event: AfterEvent) -> None:
            if event.call_id == call_id and isinstance(event.outcome, Completed):
                outputs[:] = [event.outcome.output]

        send, receive = anyio.create_memory_object_stream[Mapping[str, Any]](_PROGRESS_BUFFER)
        with handle.tools.after(keep_output), send, receive:
            async with anyio.create_task_group() as tasks:
                live = self._calls[call_id] = _LiveCall(
                    context=context, tool=name, tool_input=arguments, tasks=tasks, progress=send
                )
                tasks.start_soon(self._forward_progress, live, receive)
                try:
                    await handle.prompt(f"mcp call {name}", model=model, system=())
                finally:
                    del self._calls[call_id]
                    tasks.cancel_scope.cancel()
        result = model.result
        if result is None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=NOT_RECORDED_ERROR)], is_error=True
            )
        content = [_mcp_content(part) for part in result.content]
        structured: dict[str, Any] | None = None
        if (
            not result.is_error
            and outputs
            and declared is not None
            and _object_schema(declared.output_schema)
        ):
            output = outputs[0]
            structured = cast(dict[str, Any], output) if isinstance(output, dict) else None
        return types.CallToolResult(content=content, structured_content=structured, is_error=result.is_error)

    # -- per call: asks and progress ----------------------------------------------------------------------------------

    async def _session(self, context: Any) -> Session:
        """The client's session, created on its first call (``mcp: <clientInfo.name>``)."""
        key = (_client_name(context), _transport_key(context))
        session = self._sessions.get(key)
        if session is not None:
            return session
        async with self._creating:
            session = self._sessions.get(key)
            if session is None:
                session = await self._rt.sessions.create(
                    self._location, agent=self._agent, title=SESSION_PREFIX + key[0]
                )
                # like `tether tool call`'s: never picked by `tether run --continue`
                await self._rt.store.set_kind(session.id, "tool-call")
                self._sessions[key] = session
        return session

    def on_asked(self, event: PermissionAsked) -> None:
        """The bus subscriber for ``permission.asked``: an ask of a served call is answered beside that call."""
        pending = event.request
        source = pending.request.source
        live = self._calls.get(source.call_id) if source is not None else None
        if live is not None:
            live.tasks.start_soon(self._answer, live, pending)

    def on_progress(self, event: ToolProgress) -> None:
        """The bus subscriber for ``tool.progress``: a served call's update goes to its client (dropped when full)."""
        live = self._calls.get(event.call_id)
        if live is not None:
            try:
                live.progress.send_nowait(event.update)
            except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async def _answer(self, live: _LiveCall, pending: PendingRequest) -> None:
        reply = await answer_ask(
            self._rt.permissions,
            pending,
            tool=live.tool,
            tool_input=live.tool_input,
            channel=ElicitChannel(context=live.context),
            mode=self._ask,
        )
        live.replies.append(reply)

    async def _forward_progress(
        self, live: _LiveCall, receive: MemoryObjectReceiveStream[Mapping[str, Any]]
    ) -> None:
        # ``report_progress`` is a no-op unless the client sent a progress token with this call.
        session = live.context.session
        async for update in receive:
            live.count += 1
            await session.report_progress(float(live.count), None, _progress_message(update))


def _progress_message(update: Mapping[str, Any]) -> str | None:
    for key in ("message", "title", "status"):
        value = update.get(key)
        if isinstance(value, str) and value:
            return visible(value)[:500]
    output = update.get("output")
    if isinstance(output, str) and output:
        return visible(output.rstrip("\n").rsplit("\n", 1)[-1])[:500]
    return None

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
While a call runs, its permission asks (``permission.asked``) are answered for it (:mod:`._asks`) and its
progress (``ctx.progress``) becomes MCP progress notifications when the client sent a progress token.

A call's turn runs in the server's task group (:meth:`ToolServer.running`), not in the request handler: on the
2026-07-28 protocol a request cannot carry a server-to-client request, so a call that asks permission returns an
``InputRequiredResult`` (the form, and the call's ``request_state``) while its turn waits, and the client's retry with
the answer finds the call again and follows it to its result. The handler that follows a call owns its cancellation:
a cancelled handler (``notifications/cancelled``, a client gone) cancels the call's turn.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .. import ids
from .._record import record
from ..content import File, Text
from ..errors import UsageError
from ..permissions import PendingRequest, PermissionAsked
from ..session import Session, SessionUpdated, ToolProgress
from ..session.internal import Descendants
from ..storable import printable, visible
from ..tools import AfterEvent, Completed
from ._asks import ROUND_TRIP_WAIT, AskMode, ElicitChannel, answer_ask, elicit_form

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from .._runtime import Runtime, RuntimeLocation
    from ..llm import ToolResultContent

__all__ = ["SESSION_PREFIX", "ToolServer"]

log = logging.getLogger(__name__)

SESSION_PREFIX = "mcp: "
"""The title of a served client's session: ``mcp: <clientInfo.name>``."""

# progress updates are a live tail: when the client reads slower than a tool reports, later ones are dropped
_PROGRESS_BUFFER = 64
_NAME_CHARS = 100
_INPUT_KEY = "permission"
STOPPING_ERROR = (
    "The server is stopping: the call was cancelled and is recorded as aborted in its session. Call it again once "
    "the server is back."
)
NOT_RECORDED_ERROR = (
    "The call ended before its result was recorded (the session's store refused a write, or the call was "
    "cancelled). Nothing more is known; check `tether session show` on the server."
)


@record(kw_only=False)
class _Needs:
    """The call waits for its client's answer to this permission ask (a 2026-07-28 round trip)."""

    pending: PendingRequest
    tool: str  # who asks, as the form shows it: the served tool, or its subagent
    tool_input: Any


@dataclass(kw_only=True, slots=True)
class _LiveCall:
    """A call in flight: where its asks are answered, its progress goes, and what its handler waits for."""

    # the SDK's ServerRequestContext of the request following the call (its tools/call, or the retry of it)
    context: Any
    client: tuple[str, str]
    tool: str
    tool_input: Any
    handle: Session
    token: str
    signals: MemoryObjectSendStream[_Needs | types.CallToolResult]
    progress: MemoryObjectSendStream[Mapping[str, Any]]
    tasks: TaskGroup | None = None
    answered: anyio.Event | None = None
    answer: Any = None
    count: int = 0
    # one form at a time: the call's subagents may ask in parallel
    asking: anyio.Lock = field(default_factory=anyio.Lock)


def _client_name(context: Any) -> str:
    params = context.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    name = " ".join(printable(str(name)).split())[:_NAME_CHARS]
    return name or "unnamed client"


def _client_key(context: Any) -> tuple[str, str]:
    return _client_name(context), _transport_key(context)


def _result(
    result: ToolResultContent | None, output: Any, failure: str | None = None
) -> types.CallToolResult:
    """What the client receives: the call's result as the model reads it, and its typed output when declared."""
    import mcp_types as types

    if result is None:
        text = failure or NOT_RECORDED_ERROR
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
    content = [_mcp_content(part) for part in result.content]
    structured = cast(dict[str, Any], output) if isinstance(output, dict) and not result.is_error else None
    return types.CallToolResult(content=content, structured_content=structured, is_error=result.is_error)


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
        self._family = Descendants[str]()  # a subagent's session -> the id of the served call that started it
        self._jobs: TaskGroup | None = None
        self._results: dict[str, MemoryObjectReceiveStream[_Needs | types.CallToolResult]] = {}
        self._waiting: dict[str, _LiveCall] = {}  # request_state -> a call waiting for its client's answer
        self._stopping = False
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

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Where the calls' turns run: serve the transport inside it; leaving it cancels the calls still running."""
        async with anyio.create_task_group() as jobs:
            self._jobs = jobs
            try:
                yield
            finally:
                self._jobs = None
                jobs.cancel_scope.cancel()
                for results in self._results.values():
                    results.close()
                self._results.clear()

    def stop_calls(self) -> None:
        """Cancel the calls running now and refuse new ones (the server is stopping): each call's part is recorded as
        aborted, as any cancellation records it, and its request answers with an error that says so."""
        self._stopping = True
        for live in tuple(self._calls.values()):
            live.handle.cancel()

    async def _call_tool(
        self, context: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        import mcp_types as types

        if params.request_state is None:
            live = await self._start(context, params)
        else:
            found = self._waiting.get(params.request_state)
            if found is None or found.client != _client_key(context):
                text = "Unknown or expired request_state: call the tool again without it."
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=text)], is_error=True
                )
            # the retry continues the call as first asked (its name and arguments are not read again): what the
            # user approves is what runs
            live = found
            del self._waiting[params.request_state]
            response = (params.input_responses or {}).get(_INPUT_KEY)
            live.answer = response if isinstance(response, types.ElicitResult) else None
            if live.answered is not None:
                live.answered.set()
        return await self._follow(live, context)

    async def _start(self, context: Any, params: types.CallToolRequestParams) -> _LiveCall:
        import mcp_types as types

        from ..session.internal import OneCallModel

        jobs = self._jobs
        if jobs is None:
            raise UsageError("ToolServer.running() must be entered to serve calls")
        if self._stopping:
            raise UsageError("The server is stopping: no new call starts")
        name, arguments = params.name, params.arguments if params.arguments is not None else {}
        declared = next((d for d in self._catalog().definitions if d.name == name), None)
        handle = (await self._session(context)).beside()
        call_id = ids.ascending("call")
        signals, results = anyio.create_memory_object_stream[_Needs | types.CallToolResult](math.inf)
        progress, updates = anyio.create_memory_object_stream[Mapping[str, Any]](_PROGRESS_BUFFER)
        live = _LiveCall(
            context=context,
            client=_client_key(context),
            tool=name,
            tool_input=arguments,
            handle=handle,
            token=secrets.token_urlsafe(24),
            signals=signals,
            progress=progress,
        )
        self._results[live.token] = results
        model = OneCallModel(name, arguments, call_id)
        outputs: list[Any] = []

        def keep_output(event: AfterEvent) -> None:
            if event.call_id == call_id and isinstance(event.outcome, Completed):
                outputs[:] = [event.outcome.output]

        async def run() -> None:
            failure: str | None = None
            with handle.tools.after(keep_output), signals, progress, updates:
                async with anyio.create_task_group() as tasks:
                    live.tasks = tasks
                    self._calls[call_id] = live
                    self._family.add_call(call_id, call_id)
                    tasks.start_soon(self._forward_progress, live, updates)
                    try:
                        await handle.prompt(f"mcp call {name}", model=model, system=())
                    except Exception as exc:
                        # The turn itself failed (the store refused a write, a defect): the call's request gets an
                        # error, as the SDK would answer a handler's exception, and the server goes on serving the
                        # other calls (this job runs in the server's task group, not in the request's).
                        log.exception("mcp serve: the turn of a %s call failed", name)
                        failure = f"The call could not be recorded: {type(exc).__name__}: {exc}"
                    finally:
                        del self._calls[call_id]
                        self._family.forget(call_id)
                        self._waiting.pop(live.token, None)
                        tasks.cancel_scope.cancel()
                if model.result is None and self._stopping:
                    failure = failure or STOPPING_ERROR
                structured = declared is not None and _object_schema(declared.output_schema) is not None
                result = _result(model.result, outputs[0] if outputs and structured else None, failure)
                with suppress(anyio.BrokenResourceError):  # its request is gone (cancelled): nobody to tell
                    signals.send_nowait(result)

        jobs.start_soon(run)
        return live

    async def _follow(
        self, live: _LiveCall, context: Any
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Wait for the call's result, or for a question its client must answer first (2026-07-28)."""
        import mcp_types as types

        live.context = context
        results = self._results[live.token]
        received = False
        try:
            signal = await results.receive()
            received = True
        except anyio.EndOfStream:  # the server is stopping: the turn was cancelled before it had a result
            signal = _result(None, None)
        finally:
            if (
                not received
            ):  # this request was cancelled (notifications/cancelled, the client left), or ended
                live.handle.cancel()
                self._results.pop(live.token, None)
                results.close()
        if isinstance(signal, _Needs):
            self._waiting[live.token] = live
            message, schema = elicit_form(signal.pending, signal.tool, signal.tool_input)
            form = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
            )
            return types.InputRequiredResult(input_requests={_INPUT_KEY: form}, request_state=live.token)
        self._results.pop(live.token, None)
        results.close()
        return signal

    # -- per call: asks and progress ----------------------------------------------------------------------------------

    async def _session(self, context: Any) -> Session:
        """The client's session, created on its first call (``mcp: <clientInfo.name>``)."""
        key = _client_key(context)
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

    def on_session(self, event: SessionUpdated) -> None:
        """The bus subscriber for ``session.updated``: a subagent's session started by a served call (a ``task``), or
        by one of its subagents, belongs to that call, so its asks are answered with the call's."""
        self._family.learn(event.session)

    def on_asked(self, event: PermissionAsked) -> None:
        """The bus subscriber for ``permission.asked``: an ask of a served call, or of a subagent it started, is
        answered beside that call."""
        pending = event.request
        source = pending.request.source
        live = self._calls.get(source.call_id) if source is not None else None
        if live is None and (root := self._family.root(pending.session_id)) is not None:
            live = self._calls.get(root)
        if live is not None and live.tasks is not None:
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
        tool, tool_input = live.tool, live.tool_input
        if pending.session_id != live.handle.id:
            # a subagent's ask: the form says whose, and shows its command or diff, not the served call's input
            agent = printable(pending.request.agent or "?")
            tool, tool_input = f"{live.tool} (its subagent {agent}, session {pending.session_id})", None

        async def round_trip(pending: PendingRequest) -> Any:
            # 2026-07-28: the call's request returns the form; the client's retry sets the answer (or none comes)
            live.answered = anyio.Event()
            live.answer = None
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                live.signals.send_nowait(_Needs(pending, tool, tool_input))
            with anyio.move_on_after(ROUND_TRIP_WAIT):
                await live.answered.wait()
            self._waiting.pop(live.token, None)
            return live.answer

        async with live.asking:
            if not any(p.id == pending.id for p in self._rt.permissions.pending(pending.session_id)):
                return  # answered while an earlier form was open (an "always" reply approved it too)
            await answer_ask(
                self._rt.permissions,
                pending,
                tool=tool,
                tool_input=tool_input,
                channel=ElicitChannel(context=live.context),
                mode=self._ask,
                round_trip=round_trip,
            )

    async def _forward_progress(
        self, live: _LiveCall, receive: MemoryObjectReceiveStream[Mapping[str, Any]]
    ) -> None:
        # ``report_progress`` is a no-op unless the client sent a progress token with the request now following the
        # call; a request that is gone (the client left) drops the update, never the call.
        from mcp.shared.exceptions import MCPError

        async for update in receive:
            live.count += 1
            try:
                await live.context.session.report_progress(float(live.count), None, _progress_message(update))
            except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass


def _progress_message(update: Mapping[str, Any]) -> str | None:
    for key in ("message", "title", "status"):
        value = update.get(key)
        if isinstance(value, str) and value:
            return visible(value)[:500]
    output = update.get("output")
    if isinstance(output, str) and output:
        return visible(output.rstrip("\n").rsplit("\n", 1)[-1])[:500]
    return None

"""MCP tools and resources as plain :class:`~tether.tools.Tool` values (law 1).

A server's tool becomes a ``Tool`` with the server's input schema as a raw JSON Schema codec (normalized where wild
schemas contradict themselves), its output schema when it declares one, and no deadline of tether's own: the
connection enforces an idle deadline that each progress notification restarts (``Connection.call_tool``). Its
``execute`` asks the permission service for the tool's effective name on ``"*"`` (``{"permission": {"github_*":
"ask"}}`` then works), calls the server and turns the result into content (``_results``).

The two resource tools, ``list_mcp_resources`` and ``read_mcp_resource``, are grouped under the ``read``
permission, with ``mcp:<server>:<uri>`` as the resource (``mcp:<server>:*`` for a listing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..content import Content, Text
from ..errors import ToolFailure
from ..tools import Tool, ToolContext, ToolResponse
from ._results import resource_parts, tool_response

if TYPE_CHECKING:
    from mcp import types

    from ._connection import Connection

__all__ = ["LIST_RESOURCES", "READ_RESOURCE", "mcp_tool", "resource_tools"]

LIST_RESOURCES = "list_mcp_resources"
READ_RESOURCE = "read_mcp_resource"
_MAX_DESCRIPTION = 4096


def mcp_tool(connection: Connection, raw: types.Tool, name: str) -> Tool[Any, Any]:
    """The tool ``raw`` of ``connection``'s server, registered as ``name``.

    Raises:
        TypeError: the server's input or output schema cannot be used (the tool is then left out).
        ValueError: as ``TypeError`` (a JSON Schema that is not valid).
    """
    server, tool = connection.name, raw.name
    described = (
        raw.description or raw.title or ""
    ).strip() or f'The tool "{tool}" of the MCP server "{server}".'
    has_output = raw.output_schema is not None
    codecs = connection.codecs.get(tool)
    if isinstance(codecs, str):
        raise ValueError(codecs)

    async def execute(value: Any, ctx: ToolContext) -> ToolResponse[Any]:
        await ctx.ask(name, "*", metadata={"server": server, "tool": tool})
        result = await connection.call_tool(tool, value if isinstance(value, Mapping) else {}, ctx)
        return tool_response(server, tool, result, has_output=has_output)

    return Tool(
        description=described[:_MAX_DESCRIPTION],
        input=codecs[0] if codecs else dict(raw.input_schema),
        output=(codecs[1] if codecs else dict(raw.output_schema)) if raw.output_schema is not None else None,
        execute=execute,
        timeout=None,
    )


def _find(connections: Callable[[], Sequence[Connection]], server: str) -> Connection:
    found = {c.name: c for c in connections() if c.state != "disabled"}
    if server not in found:
        names = ", ".join(sorted(found)) or "(none)"
        raise ToolFailure(f'No MCP server is named "{server}". The configured servers: {names}.')
    return found[server]


def resource_tools(connections: Callable[[], Sequence[Connection]]) -> dict[str, Tool[Any, Any]]:
    """``list_mcp_resources`` and ``read_mcp_resource`` over the servers ``connections()`` returns."""

    async def list_resources(value: Mapping[str, Any], ctx: ToolContext) -> ToolResponse[Any]:
        wanted = value.get("server")
        chosen = [_find(connections, wanted)] if isinstance(wanted, str) else list(connections())
        lines: list[str] = []
        for connection in chosen:
            if wanted is None and (connection.state != "connected" or not connection.resources):
                continue
            await ctx.ask("read", f"mcp:{connection.name}:*", metadata={"server": connection.name})
            found = await connection.request("listing resources", _all_resources)
            lines += [_resource_line(connection.name, r) for r in found]
        text = "\n".join(lines) if lines else "No MCP server offers resources."
        return ToolResponse(content=text)

    async def read_resource(value: Mapping[str, Any], ctx: ToolContext) -> ToolResponse[Any]:
        server, uri = str(value["server"]), str(value["uri"])
        connection = _find(connections, server)
        await ctx.ask("read", f"mcp:{server}:{uri}", metadata={"server": server, "uri": uri})
        result = await connection.request(f"reading {uri}", lambda s: s.read_resource(uri))
        parts: list[Content] = resource_parts(result.contents) or [Text(f"The resource {uri} is empty.")]
        return ToolResponse(content=parts)

    return {
        LIST_RESOURCES: Tool(
            description="List the resources (files, records, documents) the connected MCP servers offer, one per "
            "line: server, URI, name, type and description. Read one with read_mcp_resource.",
            input={
                "type": "object",
                "properties": {"server": {"type": "string", "description": "Only this server's resources."}},
                "additionalProperties": False,
            },
            execute=list_resources,
            timeout=None,
            permission="read",
        ),
        READ_RESOURCE: Tool(
            description="Read one resource of an MCP server by its URI (list them with list_mcp_resources).",
            input={
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The server's name."},
                    "uri": {"type": "string", "description": "The resource's URI, as listed."},
                },
                "required": ["server", "uri"],
                "additionalProperties": False,
            },
            execute=read_resource,
            timeout=None,
            permission="read",
        ),
    }


async def _all_resources(session: Any) -> list[types.Resource]:
    from ._connection import every_page

    return await every_page(session.list_resources, "resources", limit=100)


def _resource_line(server: str, resource: types.Resource) -> str:
    mime = f" ({resource.mime_type})" if resource.mime_type else ""
    about = f": {' '.join(resource.description.split())[:200]}" if resource.description else ""
    return f"{server} {resource.uri} {resource.name}{mime}{about}"

"""MCP, the client: connect the configured MCP servers (their tools and resources enter the Location's catalog as plain
tools). Serving a Location's tools to MCP clients (``tether mcp serve``) is an edge of its own: :mod:`tether.mcp_server`.

The client connects each server named in ``tether.json``'s ``mcp`` key when a Location opens (``tether.mcp`` stays
import-light: the ``mcp`` SDK loads only when a server is configured). See ``docs/mcp.md``.
"""

__all__: list[str] = []

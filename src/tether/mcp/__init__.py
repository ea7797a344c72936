"""MCP: connect the configured MCP servers (their tools and resources enter the Location's catalog as plain tools),
and serve a Location's tools to MCP clients.

The client connects each server named in ``tether.json``'s ``mcp`` key when a Location opens (``tether.mcp`` stays
import-light: the ``mcp`` SDK loads only when a server is configured). See ``docs/mcp.md``.
"""

__all__: list[str] = []

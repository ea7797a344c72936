"""``tether mcp serve``: a Location's tools for one agent, served to MCP clients over stdio or streamable HTTP.

An edge, like :mod:`tether.server`: it opens nothing of its own but uses a :class:`~tether.Runtime` and the rooms'
public surfaces, and nothing below it imports it (the CLI starts it). The MCP *client* (configured servers' tools in
the catalog) is :mod:`tether.mcp`, a tool source on a lower floor; the two share nothing but the ``mcp`` SDK.

* :class:`ToolServer`: the catalog (``tools/list``) and each call through the full path as a one-call turn
  (:mod:`._server`), its permission asks answered through elicitation or ``mcp_serve.ask`` (:mod:`._asks`);
* :func:`serve_stdio`: the stdio transport, over a stdin a stop can abandon (:mod:`._stdio`);
* :func:`serve_http` and :func:`server_token`: the guarded streamable HTTP transport (:mod:`._http`).

See ``docs/mcp.md`` (serving) and ``docs/security.md``.
"""

from __future__ import annotations

from ._http import MAX_BODY_BYTES, TOKEN_FILE, serve_http, server_token
from ._server import ToolServer
from ._stdio import serve_stdio

__all__ = ["MAX_BODY_BYTES", "TOKEN_FILE", "ToolServer", "serve_http", "serve_stdio", "server_token"]

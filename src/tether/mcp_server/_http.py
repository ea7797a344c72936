"""The streamable HTTP transport of ``tether mcp serve``: who may reach the served tools, and how.

The tools act on the user's project with the user's rights, so the HTTP endpoint is guarded as a local service that
any web page the user opens could try to reach:

* **loopback by default** (``127.0.0.1``); another ``--host`` is served with a warning on stderr;
* **a bearer token on every request**: ``Authorization: Bearer <token>``, compared in constant time. The token is
  the value of the environment variable ``mcp_serve.token_env`` names, else a random one made for this server,
  printed once on stderr and written with mode 0600 to ``<data dir>/mcp-serve.token`` (a client on the same account
  reads it from there). A request without it, or with another, gets 401 before the MCP layer sees it;
* **a Host allow-list** against DNS rebinding (a page of ``evil.example`` resolved to 127.0.0.1 sends
  ``Host: evil.example``): only the loopback names and ``--host`` itself with the served port, plus
  ``mcp_serve.allowed_hosts``; an ``Origin`` header, when sent, must be one of those hosts over http. The MCP SDK's
  transport security applies both checks;
* **no CORS**: no ``Access-Control-Allow-Origin`` is ever sent, so a browser page cannot read a response even if it
  guessed the token;
* **a request body limit** (``MAX_BODY_BYTES``): a larger body is refused with 413 before it is parsed.
"""

from __future__ import annotations

import hmac
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._local_http import allowed_hosts, bind, is_loopback, write_token  # shared with tether serve
from ..errors import UsageError

if TYPE_CHECKING:
    import anyio
    from mcp.server.lowlevel import Server
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "MAX_BODY_BYTES",
    "TOKEN_FILE",
    "BearerGuard",
    "allowed_hosts",
    "bind",
    "is_loopback",
    "serve_http",
    "server_token",
]

MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body accepted (4 MiB: a tool input, never a file upload)."""
TOKEN_FILE = "mcp-serve.token"


def server_token(data_dir: Path, env_name: str | None) -> tuple[str, bool]:
    """The bearer token clients must send, and whether it was made now (then it is written to the token file).

    Raises:
        UsageError: ``env_name`` is configured but the variable is unset or shorter than 16 characters.
    """
    if env_name is not None:
        value = os.environ.get(env_name, "")
        if len(value) < 16:
            raise UsageError(
                f"mcp_serve.token_env names ${env_name}, which is {'unset' if not value else 'shorter than 16 characters'}"
                "; set it to a long random value, or remove token_env to get a random token per server"
            )
        return value, False
    return write_token(data_dir, TOKEN_FILE), True


class BearerGuard:
    """ASGI middleware: every HTTP request carries ``Authorization: Bearer <token>`` or gets 401 (constant time)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = b""
            for key, value in scope.get("headers", ()):
                if key == b"authorization":
                    given = value
                    break
            if not hmac.compare_digest(given, self._expected):
                from starlette.responses import JSONResponse

                body = {
                    "error": "unauthorized",
                    "error_description": "send Authorization: Bearer <token> (printed by tether mcp serve on "
                    f"stderr, and stored in its data directory as {TOKEN_FILE})",
                }
                response = JSONResponse(
                    body, status_code=401, headers={"WWW-Authenticate": 'Bearer realm="tether"'}
                )
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)


async def serve_http(
    server: Server[Any],
    *,
    sock: socket.socket,
    host: str,
    token: str,
    extra_hosts: Sequence[str] = (),
    stop: anyio.Event | None = None,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve ``server`` over streamable HTTP at ``/mcp`` on the bound ``sock`` until ``stop`` is set, or cancelled.

    A stop closes the listening socket, runs ``on_stop`` (cancel the running calls, so their requests answer), gives
    open connections a second, and returns. It never installs signal handlers: the caller decides what one does.
    """
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from .. import _uvicorn

    port = sock.getsockname()[1]
    hosts = allowed_hosts(host, port, extra_hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )
    app = server.streamable_http_app(
        transport_security=security, max_request_body_size=MAX_BODY_BYTES, host=host
    )
    config = uvicorn.Config(
        BearerGuard(app, token),
        log_level="warning",
        lifespan="on",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=1,  # a client's open event stream does not hold a stopping server
        h11_max_incomplete_event_size=64 * 1024,
    )
    await _uvicorn.serve(_uvicorn.Server(config), sock, stop=stop, on_stop=on_stop)

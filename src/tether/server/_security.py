"""What keeps strangers out of ``tether serve``: the token, the Host allow-list, origins, CORS and body limits.

The server acts on the user's project with the user's rights (a prompt can run the shell), and OpenCode's history
shows the attack: CVE-2026-22812, an unauthenticated server with permissive CORS let any web page the user visited
run commands. So every layer here refuses by default, in this order, before a route sees the request:

1. **Host allow-list** (DNS rebinding: a page of ``evil.example`` resolved to 127.0.0.1 sends
   ``Host: evil.example``): only the loopback names and the ``--host`` with the served port, plus the configured
   extra hosts; anything else is 421.
2. **Origin**: a browser sends it on cross-origin requests (and on same-origin POSTs). It must be the server's own
   origin (the inspector) or one of the explicitly configured ``--cors-origin`` values; anything else is 403. No
   wildcard exists: ``*`` is refused when configured.
3. **CORS**: only for a configured origin, its exact value is echoed in ``Access-Control-Allow-Origin`` (a preflight
   ``OPTIONS`` from it is answered without a token, as browsers send none); never ``*``.
4. **Bearer token** on every route under ``/api`` (the event stream included), compared in constant time; the
   inspector's page and script (``/``, ``/static/...``) hold no data and are served without it: the page asks for the
   token. The token is never written to a log (uvicorn's access log is off; errors never echo headers).
5. **Body limit**: a declared ``Content-Length`` above :data:`MAX_BODY_BYTES` is 413 at once; a chunked body is
   read whole (up to the limit) before the route runs, and 413 the moment it passes the limit.

What it does not do: TLS (serve on loopback, or put a TLS proxy in front), rate limiting.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._local_http import allowed_hosts, bind, is_loopback, write_token
from ..errors import UsageError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "MAX_BODY_BYTES",
    "TOKEN_ENV",
    "TOKEN_FILE",
    "Guard",
    "allowed_hosts",
    "bind",
    "check_origins",
    "is_loopback",
    "server_token",
]

MAX_BODY_BYTES = 1024 * 1024
"""The largest request body accepted (1 MiB: a prompt or a reply, never an upload)."""
TOKEN_FILE = "server.token"
TOKEN_ENV = "TETHER_SERVER_TOKEN"
"""The environment variable that configures the token (at least 16 characters); else a random one per server."""


def server_token(data_dir: Path, environ: dict[str, str] | None = None) -> tuple[str, bool]:
    """The bearer token clients must send, and whether it was made now (then it is in ``<data_dir>/server.token``).

    ``$TETHER_SERVER_TOKEN`` configures it; else a random 256-bit token is made and written 0600 (a client on the
    same account reads it there; the file is replaced, never followed through a symlink). Blocking.

    Raises:
        UsageError: ``$TETHER_SERVER_TOKEN`` is set but shorter than 16 characters.
    """
    value = (os.environ if environ is None else environ).get(TOKEN_ENV)
    if value is not None:
        if len(value) < 16 or not value.isprintable() or not value.isascii():
            raise UsageError(
                f"${TOKEN_ENV} must be at least 16 printable ASCII characters; set a long random value, or unset it "
                "to get a random token per server"
            )
        return value, False
    return write_token(data_dir, TOKEN_FILE), True


def check_origins(origins: Sequence[str]) -> None:
    """Refuse a CORS origin that is a wildcard or not exactly ``scheme://host[:port]``.

    Raises:
        UsageError: an origin is ``*`` or malformed.
    """
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        if (
            origin == "*"
            or not sep
            or scheme not in ("http", "https")
            or not rest
            or "/" in rest
            or "*" in rest
        ):
            raise UsageError(
                f"CORS origin {origin!r} is not allowed: name each origin exactly, e.g. http://localhost:5173 "
                "(a wildcard would let any page drive the server)"
            )


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value
    return None


async def _refuse(
    send: Send, status: int, error: str, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = json.dumps({"error": error, "detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware applying the checks of the module docstring to every HTTP request.

    Args:
        app: the routes.
        token: the bearer token.
        hosts: the ``Host`` values served (:func:`allowed_hosts`).
        cors_origins: origins (``scheme://host[:port]``) whose pages may call the API; never ``*``.
        max_body: the body limit in bytes.

    Raises:
        UsageError: an origin is ``*`` or not ``scheme://host[:port]``.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        hosts: Sequence[str],
        cors_origins: Sequence[str] = (),
        max_body: int = MAX_BODY_BYTES,
    ) -> None:
        check_origins(cors_origins)
        self._app = app
        self._expected = f"Bearer {token}".encode()
        self._hosts = frozenset(h.lower().encode() for h in hosts)
        self._cors = frozenset(o.encode() for o in cors_origins)
        self._own = frozenset(b"http://" + h.lower().encode() for h in hosts)
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self._app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if host is None or host.lower() not in self._hosts:
            await _refuse(send, 421, "misdirected_request", "this server does not serve that Host name")
            return
        origin = _header(scope, b"origin")
        cors = origin is not None and origin in self._cors
        if origin is not None and not cors and origin.lower() not in self._own:
            await _refuse(send, 403, "forbidden_origin", "pages of this origin may not call the server")
            return
        cors_headers: list[tuple[bytes, bytes]] = []
        if cors:
            assert origin is not None
            cors_headers = [(b"access-control-allow-origin", origin), (b"vary", b"Origin")]
            if scope["method"] == "OPTIONS":
                await send(
                    {
                        "type": "http.response.start",
                        "status": 204,
                        "headers": [
                            *cors_headers,
                            (b"access-control-allow-methods", b"GET, POST, DELETE"),
                            (b"access-control-allow-headers", b"authorization, content-type, last-event-id"),
                            (b"access-control-max-age", b"600"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        path: str = scope["path"]
        if path.startswith("/api") and not hmac.compare_digest(
            _header(scope, b"authorization") or b"", self._expected
        ):
            await _refuse(
                send,
                401,
                "unauthorized",
                "send Authorization: Bearer <token> (printed by tether serve, and stored in its data directory "
                f"as {TOKEN_FILE})",
                [(b"www-authenticate", b'Bearer realm="tether"'), *cors_headers],
            )
            return
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self._max_body):
            await _refuse(
                send, 413, "body_too_large", f"a request body may hold at most {self._max_body} bytes"
            )
            return
        await self._forward(scope, receive, send, cors_headers)

    async def _forward(
        self, scope: Scope, receive: Receive, send: Send, cors_headers: Sequence[tuple[bytes, bytes]]
    ) -> None:
        # The body is read here, whole, before the route runs (bodies are small: a prompt, a reply): a chunked body
        # over the limit is refused before anything parses it.
        chunks: list[bytes] = []
        read = 0
        if scope["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away
                chunk: bytes = message.get("body", b"")
                read += len(chunk)
                if read > self._max_body:
                    await _refuse(
                        send, 413, "body_too_large", f"a request body may hold at most {self._max_body} bytes"
                    )
                    return
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and cors_headers:
                message = {**message, "headers": [*message.get("headers", ()), *cors_headers]}
            await send(message)

        await self._app(scope, replay, sending)

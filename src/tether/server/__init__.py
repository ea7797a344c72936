"""``tether serve``: the HTTP API, the live event stream and the web inspector of one project (docs/server.md).

The server is closed to strangers by default (:mod:`._security`): a bearer token on every API route, a Host
allow-list, explicit CORS origins only, loopback unless told otherwise, body limits.
"""

from __future__ import annotations

from ._app import build_app, serve
from ._security import MAX_BODY_BYTES, TOKEN_ENV, TOKEN_FILE, allowed_hosts, bind, is_loopback, server_token

__all__ = [
    "MAX_BODY_BYTES",
    "TOKEN_ENV",
    "TOKEN_FILE",
    "allowed_hosts",
    "bind",
    "build_app",
    "is_loopback",
    "serve",
    "server_token",
]

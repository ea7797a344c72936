"""``tether serve``'s app and its life: the routes behind the :class:`~._security.Guard`, the inspector's files, the
event hub's tail task and the background turns, all in one task group for as long as uvicorn serves. When serving
ends, the running turns are cancelled and waited for (their calls recorded as aborted) before :func:`serve` returns.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ._events import EventHub
from ._project import ServedProject
from ._security import MAX_BODY_BYTES, Guard, allowed_hosts
from ._state import ServerState

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from .._runtime import Runtime, RuntimeLocation
    from ..llm import Model

__all__ = ["ASSETS", "STATIC", "build_app", "serve"]

STATIC = Path(__file__).parent / "static"
ASSETS = frozenset({"app.css", "app.js", "asks.js", "diff.js", "dom.js", "markdown.js", "session.js"})
"""The inspector's files (ES modules and one stylesheet); any other name is a 404."""
_PAGE_HEADERS = {
    # the inspector runs only its own script and talks only to this server; nothing may frame it
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def build_app(state: ServerState) -> Starlette:
    """The routes (without the guard): the API under ``/api``, the inspector at ``/`` and ``/static``."""
    from starlette.applications import Starlette
    from starlette.responses import FileResponse, JSONResponse
    from starlette.routing import Route

    from ._routes import handlers

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=_PAGE_HEADERS)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return JSONResponse({"error": "not_found", "detail": "no such file"}, status_code=404)
        return FileResponse(STATIC / name, headers=_PAGE_HEADERS)

    routes = [Route(path, handler, methods=[method]) for method, path, handler in handlers()]
    routes += [
        Route("/", page, methods=["GET"]),
        Route("/static/{name}", asset, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.tether = state
    return app


async def serve(
    rt: Runtime,
    location: RuntimeLocation,
    *,
    sock: socket.socket,
    host: str,
    token: str,
    choose_model: Callable[[str | None], Model],
    cors_origins: Sequence[str] = (),
    extra_hosts: Sequence[str] = (),
    heartbeat: float = 15.0,
    queue_size: int = 1024,
    max_body: int = MAX_BODY_BYTES,
    started: Callable[[uvicorn.Server], Any] | None = None,
    stop: anyio.Event | None = None,
) -> None:
    """Serve the API on the bound ``sock`` until ``stop`` is set, or uvicorn is told to exit, or until cancelled.

    A stop (``stop`` or uvicorn's exit) closes the listening socket, cancels the running turns at once, gives open
    connections a second, and returns once the cancelled turns have recorded their end. It never installs signal
    handlers: the caller decides what a signal does (``tether serve``: SIGTERM and SIGINT set ``stop``).

    Args:
        rt: the open runtime.
        location: the served project.
        sock: a listening socket (:func:`tether.server.bind`).
        host: the address it is bound to (what the Host allow-list adds to the loopback names).
        token: the bearer token.
        choose_model: resolves a prompt's ``model`` (``None``: the server's default).
        cors_origins: exact origins whose pages may call the API.
        extra_hosts: more ``Host`` values to serve (``name:port``).
        heartbeat: seconds between event-stream heartbeats.
        queue_size: frames a slow event-stream client may have waiting before it is dropped.
        max_body: the request body limit in bytes.
        started: called with the uvicorn server once it is set up (tests and benchmarks stop it through it).
        stop: set it to stop serving in order.
    """
    import uvicorn

    from .. import _uvicorn

    port = sock.getsockname()[1]
    project = ServedProject(rt, str(location.root))
    hub = EventHub(rt.store, project, queue_size=queue_size)
    async with anyio.create_task_group() as group:
        state = ServerState(
            rt=rt,
            location=location,
            project=project,
            hub=hub,
            choose_model=choose_model,
            heartbeat=heartbeat,
        )
        guard = Guard(
            build_app(state),
            token=token,
            hosts=allowed_hosts(host, port, extra_hosts),
            cors_origins=cors_origins,
            max_body=max_body,
        )
        config = uvicorn.Config(
            guard,
            log_level="warning",
            lifespan="off",
            access_log=False,  # a request line never holds the token, but the log stays quiet anyway
            server_header=False,
            timeout_graceful_shutdown=1,
            h11_max_incomplete_event_size=64 * 1024,
        )
        server = _uvicorn.Server(config)
        if started is not None:
            started(server)
        from ..session import QuestionAsked

        with rt.bus.subscribe("*", hub.on_event), rt.bus.subscribe(QuestionAsked, hub.on_question):
            group.start_soon(hub.run)
            async with anyio.create_task_group() as turns:
                state.task_group = turns
                await _uvicorn.serve(server, sock, stop=stop, on_stop=state.stop_turns)
                state.stop_turns()  # the server was told to exit another way: its turns end with it
            group.cancel_scope.cancel()

"""``tether mcp serve``: the Location's tools for an agent, served to MCP clients over stdio or streamable HTTP.

Over stdio (the default) the client starts ``tether mcp serve`` itself and speaks MCP on its stdin/stdout; stdout
carries nothing else (the SDK points fd 1 at stderr while serving). Over ``--http`` the server listens on
``--host``:``--port`` (loopback and a free port by default), prints its URL and, when it made one, its bearer token
on stderr, and serves until stopped. Either way SIGTERM or SIGINT stops it in order (:mod:`._stop`: running calls
cancelled and recorded as aborted, the runtime closed, the last spans exported; exit 0), as does the client closing
stdin over stdio. What guards the HTTP transport is in :mod:`tether.mcp_server._http`; how a call runs and is
recorded, in :mod:`tether.mcp_server._server`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from ._common import OK, err_console, freeze_startup, run_async, runtime

__all__ = ["serve_command"]


def serve_command(
    *,
    data_dir: Path,
    directory: Path | None,
    agent: str | None,
    http: bool,
    host: str,
    port: int,
) -> None:
    """The body of ``tether mcp serve``."""
    from ._run import project_dir

    path = project_dir(directory)

    async def main() -> None:
        import anyio

        from .._local_http import bind, is_loopback
        from ..mcp_server import ToolServer, serve_http, serve_stdio, server_token
        from ..permissions import PermissionAsked
        from ..session import SessionUpdated, ToolProgress
        from ._stop import stop_on_signals

        console = err_console()
        async with stop_on_signals("tether mcp serve") as stop, await runtime(data_dir, path) as rt:
            stop.export_telemetry(rt.config.data)  # telemetry: config telemetry.otlp_endpoint
            location = await rt.location(path)
            freeze_startup()
            chosen = agent or rt.config.get("default_agent") or "build"
            section: dict[str, Any] = rt.config.get("mcp_serve") or {}
            served = ToolServer(rt, location, agent=chosen, ask=section.get("ask", "deny"))
            with (
                rt.bus.subscribe(PermissionAsked, served.on_asked),
                rt.bus.subscribe(ToolProgress, served.on_progress),
                rt.bus.subscribe(SessionUpdated, served.on_session),
            ):
                if not http:
                    async with served.running():
                        await serve_stdio(served, stop=stop.event)
                    return
                sock = bind(host, port)
                token, made = await anyio.to_thread.run_sync(
                    lambda: server_token(rt.data_dir, section.get("token_env"))
                )
                where = f"{host if ':' not in host or host.startswith('[') else f'[{host}]'}:{sock.getsockname()[1]}"
                if not is_loopback(host.strip("[]")):
                    console.print(
                        Text(
                            f"warning: serving on {host}, reachable from other machines: anyone who has the token "
                            "can run tools on this project with your rights",
                            style="yellow",
                        )
                    )
                console.print(
                    f"tether mcp serve: http://{where}/mcp (agent {chosen}, project {location.root})"
                )
                if made:
                    console.print(f"bearer token: {token}", soft_wrap=True, markup=False, highlight=False)
                    console.print(f"  (also in {rt.data_dir / 'mcp-serve.token'}, mode 0600)", markup=False)
                else:
                    console.print(f"bearer token: from ${section.get('token_env')}", markup=False)
                async with served.running():
                    await serve_http(
                        served.server,
                        sock=sock,
                        host=host,
                        token=token,
                        extra_hosts=section.get("allowed_hosts") or (),
                        stop=stop.event,
                        on_stop=served.stop_calls,
                    )

    try:
        run_async(main)
    except KeyboardInterrupt:  # ^C before the signal handlers were installed: nothing was serving yet
        raise typer.Exit(OK) from None

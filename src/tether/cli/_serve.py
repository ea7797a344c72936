"""``tether serve``: the project's sessions over HTTP, with live events and the web inspector (docs/server.md).

Listens on ``--host``:``--port`` (loopback and 4096 by default, as OpenCode's ``serve``; ``--port 0`` takes a free
one), prints the URL and, once, the bearer token on stderr (also stored 0600 in the data directory), and serves until
SIGTERM or SIGINT stops it in order (:mod:`._stop`: running turns cancelled and recorded, the runtime closed, the
last spans exported; exit 0). A non-loopback ``--host`` is served with a warning. What guards the server is in
:mod:`tether.server._security`.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    host: str,
    port: int,
    model: str | None,
    cors_origins: Sequence[str],
    allow_hosts: Sequence[str],
) -> None:
    """The body of ``tether serve``."""
    from ._run import project_dir

    path = project_dir(directory)

    async def main() -> None:
        import anyio.to_thread

        from ..errors import UsageError
        from ..server import bind, is_loopback, serve, server_token
        from ..server.internal import check_origins
        from ._models import Models
        from ._stop import stop_on_signals

        console = err_console()
        check_origins(cors_origins)  # refused before anything listens
        # one model per name for the server's life (a prompt builds no SDK client), closed before the runtime
        async with (
            stop_on_signals("tether serve") as stop,
            await runtime(data_dir, path) as rt,
            Models(rt.config) as models,
        ):
            stop.export_telemetry(rt.config.data)  # telemetry: config telemetry.otlp_endpoint
            location = await rt.location(path)
            freeze_startup()
            if model is not None:
                models.get(model)  # a wrong --model fails now, not at the first prompt

            def chosen(name: str | None) -> Any:
                if name is not None and name.startswith("scripted:"):
                    # a script is a file path: a client may not make the server read one
                    raise UsageError(
                        "a prompt's model is provider/model; scripted models are for --model only"
                    )
                return models.get(name or model)

            sock = bind(host, port)
            token, made = await anyio.to_thread.run_sync(lambda: server_token(rt.data_dir))
            bare = host.strip("[]")
            shown_host = f"[{bare}]" if ":" in bare else bare
            url = f"http://{shown_host}:{sock.getsockname()[1]}"
            if not is_loopback(bare):
                console.print(
                    Text(
                        f"warning: serving on {host}, reachable from other machines over plain HTTP: anyone who "
                        "has the token can run tools on this project with your rights",
                        style="yellow",
                    )
                )
            console.print(f"tether serve: {url} (project {location.root})", markup=False, highlight=False)
            if made:
                console.print(f"token: {token}", soft_wrap=True, markup=False, highlight=False)
                console.print(
                    f"inspector: {url}/#token={token}", soft_wrap=True, markup=False, highlight=False
                )
                console.print(f"  (token stored in {rt.data_dir / 'server.token'}, mode 0600)", markup=False)
            else:
                console.print("token: from $TETHER_SERVER_TOKEN", markup=False)
            await serve(
                rt,
                location,
                sock=sock,
                host=bare,
                token=token,
                choose_model=chosen,
                cors_origins=cors_origins,
                extra_hosts=allow_hosts,
                stop=stop.event,
            )

    try:
        run_async(main)
    except KeyboardInterrupt:  # ^C before the signal handlers were installed: nothing was serving yet
        raise typer.Exit(OK) from None

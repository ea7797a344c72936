"""``tether serve``: this project's sessions over HTTP (API, live events, the web inspector)."""

from __future__ import annotations

from typing import Annotated

import typer

from . import DirOption, data_dir, tree

__all__ = ["app"]

app = tree()


@app.command()
def serve(
    ctx: typer.Context,
    directory: DirOption = None,
    host: Annotated[
        str,
        typer.Option("--host", help="The address to listen on (default loopback; another one is warned)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port (0: a free one, printed).")] = 4096,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="The default model of prompts (provider/model).")
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--cors-origin", help="An exact origin whose pages may call the API (repeatable; no *)."
        ),
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Another Host header value to serve, name:port (repeatable)."),
    ] = None,
) -> None:
    """Serve this project's sessions over HTTP: API, live events, and a web inspector at /.

    Every API route needs the bearer token printed at start (also stored 0600 in the data directory, or set
    $TETHER_SERVER_TOKEN). See docs/server.md.

    \b
    Examples:
      tether serve --dir ~/src/project --model openai/gpt-5
      tether serve --port 0
    """
    from .._serve import serve_command

    serve_command(
        data_dir=data_dir(ctx),
        directory=directory,
        host=host,
        port=port,
        model=model,
        cors_origins=cors_origin or (),
        allow_hosts=allow_host or (),
    )

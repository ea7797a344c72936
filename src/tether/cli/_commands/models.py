"""``tether models``: providers and their models."""

from __future__ import annotations

from typing import Annotated

import typer

from . import DirOption, data_dir, tree

__all__ = ["app"]

app = tree()


@app.command()
def models(
    ctx: typer.Context,
    directory: DirOption = None,
    remote: Annotated[
        bool,
        typer.Option(
            "--remote", help="Also ask hosted OpenAI-compatible providers (with a key set) for /models."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The list as JSON, for machines.")] = False,
) -> None:
    """List providers (built-in and configured) and their models.

    Shows each provider's API, URL and whether its key is set, the models tether knows for it, and what a local
    OpenAI-compatible server (Ollama, LM Studio, vLLM, llama.cpp, a configured 127.0.0.1 one) lists at /models.

    \b
    Examples:
      tether models
      tether models --remote --json | jq -r '.[] | select(.remote.models) | .id'
    """
    from .._models import models_command

    models_command(data_dir=data_dir(ctx), directory=directory, remote=remote, as_json=as_json)

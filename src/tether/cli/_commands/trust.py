"""``tether trust``: trust a project (or list and remove trusted ones)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import data_dir, tree

__all__ = ["app"]

app = tree()


@app.command()
def trust(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Argument(metavar="[DIR]", help="The project to trust (default: the current directory)."),
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted projects.")] = False,
    remove: Annotated[
        Path | None, typer.Option("--remove", metavar="DIR", help="Stop trusting the project at DIR.")
    ] = None,
) -> None:
    """Trust a project: apply its .tether/tether.json in full.

    An untrusted project's config may only tighten (deny/ask rules, disabled tools, lower limits); its provider,
    shell, allow rules and instruction files outside it are ignored with a warning. Trust is kept per project root
    (the exact directory, symlinks resolved) in the data directory.

    \b
    Examples:
      tether trust                      # the current directory
      tether trust ~/src/api
      tether trust --list
      tether trust --remove ~/src/api
    """
    from .._trust import trust_command

    trust_command(data_dir=data_dir(ctx), directory=directory, list_=list_, remove=remove)

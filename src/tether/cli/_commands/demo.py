"""``tether demo``: the offline demo."""

from __future__ import annotations

from typing import Annotated

import typer

from . import data_dir, tree

__all__ = ["app"]

app = tree()


@app.command()
def demo(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve the demo's edit without prompting.")
    ] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary project directory.")] = False,
) -> None:
    """Offline demo: a recorded model fixes a bug.

    Copies a sample project to a temporary directory and runs a real session on it (real tools, permissions,
    store) with a recorded model, then prints the timeline.

    \b
    Examples:
      tether demo
      tether demo --yes --keep
    """
    from .._demo import demo_command

    demo_command(data_dir=data_dir(ctx), yes=yes, keep=keep)

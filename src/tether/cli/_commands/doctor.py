"""``tether doctor``: what this machine offers (the sandbox, rg, the providers' keys)."""

from __future__ import annotations

from typing import Annotated

import typer

from . import DirOption, data_dir, tree

__all__ = ["app"]

app = tree()


@app.command()
def doctor(
    ctx: typer.Context,
    directory: DirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON, for machines.")] = False,
) -> None:
    """Check this machine: the sandbox that holds bash's commands, rg, and the providers' keys.

    Shows the sandbox mechanism (bubblewrap, else Landlock, else none, and why), the writable roots and read-only
    paths of the project, the network mode, whether rg is installed, and each provider's key state. Exits 1 when
    sandbox.required is set and no sandbox can hold commands here (docs/sandbox.md).

    \b
    Examples:
      tether doctor
      tether doctor --json | jq .sandbox
    """
    from .._doctor import doctor_command

    doctor_command(data_dir=data_dir(ctx), directory=directory, as_json=as_json)

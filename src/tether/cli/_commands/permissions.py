"""``tether permissions``: saved approvals (list, add, remove) and which rule decides (``--explain``)."""

from __future__ import annotations

from typing import Annotated

import typer

from . import AgentOption, DirOption, data_dir, tree

__all__ = ["permissions_app"]

permissions_app = tree(invoke_without_command=True)


@permissions_app.callback()
def permissions(
    ctx: typer.Context,
    explain: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--explain", metavar="ACTION RESOURCE", help="Show which rule decides ACTION on RESOURCE."
        ),
    ] = None,
    agent: AgentOption = None,
    directory: DirOption = None,
) -> None:
    """Saved approvals, and which rule decides.

    Lists a project's saved approvals ("always" replies); --explain shows the rule that decides a request.

    \b
    Examples:
      tether permissions
      tether permissions --explain bash "git push origin main"
      tether permissions add bash "git status*"
      tether permissions remove sav_0123...
    """
    if ctx.invoked_subcommand is not None:
        return
    from .._permissions import explain_command, list_command

    if explain is not None:
        explain_command(
            data_dir=data_dir(ctx), action=explain[0], resource=explain[1], agent=agent, directory=directory
        )
    else:
        list_command(data_dir=data_dir(ctx), directory=directory)


@permissions_app.command("list")
def permissions_list(ctx: typer.Context, directory: DirOption = None) -> None:
    """List the saved approvals of a project."""
    from .._permissions import list_command

    list_command(data_dir=data_dir(ctx), directory=directory)


@permissions_app.command("add")
def permissions_add(
    ctx: typer.Context,
    action: Annotated[str, typer.Argument(help="The permission action (edit, bash, read, ...).")],
    pattern: Annotated[str, typer.Argument(help="The resource pattern to allow (wildcards: * and ?).")],
    directory: DirOption = None,
) -> None:
    """Save an approval: ACTION on resources matching PATTERN is allowed from now on."""
    from .._permissions import add_command

    add_command(data_dir=data_dir(ctx), action=action, pattern=pattern, directory=directory)


@permissions_app.command("remove")
def permissions_remove(
    ctx: typer.Context,
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="A saved approval id (see the list).")],
    directory: DirOption = None,
) -> None:
    """Remove one saved approval."""
    from .._permissions import remove_command

    remove_command(data_dir=data_dir(ctx), approval_id=approval_id, directory=directory)

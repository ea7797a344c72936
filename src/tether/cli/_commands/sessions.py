"""``tether sessions`` (list, prune, the open stores) and ``tether session`` (show, export, delete one)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import DirOption, data_dir, tree

__all__ = ["session_app", "sessions_app"]

sessions_app = tree(invoke_without_command=True)
session_app = tree(help="Show, export or delete one session.", no_args_is_help=True)


@sessions_app.callback()
def sessions(
    ctx: typer.Context,
    directory: DirOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Sessions of every directory.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many to list.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="The list as JSON, for machines.")] = False,
    owners: Annotated[
        bool,
        typer.Option(
            "--owners",
            help="List the open stores sharing the session store instead (workers, runs, servers): their heartbeat, "
            "PostgreSQL lease and lock, whether recovery counts them live, their claims and unfinished calls.",
        ),
    ] = False,
) -> None:
    """List sessions, newest first; prune old ones.

    Shows the short id, title, directory, last update and status (a `tether tool call` session is marked
    tool-call). Anywhere a session id is taken, its short id (6 digits) or a unique prefix of the id works too.

    \b
    Examples:
      tether sessions
      tether sessions --all -n 50
      tether sessions --json | jq -r '.[0].id'
      tether sessions prune --older-than 30d --dry-run
      tether sessions --owners
    """
    if ctx.invoked_subcommand is not None:
        return
    if owners:
        from .._owners import owners_command

        owners_command(data_dir=data_dir(ctx), directory=directory, as_json=as_json)
        return
    from .._sessions import list_command

    list_command(data_dir=data_dir(ctx), directory=directory, all_=all_, limit=limit, as_json=as_json)


@sessions_app.command("prune")
def sessions_prune(
    ctx: typer.Context,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete sessions not updated for AGE (units s, m, h, d, w: 30d).",
        ),
    ],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted.")] = False,
) -> None:
    """Delete the sessions (of every project) not updated for AGE, with their child sessions and outputs.

    A session a running tether holds is kept and named.

    \b
    Examples:
      tether sessions prune --older-than 30d --dry-run
      tether sessions prune --older-than 2w
    """
    from .._sessions import prune_command

    prune_command(data_dir=data_dir(ctx), older_than=older_than, dry_run=dry_run)


@session_app.command("show")
def session_show(
    ctx: typer.Context,
    session_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]",
            help="A short id (9f3c1a, as tether sessions lists it), a session id or a unique prefix of one "
            "(default: the latest session of this project).",
        ),
    ] = None,
    last: Annotated[
        bool, typer.Option("--last", help="The latest session of any project, instead of this one's.")
    ] = False,
    directory: DirOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="The timeline as JSON, for machines.")] = False,
) -> None:
    """Show the timeline of one session (default: the latest of this project).

    User input, steps, text, tool calls with their permission decisions and deciding rules, outputs or errors,
    timings and retained output paths.

    \b
    Examples:
      tether session show                      # the latest conversation here
      tether session show --last               # the latest anywhere
      tether session show 9f3c1a               # a short id from tether sessions
      tether session show ses_0123... --json | jq '.timeline[] | select(.type == "tool")'
    """
    from .._sessions import show_command

    show_command(
        data_dir=data_dir(ctx), session_id=session_id, as_json=as_json, last=last, directory=directory
    )


@session_app.command("export")
def session_export(
    ctx: typer.Context,
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="A short id, a session id (ses_...) or a unique prefix.")
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to a file instead of stdout.")
    ] = None,
) -> None:
    """Export a session as one self-contained JSON document.

    \b
    Examples:
      tether session export ses_0123... -o session.json
    """
    from .._sessions import export_command

    export_command(data_dir=data_dir(ctx), session_id=session_id, output=output)


@session_app.command("delete")
def session_delete(
    ctx: typer.Context,
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="A short id, a session id (ses_...) or a unique prefix.")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a session: its messages, tool calls, child sessions and retained tool outputs.

    Asks first in a terminal (elsewhere pass --yes). A session a running tether holds is refused.

    \b
    Examples:
      tether session delete ses_0123
      tether session delete ses_0123... --yes
    """
    from .._sessions import delete_command

    delete_command(data_dir=data_dir(ctx), session_id=session_id, yes=yes)

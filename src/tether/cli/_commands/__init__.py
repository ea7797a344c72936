"""The command tree, one module per command group: names, options, help texts with examples. Nothing else.

``_app`` holds the root (its options, the interactive session) and loads a group's module only when the command line
names it (``tether run`` builds the ``run`` command alone; ``--help`` and a mistyped name build them all). Each command
body imports its implementation (``cli/_run.py``, ``cli/_sessions.py``, ...) on call, so building the tree loads only
typer. This module holds what the groups share: the options several commands take, the data directory the root
resolved, and :func:`tree`, the settings every group's ``Typer`` is made with.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = [
    "AgentOption",
    "ApiKeyOption",
    "DenyOption",
    "DirOption",
    "NamespaceOption",
    "TlsOption",
    "YesOption",
    "data_dir",
    "tree",
]


def tree(**settings: Any) -> typer.Typer:
    """A group's ``Typer``, built like the root: plain help text (no rich markup), no completion options."""
    return typer.Typer(add_completion=False, rich_markup_mode=None, **settings)


def data_dir(ctx: typer.Context) -> Path:
    """The data directory: the root's ``--data-dir`` (or ``$TETHER_DATA_DIR``), else the platform's."""
    root = ctx.find_root()
    if isinstance(root.obj, Path):
        return root.obj
    from ...paths import default_data_dir

    return default_data_dir()


DirOption = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        "-d",
        help="The directory to work in (default: the current one); its project is found from it.",
    ),
]
AgentOption = Annotated[
    str | None, typer.Option("--agent", "-a", help="Agent to run as (default: config, else build).")
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Allow every permission ask without prompting.")]
DenyOption = Annotated[
    bool, typer.Option("--deny-asks", help="Reject every permission ask without prompting.")
]
TlsOption = Annotated[
    bool,
    typer.Option("--tls", help="Connect to the Temporal server with TLS (with --temporal; Temporal Cloud)."),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="TETHER_TEMPORAL_API_KEY",
        show_envvar=False,
        help="A Temporal API key (with --temporal; also $TETHER_TEMPORAL_API_KEY).",
    ),
]
NamespaceOption = Annotated[
    str, typer.Option("--namespace", help="The Temporal namespace (with --temporal).")
]

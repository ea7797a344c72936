"""The root of the command tree: its options, the interactive session (``tether`` alone), and where each command is.

The commands live in ``_commands/``, one module per group; the root loads a group only when the command line names
it, so ``tether run`` builds one command and ``tether --version`` none (start-up: issue 38). ``--help`` and a
mistyped name (for the "Did you mean" suggestion) build them all, in the order of :data:`_GROUPS`, which is the order
``tether --help`` lists them in.

No ``from __future__ import annotations`` in a command's module: typer reads each parameter's annotation at every run
(``inspect.signature(eval_str=True)``, then ``get_type_hints``), and a string one is compiled and evaluated twice
there (~2 % of a scripted ``tether run``'s instructions; ``tests/cli/test_lazy_imports.py``).
"""

import importlib
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup
from typer.main import get_command, get_group

__all__ = ["app"]

_GROUPS: dict[str, tuple[str, str, bool]] = {
    "run": ("._commands.run", "app", False),
    "worker": ("._commands.worker", "app", False),
    "trust": ("._commands.trust", "app", False),
    "demo": ("._commands.demo", "app", False),
    "tools": ("._commands.tools", "tools_app", False),
    "models": ("._commands.models", "app", False),
    "doctor": ("._commands.doctor", "app", False),
    "serve": ("._commands.serve", "app", False),
    "sessions": ("._commands.sessions", "sessions_app", True),
    "mcp": ("._commands.mcp", "mcp_app", True),
    "session": ("._commands.sessions", "session_app", True),
    "tool": ("._commands.tools", "tool_app", True),
    "permissions": ("._commands.permissions", "permissions_app", True),
    "config": ("._config", "config_app", True),
}
"""Each command's name -> (its module, the ``Typer`` in it, whether that is a group of subcommands), in the order of
``tether --help``. A module of one command holds a ``Typer`` of that one command, which typer would build as the
command itself; a group (``tool``, with its one ``call``) is built as a group even when it has one subcommand."""


class _Root(TyperGroup):
    """The root group: it builds a command from its module the first time the command line (or help) names it."""

    # ``ctx`` is typer's click Context: vendored in typer since 0.2x (``typer._click``), click's own before.
    def list_commands(self, ctx: Any) -> list[str]:
        return list(_GROUPS)

    def get_command(self, ctx: Any, cmd_name: str):
        if cmd_name in _GROUPS and cmd_name not in self.commands:
            module, attribute, is_group = _GROUPS[cmd_name]
            tree: typer.Typer = getattr(importlib.import_module(module, __package__), attribute)
            self.add_command(get_group(tree) if is_group else get_command(tree), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]):
        if args and args[0] not in _GROUPS:  # a mistyped name: the suggestion reads every command's name
            for name in _GROUPS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="tether",
    cls=_Root,
    help="tether: run coding agents, approve their tools, and inspect what happened.\n\n"
    "Start with `tether demo` (offline, no API key), then "
    '`tether run --model openai/gpt-5 "fix the failing test"` (with OPENAI_API_KEY set). '
    "`tether` alone, in a terminal, opens an interactive session (see docs/repl.md).",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        # the package's own constant (pinned equal to pyproject's by tests/test_version.py), not the installed
        # metadata: importlib.metadata brings email, zipfile and csv, ~10 ms of a 60 ms command (issue 38)
        from .._version import __version__

        typer.echo(f"tether {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Where sessions, saved approvals and tool outputs live (default: $TETHER_DATA_DIR or the "
            "platform data directory).",
            envvar="TETHER_DATA_DIR",
            show_envvar=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", help="Print tether's version and exit.", is_eager=True, callback=_version),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Interactive session: provider/model (default: config)."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", "-a", help="Interactive session: the agent.")
    ] = None,
    directory: Annotated[
        Path | None, typer.Option("--dir", "-d", help="Interactive session: the project directory.")
    ] = None,
    continue_: Annotated[
        bool, typer.Option("--continue", "-c", help="Interactive session: continue the latest session.")
    ] = False,
    session: Annotated[
        str | None, typer.Option("--session", "-s", help="Interactive session: continue session ID.")
    ] = None,
    trust: Annotated[bool, typer.Option("--trust", help="Interactive session: trust this project.")] = False,
    log_format: Annotated[
        str | None,
        typer.Option(
            "--log-format",
            metavar="text|json",
            envvar="TETHER_LOG_FORMAT",
            help="Log records on stderr as text or JSON lines (also $TETHER_LOG_FORMAT). docs/telemetry.md",
        ),
    ] = None,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level", envvar="TETHER_LOG_LEVEL", help="The lowest level logged (default WARNING)."
        ),
    ] = None,
) -> None:
    if log_format or log_level:
        from ..errors import UsageError
        from ..telemetry import configure_logging

        try:
            configure_logging(log_format or "text", log_level or "WARNING")
        except UsageError as exc:
            raise typer.BadParameter(str(exc)) from exc
    ctx.obj = data_dir
    repl_options = model or agent or directory or continue_ or session or trust
    if ctx.invoked_subcommand is not None:
        if repl_options:
            raise typer.BadParameter(
                "--model, --agent, --dir, --continue, --session and --trust before a command are the interactive "
                f"session's; put them after it: tether {ctx.invoked_subcommand} --model ..."
            )
        return
    from ..paths import default_data_dir
    from ._repl import repl_command

    repl_command(
        data_dir=data_dir or default_data_dir(),
        model=model,
        agent=agent,
        directory=directory,
        continue_=continue_,
        session_id=session,
        trust=trust,
        help_text=ctx.get_help,
    )

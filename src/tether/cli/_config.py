"""``tether config``: the JSON Schema of ``tether.json``, and the configuration that applies in a project.

The command tree of this family lives here (``_app`` loads it when the command line names ``config``); as everywhere
in the CLI, each body imports its implementation on call, so ``tether --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, cast

import typer

__all__ = ["config_app"]

config_app = typer.Typer(
    help="The configuration: its JSON Schema, and what applies in a project.",
    no_args_is_help=True,
    rich_markup_mode=None,
    add_completion=False,
)


@config_app.command("schema")
def schema(
    reference: Annotated[
        bool, typer.Option("--reference", help="Print the key table of docs/config.md (Markdown) instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of tether.json and tether.jsonc, for editors.

    Point a config file at it with "$schema" to get completion and typo checks as you type.

    \b
    Examples:
      tether config schema > .tether/tether.schema.json
      tether config schema --reference
    """
    from ..config import config_schema
    from ..config.internal import config_reference

    text = config_reference() if reference else json.dumps(config_schema(), indent=2, ensure_ascii=False)
    sys.stdout.write(text + "\n")


@config_app.command("show")
def show(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Option("--dir", "-d", help="A directory of the project (default: the current directory)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The same as JSON, for machines.")] = False,
) -> None:
    """Show the configuration that applies in a project, and where each key comes from.

    Lists the project root found from the directory (the nearest .tether/, tether.json or tether.jsonc above it,
    else the git root), whether it is trusted, your own config file (its path even before it exists: the
    directory is $TETHER_CONFIG_DIR or the platform's), the files read, and every key with its value and the file that set
    it ("default" for a default). Keys an untrusted project may not set are warned about on stderr, as in `run`.
    Secrets (the store's password, API keys, HTTP headers, MCP servers' environment) are shown as ***; an
    {env:NAME} reference is shown as written.

    \b
    Examples:
      tether config show
      tether config show --dir ~/src/api --json | jq .config.model
    """
    from ..errors import ConfigError
    from ._commands import data_dir
    from ._common import fail, out_console

    path = (directory or Path.cwd()).expanduser().resolve()
    if not path.is_dir():
        fail(f"--dir {path} is not a directory")
    try:
        report = _report(data_dir(ctx), path)
    except ConfigError as exc:
        fail(f"configuration: {exc.message}")
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        return
    from rich.text import Text

    from ._format import shown

    console = out_console()
    trusted = "trusted" if report["trusted"] else "not trusted: its file may only tighten; see tether trust"
    console.print(shown(f"project {report['project']} ({trusted})"), soft_wrap=True)
    user = report["user_file"]
    if user["path"] not in report["files"]:
        # where your own settings go, even before the file exists ($TETHER_CONFIG_DIR moves it)
        state = "not there yet: create it to set your own keys" if not user["exists"] else "not read"
        console.print(shown(f"user    {user['path']} ({state})"), soft_wrap=True)
    for file in report["files"]:
        console.print(shown(f"read    {file}"), soft_wrap=True)
    for row in report["keys"]:
        line = shown(f"{row['key']} = {json.dumps(row['value'], ensure_ascii=False)}")
        console.print(line + Text(f"  # {row['from']}", style="dim"), soft_wrap=True)
    if report["environment_permission"]:
        console.print(Text("permission rules from $TETHER_PERMISSION come last", style="dim"))
    if report["redacted"]:
        console.print(Text(f"secrets are shown as {_HIDDEN} ({len(report['redacted'])} values)", style="dim"))


def _report(data_dir: Path, directory: Path) -> dict[str, Any]:
    from pydantic import ValidationError

    from ..config import PERMISSION_ENV, TetherConfig, user_config_path
    from ..config.internal import format_path, leaves
    from ._trust import project_config

    config = project_config(data_dir, directory)
    try:  # each file is valid on its own, so their merge is too; if not, show what was merged, without defaults
        effective = TetherConfig.model_validate(config.data).model_dump(by_alias=True, exclude_none=True)
    except ValidationError:
        effective = dict(config.data)
    redacted: list[str] = []
    effective = _without_secrets(effective, (), redacted)
    rows: list[dict[str, Any]] = []
    for path, value in leaves(effective):
        origin = config.origins.get(path)
        if origin is None and value in ({}, []):
            continue  # an empty default container says nothing
        rows.append({"key": format_path(path), "value": value, "from": str(origin) if origin else "default"})
    user = user_config_path()
    return {
        "project": str(config.root),
        "trusted": config.project_trusted,
        "user_file": {"path": str(user), "exists": os.path.lexists(user)},
        "files": [str(f) for f in config.files],
        "keys": rows,
        "config": effective,
        "redacted": redacted,
        "environment_permission": bool(os.environ.get(PERMISSION_ENV)),
    }


_HIDDEN = "***"
_ANY = "*"
_SECRETS: tuple[tuple[str, ...], ...] = (
    ("store",),
    ("telemetry", "headers", _ANY),
    ("provider", _ANY, "api_key"),
    ("provider", _ANY, "headers", _ANY),
    ("provider", _ANY, "options", "apiKey"),
    ("provider", _ANY, "options", "headers", _ANY),
    *(
        (servers, _ANY, key, _ANY)
        for servers in ("mcp", "mcpServers")
        for key in ("headers", "environment", "env")
    ),
)
"""The key paths whose values are secrets (``*``: any key); ``config show`` prints them as ``***``."""
# A value made only of {env:NAME} references, maybe after an auth scheme ("Bearer {env:TOKEN}"), names where the
# secret is; it is not one, and seeing it helps.
_REFERENCE_ONLY = re.compile(
    r"(?:(?:Bearer|Basic|Token|Bot)[ \t]+)?(?:\{env:[A-Za-z_][A-Za-z0-9_]*\}[ \t]*)+"
)


def _leads_to_secret(path: tuple[str, ...]) -> bool | None:
    """Whether ``path`` is a secret's key path (True), leads to one (False), or neither (None)."""
    found: bool | None = None
    for pattern in _SECRETS:
        if len(pattern) >= len(path) and all(
            k in (_ANY, part) for k, part in zip(pattern, path, strict=False)
        ):
            if len(pattern) == len(path):
                return True
            found = False
    return found


def _without_secrets(value: Any, path: tuple[str, ...], redacted: list[str]) -> Any:
    """``value`` (the config, or a part of it at ``path``) with every secret replaced; their key paths go in
    ``redacted``. Works on an invalid config too: anything but an object on the way to a secret is hidden whole."""
    from ..config.internal import format_path
    from ..store.internal import describe

    secret = _leads_to_secret(path)
    if secret is None or value in ("", None, {}, []):
        return value
    if secret is False and isinstance(value, dict):
        items = cast(dict[str, Any], value).items()
        return {key: _without_secrets(child, (*path, key), redacted) for key, child in items}
    if isinstance(value, str) and _REFERENCE_ONLY.fullmatch(value):
        return value
    shown = describe(value) if path == ("store",) and isinstance(value, str) else _HIDDEN
    if shown != value:
        redacted.append(format_path(path))
    return shown

"""``tether mcp list`` (the configured MCP servers: state, transport, tool count, error) and ``tether mcp tools
SERVER`` (one server's tools: the name the model sees, the server's own name, the description).

Both open the project's Location as every command does, which connects the servers (in parallel, each within its
deadline), report, and close them again. The config goes through the trust filter: an untrusted project's servers
are never started, and the notice on stderr says so. Everything shown came from a server (names, descriptions,
errors), so it is printed through ``shown`` (one line, control characters escaped).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from ._common import err_console, fail, out_console, run_async, runtime
from ._format import shown

__all__ = ["list_command", "tools_command"]


async def _statuses(data_dir: Path, directory: Path | None) -> tuple[list[Any], dict[str, list[Any]]]:
    """The servers' statuses and each connected server's tools ``(name, raw name, description)``."""
    async with await runtime(data_dir, directory) as rt:
        location = await rt.location((directory or Path.cwd()).resolve())
        servers = location.mcp
        if servers is None:
            return [], {}
        effective = location.tools.effective()
        tools: dict[str, list[Any]] = {}
        for status in servers.statuses():
            rows = tools.setdefault(status.name, [])
            for name, raw in status.tools:
                entry = effective.get(name)
                about = entry.tool.description.strip().splitlines()[0] if entry is not None else ""
                rows.append((name, raw, about))
        return list(servers.statuses()), tools


def _check(output_format: str) -> None:
    if output_format not in ("text", "json"):
        fail(f"--format must be text or json, not {output_format!r}")


def list_command(*, data_dir: Path, directory: Path | None, output_format: str = "text") -> None:
    """The body of ``tether mcp list``: exit code 1 when a server failed."""
    _check(output_format)
    statuses, _ = run_async(lambda: _statuses(data_dir, directory))
    if output_format == "json":
        rows = [
            {
                "name": s.name,
                "state": s.state,
                "transport": s.transport,
                "server": s.server,
                "tools": len(s.tools),
                "error": s.error,
                "skipped": list(s.skipped),
            }
            for s in statuses
        ]
        typer.echo(json.dumps({"servers": rows}))
    elif not statuses:
        out_console().print(
            Text(
                'No MCP servers are configured (the "mcp" key of tether.json; see docs/mcp.md).', style="dim"
            )
        )
    else:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("server", "state", "transport", "tools", "error / server"):
            table.add_column(column, no_wrap=column != "error / server")
        for s in statuses:
            style = {"connected": "green", "failed": "red"}.get(s.state, "yellow")
            detail = shown(s.error, "red") if s.error else shown(s.server or "")
            table.add_row(shown(s.name), Text(s.state, style=style), s.transport, str(len(s.tools)), detail)
        out_console().print(table)
        for s in statuses:
            for skipped in s.skipped:
                err_console().print(shown(f"{s.name}: tool left out: {skipped}", "yellow"))
    if any(s.state == "failed" for s in statuses):
        raise typer.Exit(1)


def tools_command(
    *, data_dir: Path, directory: Path | None, server: str, output_format: str = "text"
) -> None:
    """The body of ``tether mcp tools SERVER``: exit code 1 when the server is unknown or not connected."""
    _check(output_format)
    statuses, tools = run_async(lambda: _statuses(data_dir, directory))
    found = next((s for s in statuses if s.name == server), None)
    if found is None:
        names = ", ".join(s.name for s in statuses) or "(none)"
        fail(f'no MCP server "{server}" is configured; the servers: {names}')
    rows = tools.get(server, [])
    if output_format == "json":
        typer.echo(
            json.dumps(
                {
                    "server": server,
                    "state": found.state,
                    "error": found.error,
                    "tools": [{"name": n, "mcp_name": raw, "description": about} for n, raw, about in rows],
                }
            )
        )
    else:
        table = Table(box=None, pad_edge=False, header_style="bold", title=f"tools of MCP server {server}")
        table.add_column("tool", no_wrap=True)
        table.add_column("name on the server", no_wrap=True)
        table.add_column("description")
        for name, raw, about in rows:
            table.add_row(shown(name), shown(raw), shown(about[:100]))
        out_console().print(table)
        if found.state != "connected":
            err_console().print(
                shown(f"{server} is {found.state}: {found.error or 'no error recorded'}", "red")
            )
    if found.state != "connected":
        raise typer.Exit(1)

"""``tether mcp``: the configured MCP servers and their tools (list, tools), and tether's tools served (serve)."""

from __future__ import annotations

from typing import Annotated

import typer

from . import AgentOption, DirOption, data_dir, tree

__all__ = ["mcp_app"]

mcp_app = tree(
    help="MCP: the configured servers and their tools (mcp list, mcp tools), and tether's tools served to MCP "
    "clients (mcp serve).",
    no_args_is_help=True,
)


@mcp_app.command("list")
def mcp_list(
    ctx: typer.Context,
    directory: DirOption = None,
    output_format: Annotated[
        str, typer.Option("--format", metavar="text|json", help="text: a table; json: one JSON object.")
    ] = "text",
) -> None:
    """Connect the configured MCP servers and show each one's state, transport, tool count and error.

    Exit code 1 when a server failed.

    \b
    Examples:
      tether mcp list
      tether mcp list --format json | jq '.servers[] | select(.state != "connected")'
    """
    from .._mcp import list_command

    list_command(data_dir=data_dir(ctx), directory=directory, output_format=output_format)


@mcp_app.command("tools")
def mcp_tools(
    ctx: typer.Context,
    server: Annotated[str, typer.Argument(help="The server's name in the config.")],
    directory: DirOption = None,
    output_format: Annotated[
        str, typer.Option("--format", metavar="text|json", help="text: a table; json: one JSON object.")
    ] = "text",
) -> None:
    """Show one MCP server's tools: the name the model sees, the server's own name, the description.

    \b
    Examples:
      tether mcp tools github
    """
    from .._mcp import tools_command

    tools_command(data_dir=data_dir(ctx), directory=directory, server=server, output_format=output_format)


@mcp_app.command("serve")
def mcp_serve(
    ctx: typer.Context,
    directory: DirOption = None,
    agent: AgentOption = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP (bearer token required) instead of stdio.")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="--http: the address to listen on (non-loopback: warned).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="--http: the port (0: a free one, printed).")] = 0,
) -> None:
    """Serve this project's tools to MCP clients, each call permissioned, bounded and recorded.

    The agent's catalog over stdio (the client starts this command) or streamable HTTP at /mcp. Each call runs
    through tether's full path and is recorded in the session "mcp: CLIENT" (see `tether session show`); a
    permission ask is put to the client's user through MCP elicitation, else answered by mcp_serve.ask (deny).

    \b
    Examples:
      tether mcp serve --dir ~/src/project
      tether mcp serve --http --port 8765
    """
    from .._mcp_serve import serve_command

    serve_command(data_dir=data_dir(ctx), directory=directory, agent=agent, http=http, host=host, port=port)

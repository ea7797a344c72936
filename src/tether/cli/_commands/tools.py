"""``tether tools`` (an agent's catalog and why a tool is hidden) and ``tether tool call`` (one tool, full path)."""

from __future__ import annotations

from typing import Annotated

import typer

from . import AgentOption, DenyOption, DirOption, YesOption, data_dir, tree

__all__ = ["tool_app", "tools_app"]

tools_app = tree()
tool_app = tree(help="Call one tool through the full path.", no_args_is_help=True)


@tools_app.command()
def tools(
    ctx: typer.Context,
    agent: AgentOption = None,
    directory: DirOption = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Apply this model's catalog rules (default: the config's model)."),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--format", metavar="text|json", help="text: a table; json: one JSON object.")
    ] = "text",
) -> None:
    """Show an agent's tools for a model, where each comes from, and why any is hidden.

    \b
    Examples:
      tether tools
      tether tools --agent plan --model openai/gpt-5
      tether tools --format json | jq -r '.tools[] | select(.origin != "builtin") | .name'
    """
    from .._tools import tools_command

    tools_command(
        data_dir=data_dir(ctx), agent=agent, directory=directory, model=model, output_format=output_format
    )


@tool_app.command("call")
def tool_call(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The tool name, as the catalog lists it.")],
    input_json: Annotated[
        str, typer.Argument(metavar="JSON", help="The tool input as a JSON object.")
    ] = "{}",
    agent: AgentOption = None,
    directory: DirOption = None,
    yes: YesOption = False,
    deny_asks: DenyOption = False,
) -> None:
    """Call one tool through the full settle path.

    Decode, permissions at the point of action, execute, bound; prints the content the model would read.

    \b
    Examples:
      tether tool call read '{"filePath": "README.md"}'
      tether tool call bash '{"command": "ls"}' --yes
    """
    from .._tools import call_command

    call_command(
        data_dir=data_dir(ctx),
        name=name,
        input_json=input_json,
        agent=agent,
        directory=directory,
        yes=yes,
        deny_asks=deny_asks,
    )

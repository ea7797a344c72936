"""``tether permissions``: the project's saved approvals (list, add, remove) and ``--explain`` for one decision.

Saved approvals are what an "always" reply persists; they never override a configured deny. ``--explain`` evaluates
``ACTION RESOURCE`` exactly as the permission service would for the agent (its rules, the config's, then the saved
approvals) and prints the deciding rule and where it came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from ._common import out_console, run_async, runtime

__all__ = ["add_command", "explain_command", "list_command", "remove_command"]


async def _project(rt: Any, directory: Path | None) -> str:
    location = await rt.location((directory or Path.cwd()).resolve())
    return str(location.root)


def list_command(*, data_dir: Path, directory: Path | None) -> None:
    """List the saved approvals of the project."""

    async def main() -> tuple[str, list[Any]]:

        async with await runtime(data_dir, directory) as rt:
            project = await _project(rt, directory)
            return project, await rt.saved.list(project)

    project, approvals = run_async(main)
    console = out_console()
    if not approvals:
        console.print(f'No saved approvals for {project}. An "always" reply to a permission prompt adds one.')
        return
    table = Table(box=None, pad_edge=False, header_style="bold", title=f"saved approvals for {project}")
    for column in ("id", "action", "resource"):
        table.add_column(column, no_wrap=column != "resource")
    for approval in approvals:
        table.add_row(approval.id, approval.action, approval.resource)
    console.print(table)


def add_command(*, data_dir: Path, action: str, pattern: str, directory: Path | None) -> None:
    """Save ``action`` on ``pattern`` for the project."""

    async def main() -> tuple[str, list[Any]]:

        async with await runtime(data_dir, directory) as rt:
            project = await _project(rt, directory)
            return project, await rt.saved.add(project, action, [pattern])

    project, added = run_async(main)
    console = out_console()
    if added:
        console.print(f'saved {added[0].id}: {action} "{pattern}" -> allow for {project}')
    else:
        console.print(f'already saved: {action} "{pattern}" for {project}')


def remove_command(*, data_dir: Path, approval_id: str, directory: Path | None) -> None:
    """Remove one saved approval by id."""

    async def main() -> None:

        async with await runtime(data_dir, directory) as rt:
            await rt.saved.remove(approval_id)

    run_async(main)
    out_console().print(f"removed {approval_id}")


def explain_command(
    *, data_dir: Path, action: str, resource: str, agent: str | None, directory: Path | None
) -> None:
    """Print which rule decides ``action`` on ``resource`` for the agent in the project."""

    async def main() -> Any:
        from ..errors import PathError
        from ..location import protected_anchor
        from ..permissions import evaluate_request
        from ._tools import _agent  # pyright: ignore[reportPrivateUsage]

        async with await runtime(data_dir, directory) as rt:
            project = await _project(rt, directory)
            chosen = _agent(rt, agent)
            saved = await rt.saved.rules(project)
            # a write to a protected path is asked as the file tools ask it (the path resolved by the project's
            # Location, which knows the instruction files the config names): only a rule naming it can allow
            protected = None
            if action == "edit":
                location = (await rt.location((directory or Path.cwd()).resolve())).location
                try:
                    protected = (await location.aresolve(resource)).protected
                except PathError:
                    protected = protected_anchor(resource)
            decision = evaluate_request(action, [resource], chosen.rulesets, saved, protected=protected)
            return decision, chosen.name

    from ..permissions import explain

    decision, agent_name = run_async(main)
    console = out_console()
    style = {"allow": "green", "ask": "yellow", "deny": "red"}.get(decision.effect, "white")
    console.print(Text(f"agent {agent_name}: ", style="bold") + Text(explain(decision), style=style))
    console.print(
        Text(
            "Sources, in evaluation order: agent (built-in defaults), config (tether.json permission), "
            'agent-config (agent.<name>.permission), saved ("always" approvals); the last matching rule wins.',
            style="dim",
        )
    )

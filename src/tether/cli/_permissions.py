"""``tether permissions``: the project's saved approvals (list, add, remove) and ``--explain`` for one decision.

Saved approvals are what an "always" reply persists; they never override a configured deny. ``--explain`` evaluates
``ACTION RESOURCE`` exactly as the permission service would for the agent (its rules, the config's, then the saved
approvals) and prints the deciding rule and where it came from, and what asks that action: a tool's name is explained
as the action that tool asks (``write`` -> ``edit``, as the config reads it), a name no built-in tool asks says so,
and a misspelled built-in action is refused as the config refuses it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from ..storable import printable
from ._common import fail, out_console, run_async, runtime
from ._format import shown

__all__ = ["ASKED_BY", "add_command", "explain_command", "list_command", "remove_command"]

ASKED_BY = {
    "bash": "the bash tool, with each command's text and forms (--explain bash COMMAND shows them)",
    "doom_loop": "the session, before a third identical call in a row (the resource is the tool's name)",
    "edit": "the write, edit and apply_patch tools (the files they change) and bash (the files a command writes), "
    "each path relative to the project",
    "escalate": "the bash tool, to run one command outside the sandbox (the resource is the command; the model's "
    "justification is shown)",
    "execute": "nothing: it only shows or hides Code Mode's execute tool; the calls its code makes ask their own actions",
    "external_directory": "every file tool and bash, for a path outside the project (<directory>/*), and bash for "
    "the text of a command whose paths are not known statically",
    "glob": "the glob tool, with its pattern",
    "grep": "the grep tool, with its pattern",
    "list": "the list tool, with the directory",
    "network": "tether's network proxy, for a sandboxed command's connection to a new host (the host for ports 80 "
    "and 443, else host:port; an address a name resolves to on this machine or a private network too)",
    "question": "the question tool",
    "read": "the read tool and grep (a file, relative to the project) and the MCP resource tools (mcp:<server>:<uri>)",
    "skill": "the skill tool, with the skill's name",
    "task": "the task tool, with the subagent's name",
    "todoread": "the todoread tool",
    "todowrite": "the todowrite tool",
    "webfetch": "the webfetch tool, with the URL and each address it reaches",
    "webfetch_private": "the webfetch tool, for a URL on this machine or a private network",
}
"""What asks each built-in action (docs/permissions.md, *Permission keys*; a test keeps it equal to the config's list)."""


def _action(key: str) -> tuple[str, str]:
    """The action ``key`` stands for and a line saying what asks it; a misspelled built-in action is refused.

    Raises:
        UsageError: ``key`` misspells a built-in action (the message names the right one).
    """
    from ..config import BUILTIN_ACTIONS, RESERVED_ACTIONS, misspelled_permission, permission_action
    from ..errors import UsageError

    problem = misspelled_permission(key)
    if problem is not None:
        raise UsageError(problem)
    action = permission_action(key)
    if action in BUILTIN_ACTIONS:
        said = f"{action} is asked by {ASKED_BY[action]}."
        if action != key:
            said = f'"{key}" is read as "{action}" (in tether.json too). {said}'
        return action, said
    if action in RESERVED_ACTIONS:
        return (
            action,
            f"No tether tool asks {action} (an OpenCode permission key; accepted so a shared config loads).",
        )
    return action, (
        f"No built-in tool asks {action}: only an MCP tool of that name (<server>_<tool>) or a plugin or project tool "
        "that asks it (ctx.ask) reads these rules."
    )


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
        console.print(
            shown(f'No saved approvals for {project}. An "always" reply to a permission prompt adds one.')
        )
        return
    table = Table(
        box=None, pad_edge=False, header_style="bold", title=shown(f"saved approvals for {project}")
    )
    for column in ("id", "action", "resource"):
        table.add_column(column, no_wrap=column != "resource")
    for approval in approvals:
        # a saved pattern is a model's command ("always" on `touch x`): a cell of Text, never markup or an escape
        table.add_row(*(shown(cell) for cell in (approval.id, approval.action, approval.resource)))
    console.print(table)


def add_command(*, data_dir: Path, action: str, pattern: str, directory: Path | None) -> None:
    """Save ``action`` on ``pattern`` for the project (a tool's name saves the action that tool asks)."""

    async def main() -> tuple[str, list[Any]]:

        async with await runtime(data_dir, directory) as rt:
            project = await _project(rt, directory)
            return project, await rt.saved.add(project, action, [pattern])

    from ..config import misspelled_permission, permission_action

    problem = misspelled_permission(action)
    if problem is not None:
        fail(problem)
    spelled, action = action, permission_action(action)
    project, added = run_async(main)
    console = out_console()
    if spelled != action:
        console.print(shown(f'"{spelled}" is read as "{action}", as tether.json reads it.'))
    if added:
        console.print(shown(f'saved {added[0].id}: {action} "{pattern}" -> allow for {project}'))
    else:
        console.print(shown(f'already saved: {action} "{pattern}" for {project}'))


def remove_command(*, data_dir: Path, approval_id: str, directory: Path | None) -> None:
    """Remove one saved approval by id."""

    async def main() -> None:

        async with await runtime(data_dir, directory) as rt:
            await rt.saved.remove(approval_id)

    run_async(main)
    out_console().print(shown(f"removed {approval_id}"))


def explain_command(
    *, data_dir: Path, action: str, resource: str, agent: str | None, directory: Path | None
) -> None:
    """Print which rule decides ``action`` on ``resource`` for the agent in the project, and what asks it."""
    from ..errors import UsageError

    try:
        action, asked = _action(action)
    except UsageError as exc:
        fail(exc.message)
    if action == "bash":
        _explain_bash(data_dir=data_dir, command=resource, agent=agent, directory=directory)
        return

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
                # a resource is relative to the project root, wherever in the project the command runs
                spelled = resource if resource.startswith("~") else os.path.join(location.root, resource)
                try:
                    protected = (await location.aresolve(spelled)).protected
                except PathError:
                    protected = protected_anchor(resource)
            decision = evaluate_request(action, [resource], chosen.rulesets, saved, protected=protected)
            return decision, chosen.name

    from ..permissions import explain

    decision, agent_name = run_async(main)
    console = out_console()
    style = {"allow": "green", "ask": "yellow", "deny": "red"}.get(decision.effect, "white")
    console.print(
        Text(f"agent {printable(agent_name)}: ", style="bold") + shown(explain(decision), style, lines=True)
    )
    console.print(shown(asked))
    console.print(
        Text(
            "Sources, in evaluation order: agent (built-in defaults), config (tether.json permission), "
            'agent-config (agent.<name>.permission), saved ("always" approvals); the last matching rule wins.',
            style="dim",
        )
    )


def _explain_bash(*, data_dir: Path, command: str, agent: str | None, directory: Path | None) -> None:
    """``--explain bash COMMAND``: the bash tool's own analysis and the requests it would make, each decided."""

    async def main() -> tuple[Any, list[tuple[str, Any]], str, Any]:
        import anyio.to_thread

        from ..builtins.bash import plan_command
        from ..permissions import evaluate_request
        from ._tools import _agent  # pyright: ignore[reportPrivateUsage]

        async with await runtime(data_dir, directory) as rt:
            project = await _project(rt, directory)
            chosen = _agent(rt, agent)
            saved = await rt.saved.rules(project)
            location = (await rt.location((directory or Path.cwd()).resolve())).location
            # as the bash tool runs it: in the working directory (``repo/pkg``), inside the project root
            plan = await anyio.to_thread.run_sync(plan_command, location, command, location.directory)
            assert plan is not None  # the working directory is a directory

            def decide(action: str, resources: list[str], protected: str | None = None) -> Any:
                return evaluate_request(action, resources, chosen.rulesets, saved, protected=protected)

            asks: list[tuple[str, Any]] = []
            for directory_resource in dict.fromkeys(p.external.resource for p in plan.outside if p.external):
                asks.append(("outside the project", decide("external_directory", [directory_resource])))
            analysis = plan.analysis
            if analysis.uncertain_paths_resource is not None:
                asks.append(
                    (
                        "paths not known statically",
                        decide("external_directory", [analysis.uncertain_paths_resource]),
                    )
                )
            if plan.ordinary_writes:
                asks.append(("writes", decide("edit", list(plan.ordinary_writes))))
            for item in plan.protected_writes:
                asks.append(("writes a protected path", decide("edit", [item.resource], item.protected)))
            if analysis.resources:
                asks.append(("the command", decide("bash", list(analysis.resources))))
            # the sandbox that would hold it (what the bash tool builds per call, nothing created here)
            held = await anyio.to_thread.run_sync(
                lambda: rt.sandbox.preview(str(location.root), extra_protected=location.protected)
            )
            return plan, asks, chosen.name, held

    from ..permissions import explain

    plan, asks, agent_name, held = run_async(main)
    analysis = plan.analysis
    console = out_console()
    console.print(Text(f"agent {printable(agent_name)}: bash ", style="bold") + shown(command, lines=True))
    for item in analysis.commands:
        line = Text("  command: ", style="bold") + shown(item.text, lines=True)
        if item.forms:
            line += Text("  runs as: ", style="dim") + shown(" | ".join(item.forms))
        console.print(line)
    for redirect in analysis.redirects:
        console.print(Text("  redirect: ", style="bold") + shown(redirect))
    for arg, resolved in plan.paths:
        where = "outside the project" if resolved.external is not None else "inside"
        console.print(
            Text("  path: ", style="bold")
            + shown(f"{arg.path} ({'write' if arg.write else 'read'}, {where})")
        )
    if analysis.uncertain_resource is not None:
        reasons = list(analysis.unknown) or ["the command is not valid shell"]
        console.print(Text("  uncertain: ", style="bold yellow") + shown("; ".join(reasons)))
        console.print(Text('    only a bash rule of * allows it; "always" saves nothing for it', style="dim"))
    for reason in analysis.uncertain:
        console.print(Text("  unknown path: ", style="bold yellow") + shown(reason))
    effect = "allow"
    for why, decision in asks:
        style = {"allow": "green", "ask": "yellow", "deny": "red"}.get(decision.effect, "white")
        console.print(Text(f"{why}: ", style="bold") + shown(explain(decision), style, lines=True))
        if effect == "allow" and decision.effect != "allow":
            effect = decision.effect
    if analysis.uncertain_paths_resource is not None:
        saved = analysis.uncertain_paths_save
        saves = (
            f'external_directory "{saved[0]}"' if saved else "nothing (acts as once: the text holds * or ?)"
        )
        console.print(Text('an "always" reply to the paths request saves: ', style="dim") + shown(saves))
    if analysis.resources:
        saves = ", ".join(f'bash "{pattern}"' for pattern in analysis.save) or "nothing (acts as once)"
        console.print(Text('an "always" reply to the bash request saves: ', style="dim") + shown(saves))
    if held is None:
        console.print(
            Text("sandbox: none, the command would run unconfined (see tether doctor)", style="bold yellow")
        )
    else:
        held_json = held.describe()
        console.print(
            Text("sandbox: ", style="bold")
            + shown(
                f"{held_json['mechanism']}; network {held_json['network']}; writable: {', '.join(held_json['writable'])}"
            )
        )
        if held.read_only:
            console.print(Text("  read-only: ", style="bold") + shown(", ".join(held.read_only)))
    verdict = {"allow": "runs without asking", "ask": "asks first", "deny": "is blocked"}[effect]
    console.print(Text(f"The bash tool {verdict} (requests in the order the tool makes them).", style="bold"))
    console.print(
        Text(
            "Sources, in evaluation order: agent (built-in defaults), config (tether.json permission), "
            'agent-config (agent.<name>.permission), saved ("always" approvals); the last matching rule wins. '
            "Every resource of a request must be allowed.",
            style="dim",
        )
    )

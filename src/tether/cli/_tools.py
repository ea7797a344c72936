"""``tether tools`` (the catalog an agent sees for a model, each tool's origin, and why a tool is hidden) and
``tether tool call`` (settle one call).

``tether tools`` hides what the agent's permission rules hide (``hidden_reason``) and what the per-model catalog
rules hide from the model (``--model``, else the config's ``model``; ``model_reason``), each with the deciding rule.
The origin column is the registration's (``builtin``, ``application``, ``plugin:<entry point>``, ``user:<file>``,
``project:<file>``, ``mcp:<server>``). Plugins and project tool files that were skipped are printed once on stderr.

``tool call`` goes through the same path as a model's call, because it is one: a real session turn whose model
(:class:`~tether.cli._onecall.OneCallModel`) makes exactly that call in its first step and stops in its second, so
the runner materializes the agent's tools and settles the call (decode, permissions at the point of action,
execute, encode, bound) and the store records it; ``tether session show`` shows it with its permission decisions.
The content the model would read goes to stdout; retained output paths, errors and the session id go to stderr.
Exit code 1 when the call failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from ._common import TURN_FAILED, Output, err_console, fail, freeze_startup, out_console, run_async, runtime
from ._console import print_notices
from ._format import shown

__all__ = ["call_command", "hidden_reason", "model_reason", "tools_command"]


def hidden_reason(action: str, agent: Any) -> str | None:
    """Why ``action`` is hidden from ``agent``'s catalog, or ``None`` when it is visible.

    The decision is :func:`tether.tools.is_hidden` over the agent's rules, exactly what materialize uses, so the two
    cannot disagree; this only adds the explanation: the deciding rule and the layer (source) it came from.
    """
    from ..rules import last_match
    from ..tools.internal import is_hidden

    if not is_hidden(action, agent.rules):
        return None
    for ruleset in reversed(agent.rulesets):
        i = last_match(ruleset.rules, action)
        if i >= 0:
            rule = ruleset.rules[i]
            return f'denied by rule {rule.action} "{rule.resource}" -> {rule.effect} ({ruleset.source})'
    return "denied by the agent's rules"  # unreachable while ``rules`` is the concatenation of ``rulesets``


def _agent(rt: Any, name: str | None) -> Any:
    from ..errors import UsageError

    # as `tether run` chooses: --agent, else the config's default_agent (an untrusted project's only when it names
    # the user's own choice), else build; so `permissions --explain` and `tools` describe the agent that runs
    chosen = name or rt.config.get("default_agent") or "build"
    agent = rt.agents.get(chosen)
    if agent is None:
        raise UsageError(f'no agent "{chosen}"; agents: {", ".join(sorted(rt.agents))}')
    return agent


def model_reason(catalog: Any, model: str, name: str) -> str | None:
    """Why the per-model catalog rules hide tool ``name`` from ``model``, or ``None`` when they do not."""
    from ..tools.internal import DEFAULT_MODEL_RULES

    found = catalog.deciding(model, name)
    if found is None or found[2]:
        return None
    index, pattern, _ = found
    rule = catalog.rules[index]
    layer = "built-in" if index < len(DEFAULT_MODEL_RULES) else "config catalog.models"
    return f'hidden from model {model} by "{rule.model}": {{"{pattern}": false}} ({layer})'


def tools_command(
    *,
    data_dir: Path,
    agent: str | None,
    directory: Path | None,
    model: str | None = None,
    output_format: str = "text",
) -> None:
    """The body of ``tether tools``."""
    if output_format not in ("text", "json"):
        fail(f"--format must be text or json, not {output_format!r}")

    async def main() -> tuple[str, str | None, list[dict[str, Any]], tuple[str, ...]]:
        from ..tools.internal import ModelCatalog

        async with await runtime(data_dir, directory) as rt:
            location = await rt.location((directory or Path.cwd()).resolve())
            chosen = _agent(rt, agent)
            shown_model = model or rt.config.get("model")
            catalog = ModelCatalog.from_config(rt.config.get("catalog"))
            rows: list[dict[str, Any]] = []
            for name, entry in sorted(location.tools.effective().items()):
                summary = (
                    entry.tool.description.strip().splitlines()[0] if entry.tool.description.strip() else ""
                )
                reason = hidden_reason(entry.action, chosen)
                if reason is None and isinstance(shown_model, str):
                    reason = model_reason(catalog, shown_model, name)
                rows.append(
                    {
                        "name": name,
                        "origin": entry.origin,
                        "visible": reason is None,
                        "hidden_because": reason,
                        "description": summary,
                    }
                )
            return chosen.name, shown_model if isinstance(shown_model, str) else None, rows, location.notices

    agent_name, model_name, rows, notices = run_async(main)
    print_notices(notices)
    if output_format == "json":
        typer.echo(
            json.dumps({"agent": agent_name, "model": model_name, "tools": rows, "notices": list(notices)})
        )
        return
    console = out_console()
    title = f"catalog of agent {agent_name}" + (f" for model {model_name}" if model_name else "")
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold", title=title)
    table.add_column("tool", no_wrap=True)
    table.add_column("visible", no_wrap=True)
    table.add_column("description / why hidden")
    table.add_column("origin", no_wrap=True)
    for row in rows:
        name, origin = shown(row["name"]), shown(row["origin"])
        if row["visible"]:
            table.add_row(name, Text("yes", style="green"), shown(row["description"][:100]), origin)
        else:
            table.add_row(name, Text("hidden", style="red"), shown(row["hidden_because"], "red"), origin)
    console.print(table)
    if model_name is None:
        console.print(
            Text(
                "No model given (--model or the config's model): the per-model catalog rules are not applied.",
                style="dim",
            )
        )
    console.print(
        Text(
            "Visibility only hides tools; a visible tool still asks permission at the point of action "
            "(see `tether permissions --explain ACTION RESOURCE`).",
            style="dim",
        )
    )


def call_command(
    *,
    data_dir: Path,
    name: str,
    input_json: str,
    agent: str | None,
    directory: Path | None,
    yes: bool,
    deny_asks: bool,
) -> None:
    """The body of ``tether tool call``."""
    from ._run import approval_mode, project_dir

    try:
        value = json.loads(input_json)
    except json.JSONDecodeError as exc:
        fail(f"the tool input is not JSON: {exc.msg} (column {exc.colno})")
    mode, why = approval_mode(yes=yes, deny_asks=deny_asks)
    path = project_dir(directory)

    async def main() -> tuple[str, Any]:
        import anyio

        from .. import ids
        from ..permissions import PermissionAsked
        from ..session import ToolPart
        from ._approve import Approver
        from ._onecall import OneCallModel

        async with await runtime(data_dir, path) as rt:
            location = await rt.location(path)
            freeze_startup()  # a task call runs a whole child turn: collect as run does
            chosen = _agent(rt, agent)
            session = await rt.sessions.create(location, agent=chosen.name, title=f"tether tool call {name}")
            await rt.store.set_kind(session.id, "tool-call")  # never picked by `tether run --continue`
            call_id = ids.ascending("call")
            approver = Approver(
                mode=mode,
                service=rt.permissions,
                console=Output(stderr=True),
                session_id=session.id,
                call_info=lambda _cid: (name, value),
                why_deny=why,
            )
            with rt.bus.subscribe(PermissionAsked, approver.on_event):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(approver.run)
                    try:
                        await session.prompt(f"tool call {name}", model=OneCallModel(name, value, call_id))
                    finally:
                        tg.cancel_scope.cancel()
            parts = [
                p
                for m in await session.messages()
                for p in m.parts
                if isinstance(p, ToolPart) and p.call_id == call_id
            ]
            return session.id, parts[-1] if parts else None

    session_id, part = run_async(main)
    from ..content import text_of

    console = err_console()
    if part is not None and part.state == "completed":
        typer.echo(text_of(part.content, "\n"))
        for saved in part.output_paths:
            console.print(Text(f"full output: {saved}", style="dim"))
        console.print(Text(f"session {session_id}", style="dim"))
        return
    if part is None:
        console.print(Text(f"✗ {name} was not called (session {session_id})", style="red"))
        raise typer.Exit(TURN_FAILED)
    partial = text_of(part.content, "\n")
    if partial:
        typer.echo(partial)
    kind = f" ({part.error_kind})" if part.error_kind else ""
    console.print(shown(f"✗ {name} failed{kind}: {part.error}", "red", lines=True))
    console.print(Text(f"session {session_id}", style="dim"))
    raise typer.Exit(TURN_FAILED)

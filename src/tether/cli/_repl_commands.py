"""The slash commands of the interactive session: ``/help``, ``/new``, ``/sessions``, ``/resume``, ``/model``,
``/agent``, ``/exit``. Each is one short async function over the :class:`~._repl_session.Repl`; a mistake is one line
that says what to type instead, and the session goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from ..storable import printable
from ._format import shown

if TYPE_CHECKING:
    from ._repl_session import Repl

__all__ = ["COMMANDS", "banner", "slash"]

_LISTED = 10
"""How many sessions ``/sessions`` lists."""


async def _help(repl: Repl, _arg: str) -> bool:
    table = Table.grid(padding=(0, 2))
    for name, (usage, about, _run) in COMMANDS.items():
        table.add_row(Text(f"{name}{usage}", style="bold"), Text(about))
    repl.console.print(table)
    repl.note(
        "Enter sends · Esc Enter adds a line · //text sends text that starts with / · ^C cancels a turn "
        "(twice: exit) · ^C twice or ^D at the prompt exits"
    )
    return True


async def _new(repl: Repl, _arg: str) -> bool:
    await repl.new_session()
    repl.note(f"new session: it starts with your next message (agent {repl.agent})")
    return True


async def _sessions(repl: Repl, _arg: str) -> bool:
    infos = await repl.rt.sessions.list(project=str(repl.location.root), limit=4 * _LISTED)
    infos = [info for info in infos if info.parent_id is None][:_LISTED]
    if not infos:
        repl.note("no sessions in this project yet")
        return True
    from ._shortid import short_ids

    current = repl.session.id if repl.session is not None else None
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("id", "title", "agent", "updated"):
        table.add_column(column, no_wrap=column != "title", overflow="ellipsis")
    short = short_ids(info.id for info in infos)
    for info in infos:
        when = datetime.fromtimestamp(info.updated / 1000).strftime("%Y-%m-%d %H:%M") if info.updated else "-"
        mark = " ←" if info.id == current else ""
        table.add_row(
            shown(short[info.id] + mark), shown(info.title or "(untitled)"), shown(info.agent), when
        )
    repl.console.print(table)
    repl.note("/resume ID continues one (its short id, as listed, or a session id)")
    return True


async def _resume(repl: Repl, arg: str) -> bool:
    from ._run import open_session

    if not arg:
        repl.note("usage: /resume ID (see /sessions)", "red")
        return True
    from ._shortid import resolve_session

    found = await resolve_session(repl.rt.store, arg)
    if repl.session is not None and found.id == repl.session.id:
        repl.note(f"already in {found.id}")
        return True
    session = await open_session(
        repl.rt, repl.location, session_id=found.id, continue_=False, agent=repl.agent
    )
    messages = await repl.use_session(session)
    title = session.info.title or "(untitled)"
    repl.console.print(shown(f"resumed {session.id}: {title} (agent {repl.agent})", "green"))
    repl.show_history(messages)
    return True


def _number(value: float) -> str:
    return f"{value:,.6f}".rstrip("0").rstrip(".")


async def _model(repl: Repl, arg: str) -> bool:
    if arg:
        repl.choose_model(arg)  # an unusable name raises: one line, the current model stays
    if repl.model is None:
        repl.note("no model chosen: /model provider/model (e.g. /model openai/gpt-5)", "yellow")
    else:
        price = repl.price
        cost = (
            f"${_number(price.input)} in / ${_number(price.output)} out per 1M tokens"
            if price is not None
            else "price unknown: tokens only (set provider.<p>.models.<m>.cost)"
        )
        repl.console.print(shown(f"model {repl.model.name} ({cost})", "green" if arg else ""))
    if not arg:
        _switchable(repl)
    return True


def _switchable(repl: Repl) -> None:
    """The models ``/model NAME`` can switch to: those tether knows for each provider whose key is set (or that
    needs none), then the providers whose key is missing."""
    from ._models import provider_rows

    rows = provider_rows(repl.config.data)
    usable = [row for row in rows if row["key"] != "missing" and row["models"]]
    if usable:
        repl.note("switch with /model NAME:")
        for row in usable:
            names = ", ".join(f"{row['id']}/{model}" for model in row["models"])
            repl.console.print(shown(f"  {names}"), soft_wrap=True)
    missing = [
        f"{row['id']} ({' or '.join(row['key_env'])})" if row["key_env"] else row["id"]
        for row in rows
        if row["key"] == "missing"
    ]
    if missing:
        repl.note(f"key missing: {', '.join(missing)}")
    repl.note(
        "any provider/model works too; `tether models` also asks local servers (Ollama, LM Studio, ...)"
    )


async def _agent(repl: Repl, arg: str) -> bool:
    agents = repl.rt.agents
    names = ", ".join(name for name, agent in agents.items() if not agent.hidden and agent.mode != "subagent")
    if not arg:
        repl.note(f"agent {repl.agent} (agents: {names})")
        return True
    found = agents.get(arg)
    if found is None or found.hidden:
        repl.note(f"no agent '{printable(arg)}'; agents: {names}", "red")
        return True
    if found.mode == "subagent":
        repl.note(f"{arg} is a subagent (other agents run it); agents: {names}", "red")
        return True
    if arg == repl.agent:
        repl.note(f"already agent {arg}")
        return True
    if repl.session is not None:
        # a session runs as the agent it was created with: the switch takes a new session
        await repl.new_session()
        repl.agent = arg
        repl.console.print(
            shown(
                f"agent {arg}: a new session starts with your next message (/resume the last one to go back)",
                "green",
            )
        )
        return True
    repl.agent = arg
    repl.console.print(shown(f"agent {arg}", "green"))
    return True


async def _exit(_repl: Repl, _arg: str) -> bool:
    return False


Command = Callable[["Repl", str], Awaitable[bool]]

COMMANDS: Mapping[str, tuple[str, str, Command]] = {
    "/help": ("", "these commands", _help),
    "/new": ("", "start a new session (at your next message)", _new),
    "/sessions": ("", "recent sessions of this project", _sessions),
    "/resume": (" ID", "continue session ID (its short id, or a unique prefix of the id)", _resume),
    "/model": (" [provider/model]", "show or change the model", _model),
    "/agent": (" [name]", "show or change the agent (build, plan, ...)", _agent),
    "/exit": ("", "leave (also /quit, Ctrl-D)", _exit),
    "/quit": ("", "leave", _exit),
}


async def slash(repl: Repl, text: str) -> bool:
    """Run the slash command ``text``; ``False``: the session should end.

    Raises:
        UsageError, NotFoundError, ConfigError, ProviderAuthError: the command could not be done (shown as one line).
    """
    name, _, arg = text.strip().partition(" ")
    found = COMMANDS.get(name.lower())
    if found is None:
        repl.note(
            f"unknown command {printable(name)}: /help lists the commands (//text sends text starting with /)",
            "red",
        )
        return True
    return await found[2](repl, arg.strip())


def banner(repl: Repl) -> None:
    """The first lines: where, which agent and model, which session, and how to get help."""
    model = repl.model.name if repl.model is not None else "none (/model provider/model)"
    session = repl.session.id if repl.session is not None else "new"
    line = Text("tether", style="bold") + shown(
        f" · {repl.location.root} · agent {repl.agent} · model {model} · session {session}", "dim"
    )
    repl.console.print(line)
    repl.note("/help for commands · Ctrl-D to exit")

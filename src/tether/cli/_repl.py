"""``tether`` with no command in a terminal: an interactive session, many turns in one process.

One Runtime and one Location serve the whole process; one session is claimed at a time (created at the first
message, or ``--continue`` / ``--session`` / ``/resume``). Each turn is ``tether run``'s turn (``_turn.drive_turn``:
the live view, approvals asked inline by ``_approve``, ^C cancels the turn) with :class:`~._repl_view.ReplView`
for a spinner and markdown; prompt-toolkit reads the next input only between turns (``_repl_input``), so the two
never read the terminal at the same time. Slash commands live in ``_repl_commands``.

After each turn a line gives the turn's steps, tool calls, tokens, its cost in dollars where the model's price is
known (``llm._pricing``), the session's cost so far and the time. Ctrl-C at an empty prompt asks for a second one,
which exits with code 0, as Ctrl-D and ``/exit`` do; a second ^C *during* a turn exits at once with 130 (as in
``tether run``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import typer
from rich.console import Console
from rich.text import Text

from ..config import Config
from ..errors import ConfigError, NotFoundError, ProviderAuthError, TetherError, UsageError
from ..llm import Model
from ..llm._pricing import Price, dollars, find_price, usage_cost
from ..session import AssistantInfo
from ._common import CANCELLED, OK, fail, freeze_startup, opened, out_console, run_async, stdin_is_terminal
from ._format import shown
from ._models import Models
from ._toolview import TerminalSettings
from ._turn import TurnOutcome

__all__ = ["Repl", "repl_command", "session_cost"]


def session_cost(messages: Sequence[Any], config: Config) -> float | None:
    """The dollars a stored session has cost, each step priced by its own model; ``None``: a step's price is unknown."""
    total = 0.0
    for message in messages:
        info = message.info
        if not isinstance(info, AssistantInfo) or info.usage is None:
            continue
        provider, _, model_id = info.model.partition("/")
        cost = usage_cost(info.usage, find_price(provider, model_id, config.data))
        if cost is None:
            return None
        total += cost
    return total


class Repl:
    """The state of one interactive session: the runtime, the chosen agent and model, the claimed session."""

    def __init__(self, *, rt: Any, location: Any, config: Config, console: Console, agent: str) -> None:
        self.rt = rt
        self.location = location
        self.config = config
        self.console = console
        self.agent = agent
        self.model: Model | None = None
        self.models = Models(config.data)
        """The models ``/model`` chose, one per name (switching back reuses its client), closed when the REPL ends."""
        self.price: Price | None = None
        self.session: Any = None
        self.spent: float | None = 0.0
        """The current session's cost so far (``None``: some step's price is unknown)."""
        self._refused_shown = False
        self.draft = ""
        """Text the next prompt starts with (typed at the trust question, or during the last turn)."""
        self.settings = TerminalSettings.from_config(config.data)
        """What the terminal shows (the config's ``terminal`` section)."""

    # -- what the slash commands change -----------------------------------------------------------------------------

    def choose_model(self, name: str | None) -> None:
        """Use ``name`` (``provider/model``; ``None``: the config's ``model``) for the next turns.

        Raises:
            UsageError, ConfigError, ProviderAuthError: the model cannot be used (the current one is kept).
        """
        model = self.models.get(name)
        price = find_price(model.provider, model.model_id, self.config.data)
        self.model, self.price = model, price

    async def use_session(self, session: Any) -> Sequence[Any]:
        """Make ``session`` (already claimed) the current one, releasing the previous claim; returns its stored
        messages (read once: for its cost so far, and for :meth:`show_history`)."""
        messages = await session.messages()
        spent = session_cost(messages, self.config)
        previous = self.session
        self.session, self.agent, self.spent = session, session.info.agent, spent
        if previous is not None and previous.id != session.id:
            await self.rt.store.release(previous.id)
        return messages

    def show_history(self, messages: Sequence[Any]) -> None:
        """Print the last turns of a resumed session (``terminal.resume_turns``)."""
        from ._history import print_history

        print_history(self.console, messages, self.settings.resume_turns)

    async def new_session(self) -> None:
        """Leave the current session; the next message starts a new one (with the current agent)."""
        if self.session is not None:
            await self.rt.store.release(self.session.id)
        self.session = None
        self.spent = 0.0

    # -- turns ------------------------------------------------------------------------------------------------------

    async def turn(self, text: str) -> None:
        """Run one turn of the current session (created now if there is none) and print its line."""
        from ._preview import Preview
        from ._repl_view import ReplView
        from ._run import open_session, turn_system
        from ._trust import print_refused
        from ._turn import drive_turn

        if self.model is None:
            self.note(
                "no model chosen: pick one with /model provider/model (e.g. /model openai/gpt-5)", "red"
            )
            return
        session = self.session
        if session is None:
            session = await open_session(
                self.rt, self.location, session_id=None, continue_=False, agent=self.agent
            )
            await self.use_session(session)
        instructions, system = await turn_system(self.rt, self.location, self.config, session, self.model)
        if not self._refused_shown:
            self._refused_shown = True
            print_refused(instructions)
        view = ReplView(self.console, session.id, self.settings)
        try:
            outcome = await drive_turn(
                session=session,
                bus=self.rt.bus,
                permissions=self.rt.permissions,
                questions=self.rt.questions,
                prompt=text,
                model=self.model,
                approval="ask",
                why_deny="",
                console=self.console,
                system=system,
                price=self.price,
                view=view,
                preview=Preview(
                    location=self.location.location, sandbox=self.rt.sandbox, settings=self.settings
                ),
            )
        finally:
            self.draft = view.typed.text  # typed during the turn: the next prompt's text
        await self.rt.store.flush()  # a refused write ends the session (law 12), before another turn starts
        if self.spent is not None:
            self.spent = None if outcome.cost is None else self.spent + outcome.cost
        self.console.print(turn_line(outcome, self.spent))

    def note(self, message: str, style: str = "dim") -> None:
        self.console.print(shown(message, style, lines=True))


def turn_line(outcome: TurnOutcome, spent: float | None) -> Text:
    """``── done · 2 steps · 1 tool call · 1,234 in / 56 out · $0.0123 (session $0.0456) · 3.1s``."""
    if outcome.error is not None:
        return Text("── failed: ", style="red bold") + shown(outcome.error, "red")
    read = outcome.usage.cache_read_tokens if outcome.usage is not None else 0
    parts = [
        f"{outcome.steps} step{'s' if outcome.steps != 1 else ''}",
        f"{outcome.calls} tool call{'s' if outcome.calls != 1 else ''}"
        + (f" ({outcome.failed_calls} failed)" if outcome.failed_calls else ""),
        f"{outcome.input_tokens:,} in"
        + (f" ({read:,} cached)" if read else "")
        + f" / {outcome.output_tokens:,} out",
    ]
    if outcome.cost is not None:
        parts.append(dollars(outcome.cost) + (f" (session {dollars(spent)})" if spent is not None else ""))
    parts.append(f"{outcome.seconds:.1f}s")
    label, style = {
        "done": ("done", "green"),
        "cancelled": ("cancelled (the session goes on)", "yellow"),
        "declined": ("stopped: a permission request was rejected", "yellow"),
        "max_steps": ("stopped at the step limit", "yellow"),
    }.get(outcome.stop, (outcome.stop, "white"))
    return Text(f"── {label} · ", style=f"{style} bold") + Text(" · ".join(parts), style="dim")


def _shown_error(exc: BaseException) -> TetherError | None:
    """The user-fixable error inside ``exc`` (a task group wraps what a turn raises), else ``None``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, UsageError | NotFoundError | ConfigError | ProviderAuthError) else None


async def _loop(repl: Repl, read: Callable[[str], Any]) -> int:
    from ._repl_commands import slash

    interrupted = False
    while True:
        prompt = f"{repl.agent} › "
        try:
            line: str = await read(prompt)
        except KeyboardInterrupt:
            if interrupted:
                return OK
            interrupted = True
            repl.note("(Ctrl-C again or Ctrl-D to exit)")
            continue
        except EOFError:
            return OK
        interrupted = False
        text = line.strip()
        if not text:
            continue
        try:
            if text.startswith("/") and not text.startswith("//"):
                if not await slash(repl, text):
                    return OK
            else:
                await repl.turn(text.removeprefix("/") if text.startswith("//") else text)
        except Exception as exc:
            # only the user-fixable ones are shown; a StoreError or a defect ends the session
            error = _shown_error(exc)
            if error is None:
                raise
            repl.note(f"error: {error.message}", "red")


def repl_command(
    *,
    data_dir: Path,
    model: str | None,
    agent: str | None,
    directory: Path | None,
    continue_: bool,
    session_id: str | None,
    trust: bool,
    help_text: Callable[[], str],
) -> None:
    """The body of a bare ``tether``: the interactive session in a terminal, else the help (exit code 2)."""
    if not stdin_is_terminal():
        typer.echo(help_text(), err=True)
        raise typer.Exit(2)
    if continue_ and session_id:
        fail("--continue and --session contradict each other; pass one of them")
    from ._run import project_dir

    path = project_dir(directory)

    async def main() -> int:
        from ._repl_commands import COMMANDS, banner
        from ._repl_input import HISTORY_FILE, HistoryFile, prompt_session
        from ._run import open_session
        from ._tools import print_notices
        from ._trust import project_config

        kept: list[str] = []  # what was typed before or at the trust question: the first prompt's text
        config = await anyio.to_thread.run_sync(
            lambda: project_config(data_dir, path, trust=trust, ask=True, kept=kept)
        )
        console = out_console()
        async with opened(data_dir, config) as rt:
            location = await rt.location(path)
            freeze_startup()
            print_notices(location.notices)  # skipped plugins and project tool files, said once
            name = agent or config.get("default_agent") or "build"
            if name not in rt.agents:
                raise UsageError(f"no agent {name!r}: use one of {', '.join(sorted(rt.agents))}")
            repl = Repl(rt=rt, location=location, config=config, console=console, agent=name)
            try:
                repl.choose_model(model)
            except (UsageError, ProviderAuthError) as exc:  # the session opens; /model fixes it
                repl.note(exc.message, "yellow")
            resumed: Sequence[Any] = ()
            if continue_ or session_id:
                resumed = await repl.use_session(
                    await open_session(rt, location, session_id=session_id, continue_=continue_, agent=name)
                )
            history = HistoryFile(data_dir / HISTORY_FILE)
            reader = prompt_session(history, sorted(COMMANDS))
            banner(repl)
            repl.show_history(resumed)

            warned: list[str] = []

            repl.draft = "\n".join(kept)
            if repl.draft:
                repl.note("your message is at the prompt: Enter sends it")

            async def read(prompt: str) -> str:
                draft, repl.draft = repl.draft, ""
                line = await reader.prompt_async(prompt, default=draft)
                if history.broken is not None and not warned:
                    warned.append(history.broken)  # said once
                    repl.note(f"history off: {history.broken}", "yellow")
                return line

            try:
                return await _loop(repl, read)
            finally:
                await repl.models.aclose()

    try:
        code = run_async(main)
    except KeyboardInterrupt:  # ^C between a turn and the next prompt (no handler of ours was listening)
        code = CANCELLED
    raise typer.Exit(code)

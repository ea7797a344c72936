"""The state of one interactive session (:class:`Repl`): the runtime, the agent and model, the claimed session, and
its turns; what the slash commands (``_repl_commands``) change, and what the loop (``_repl``) sends a message to.
After each turn, :func:`turn_line` says how it ended and what it cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from ..config import Config
from ..llm import Model
from ..llm.internal import Price, dollars, find_price, usage_cost
from ..session import AssistantInfo
from ._format import shown
from ._models import Models
from ._toolview import TerminalSettings
from ._turn import TurnOutcome

__all__ = ["Repl", "session_cost", "turn_line"]


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
                console=view.console,
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

"""The conversation so far, printed when the interactive session resumes one (``tether -c``, ``--session``,
``/resume``): the last ``terminal.resume_turns`` turns, each as the user's text, the model's text and one line per
tool call (the live view's ``✓``/``✗`` line), between two rules that say how many turns were left out.

Built from the stored messages only (what ``tether session show`` shows in full). Long texts are cut to a few lines
with a count of the rest: this is a reminder of where the conversation stands, not the record.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from ..records import AssistantInfo, TextPart, ToolPart, UserInfo
from ..store import StoredMessage
from ._format import shown
from ._live import LiveView

__all__ = ["print_history", "turns_of"]

_USER_LINES = 6
_TEXT_LINES = 12


def turns_of(messages: Sequence[StoredMessage]) -> list[list[StoredMessage]]:
    """The messages grouped by turn: each turn starts with a user message (messages before the first one, if any,
    make a turn of their own)."""
    turns: list[list[StoredMessage]] = []
    for message in messages:
        if isinstance(message.info, UserInfo) or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _cut(console: Console, text: str, limit: int, prefix: Text, style: str = "") -> None:
    lines = text.strip("\n").splitlines() or [""]
    for n, line in enumerate(lines[:limit]):
        console.print((prefix if n == 0 else Text(" " * len(prefix.plain))) + shown(line, style))
    if len(lines) > limit:
        more = len(lines) - limit
        console.print(
            Text(" " * len(prefix.plain)) + Text(f"… {more} more line{'s' if more != 1 else ''}", "dim")
        )


def print_history(console: Console, messages: Sequence[StoredMessage], turns: int) -> None:
    """Print the last ``turns`` turns of ``messages`` (nothing when ``turns`` is 0 or the session has none)."""
    grouped = turns_of(messages)
    if turns <= 0 or not grouped:
        return
    shown_turns = grouped[-turns:]
    earlier = len(grouped) - len(shown_turns)
    title = f"the last {len(shown_turns)} of {len(grouped)} turns" if earlier else "the conversation so far"
    console.print(Rule(title, style="dim", align="left"))
    for turn in shown_turns:
        for message in turn:
            info = message.info
            if isinstance(info, UserInfo):
                text = "".join(p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic)
                _cut(console, text, _USER_LINES, Text("you › ", style="cyan bold"))
                continue
            if not isinstance(info, AssistantInfo):
                continue
            for part in message.parts:
                if isinstance(part, TextPart) and not part.synthetic and part.text.strip():
                    _cut(console, part.text, _TEXT_LINES, Text("  "))
                elif isinstance(part, ToolPart) and not part.provider_executed:
                    console.print(Text("  ") + Text.assemble(*LiveView.settled_line(part)))
            if info.error is not None:
                console.print(shown(f"  ✗ {info.error.message}", "red"))
    console.print(Rule("your turn", style="dim", align="left"))

"""Reading a person's choice on the terminal: one answer from a fixed set of whole words.

Every terminal prompt that asks for a choice (a permission request, the trust question, a delete confirmation) reads
it here. The answer is the whole line: spaces and tabs around it are ignored and ASCII letters compare without
regard to case, and it must then equal one of the words the prompt documents. Never a prefix or a first letter:
``absolutely not`` is not ``always``. Anything else is refused with what is accepted, and the question is asked
again. An empty line and the end of input (Ctrl-D) give the prompt's safe answer (reject, no).

A prompt may refuse a word with a reason instead (the one-letter ``a`` when "always" would save a broad pattern), so
the person learns what to type rather than seeing the word mistaken for another.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Mapping
from dataclasses import field
from functools import partial
from typing import Generic, TypeVar

import anyio
from rich.console import Console
from rich.text import Text

from .._record import record
from ._format import shown

__all__ = [
    "YES_NO",
    "Choices",
    "ask_choice",
    "ask_choice_blocking",
    "parse_choice",
    "pending_lines",
    "read_line",
    "yes_no",
]

T = TypeVar("T")

_SPACE = " \t\r\n\f\v"
YES_NO: Mapping[str, bool] = {"y": True, "yes": True, "n": False, "no": False}


@record
class Choices(Generic[T]):
    """The answers a prompt accepts.

    Attributes:
        words: each accepted word, in lower case, and the choice it gives.
        accepted: how a refusal names them (``y (yes) or n (no)``).
        empty: the choice of an empty line and of the end of input: the safe one.
        refused: words refused with the reason shown instead of the generic refusal.
    """

    words: Mapping[str, T]
    accepted: str
    empty: T
    refused: Mapping[str, str] = field(default_factory=dict[str, str])


def yes_no() -> Choices[bool]:
    """``y``/``yes`` or ``n``/``no``; an empty line (or Ctrl-D) is no."""
    return Choices(words=YES_NO, accepted="y (yes) or n (no); an empty line is no", empty=False)


def _key(line: str) -> str | None:
    text = line.strip(_SPACE)
    return text.lower() if text.isascii() else None


def parse_choice(line: str, words: Mapping[str, T]) -> T | None:
    """The choice ``line`` answers: one of ``words`` whole (surrounding spaces and ASCII case aside), else ``None``."""
    key = _key(line)
    return None if key is None else words.get(key)


async def read_line(fd: int | None = None) -> str | None:
    """Read one line from a terminal without blocking the event loop (cancellable); ``None`` at end of input."""
    source = sys.stdin.fileno() if fd is None else fd
    data = b""
    while not data.endswith(b"\n"):
        await anyio.wait_readable(source)
        chunk = os.read(source, 1024)
        if not chunk:
            return data.decode(errors="replace") if data else None
        data += chunk
    return data.decode(errors="replace").rstrip("\r\n")


async def ask_choice(
    console: Console,
    prompt: str | Text,
    choices: Choices[T],
    *,
    again: str | Text | None = None,
    kept: list[str] | None = None,
) -> T:
    """Print ``prompt`` and read answers until one is accepted; an empty line or the end of input gives
    ``choices.empty``. After a refused answer ``again`` (default: ``prompt``) asks again, so a long question is not
    repeated whole. A ``str`` prompt is our own markup; text from elsewhere comes as :class:`~rich.text.Text`.
    ``kept`` collects each refused line (the interactive session's trust question keeps a message typed at it for
    the first prompt)."""
    asking = prompt
    while True:
        console.print(asking, end="")
        asking = prompt if again is None else again
        line = await read_line()
        if line is None or not line.strip(_SPACE):
            return choices.empty
        value = parse_choice(line, choices.words)
        if value is not None:
            return value
        if kept is not None:
            kept.append(line.strip(_SPACE))
        reason = choices.refused.get(_key(line) or "")
        said = shown(repr(line.strip(_SPACE)), "red")
        refusal = (
            Text("  ", style="red") + said + Text(f" is not enough: {reason}", style="red")
            if reason is not None
            else Text("  ", style="red")
            + said
            + Text(f" is not an answer: type {choices.accepted}", style="red")
        )
        console.print(refusal)


def ask_choice_blocking(
    console: Console,
    prompt: str | Text,
    choices: Choices[T],
    *,
    again: str | Text | None = None,
    kept: list[str] | None = None,
) -> T:
    """:func:`ask_choice` from synchronous code in a worker thread (the trust question is asked while the config
    loads in one): it runs on an event loop of its own."""
    return anyio.run(partial(ask_choice, console, prompt, choices, again=again, kept=kept))


def pending_lines(fd: int | None = None) -> list[str]:
    """The whole lines already typed on the terminal and not read yet (never waits): what a person typed before a
    question appeared is not its answer."""
    source = sys.stdin.fileno() if fd is None else fd
    data = b""
    while select.select([source], [], [], 0)[0]:
        chunk = os.read(source, 4096)
        if not chunk:
            break
        data += chunk
    text = data.decode(errors="replace").replace("\r\n", "\n")
    return [line.strip(_SPACE) for line in text.split("\n") if line.strip(_SPACE)]

"""The terminal of every command: exit codes, the two consoles, whether a person is there, the one-line error exit,
and the warnings a Location has for the user (:func:`print_notices`).

The lowest module of the CLI's own: ``_trust`` (the config every command loads) and ``_common`` (opening the runtime,
which loads that config) both stand on it; ``_common`` re-exports it for the commands.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

import typer
from rich.console import Console
from rich.text import Text

from ._format import shown

__all__ = [
    "CANCELLED",
    "OK",
    "TURN_FAILED",
    "USAGE",
    "err_console",
    "fail",
    "out_console",
    "stdin_is_terminal",
]

OK = 0
TURN_FAILED = 1
USAGE = 2
CANCELLED = 130


def _escape_unencodable() -> None:
    """Text a terminal cannot encode (a lone surrogate from a non-UTF-8 file name) is written as a visible escape.

    Stored values keep such text exactly; this is the one place where it meets the terminal, so no print can fail.
    """
    for stream in (sys.stdout, sys.stderr):
        # a TextIOWrapper (strict, or surrogateescape under a C locale, which fails on "\ud800"); harnesses may differ
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) in ("strict", "surrogateescape"):
            reconfigure(errors="backslashreplace")


def out_console() -> Console:
    """The console for results (stdout)."""
    _escape_unencodable()
    console = Console(highlight=False)
    if not console.is_terminal:  # logs and pipes: never hard-wrap text at a guessed width; tables get room
        console = Console(highlight=False, soft_wrap=True, width=200)
    return console


def err_console() -> Console:
    """The console for notices and errors (stderr)."""
    _escape_unencodable()
    console = Console(stderr=True, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=True, highlight=False, soft_wrap=True, width=200)
    return console


def fail(message: str, code: int = USAGE) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    # a message may quote a repository's config or a provider's words: shown as escapes, never read as markup
    err_console().print(Text("error: ", style="red bold") + shown(message, lines=True), soft_wrap=True)
    raise typer.Exit(code)


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def print_notices(notices: Sequence[str]) -> None:
    """Print each plugin or project tool notice of a Location once, as a warning line on stderr."""
    if not notices:
        return
    console = err_console()
    for line in notices:
        console.print(Text("warning: ", style="yellow") + shown(line), soft_wrap=True)

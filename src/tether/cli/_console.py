"""The terminal of every command: exit codes, the two output streams, whether a person is there, the one-line error
exit, and the warnings a Location has for the user (:func:`print_notices`).

Whether a stream is a person's terminal is decided here, by one rule (:func:`is_terminal`): it is when it is a TTY
(``isatty``), or when the user says so with the conventions rich honours too: ``FORCE_COLOR`` set to anything but
the empty string (https://force-color.org, for a CI log that renders colours), ``TTY_COMPATIBLE=1``; and it is not
with ``TTY_COMPATIBLE=0``. On a terminal, output is drawn by rich; anywhere else (a pipe, a file, a CI log) tether
writes the text of each line as is (:class:`Output`): styles and a live region are for a person, and a script reads
the characters. rich is told the same verdict (``force_terminal``). A ``tether run`` into a pipe never imports rich
(~86 million instructions, ~8 % of a scripted run: issue 38).

The lowest module of the CLI's own: ``_trust`` (the config every command loads) and ``_common`` (opening the runtime,
which loads that config) both stand on it; ``_common`` re-exports it for the commands.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, NoReturn, cast

import typer

from ..storable import printable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "CANCELLED",
    "OK",
    "TURN_FAILED",
    "USAGE",
    "Output",
    "err_console",
    "fail",
    "is_terminal",
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


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is drawn as a person's terminal: a TTY, unless ``FORCE_COLOR``/``TTY_COMPATIBLE`` say
    otherwise (the module docstring). The CLI's one rule for drawing with rich."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible == "0":
        return False
    if compatible == "1" or os.environ.get("FORCE_COLOR", ""):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a stream without a descriptor, or closed
        return False


class _Discard(io.TextIOBase):
    """Where a stream the process started without goes: written text is dropped, as rich's null file did."""

    def write(self, text: str) -> int:
        return len(text)


class Output:
    """One of a command's two streams, as a turn writes to it: rich on a terminal, the lines' text anywhere else.

    Args:
        stderr: the standard error stream (else standard output).
        console: a rich console made elsewhere (the interactive session's, a test's): its file and its verdict.
    """

    def __init__(self, *, stderr: bool = False, console: Console | None = None) -> None:
        self._stderr = stderr
        self._console = console
        if console is not None:
            self.file: IO[str] = console.file
            self.is_terminal: bool = console.is_terminal
        else:
            _escape_unencodable()
            stream = sys.stderr if stderr else sys.stdout
            # None: the process started with that descriptor closed (``>&-``)
            self.file = cast("IO[str]", _Discard()) if stream is None else stream
            self.is_terminal = is_terminal(self.file)

    @property
    def rich(self) -> Console:
        """The rich console of this stream, made at its first use: drawing on a terminal, and what only rich prints
        (tables, rules, prompts) elsewhere. Not a terminal: no colour, lines never hard-wrapped, tables get room."""
        if self._console is None:
            from rich.console import Console

            terminal = self.is_terminal
            self._console = Console(
                file=self.file,
                stderr=self._stderr,
                highlight=False,
                force_terminal=terminal,
                soft_wrap=not terminal,
                width=None if terminal else 200,
            )
        return self._console

    def line(self, *segments: tuple[str, str], soft_wrap: bool = False) -> None:
        """Print one line made of ``(text, rich style)`` segments, their text already :func:`printable`.

        A terminal draws it (``soft_wrap``: never hard-wrapped at the terminal's width); elsewhere the text is written.
        """
        if self.is_terminal:
            from rich.text import Text

            self.rich.print(Text.assemble(*segments), soft_wrap=soft_wrap)
        else:
            self.write("".join([text for text, _ in segments]) + "\n")

    def write(self, text: str) -> None:
        """Write ``text`` to the stream as is, at once (what is printed around it keeps its order)."""
        self.file.write(text)
        self.file.flush()


def out_console() -> Console:
    """The rich console for results (stdout)."""
    return Output().rich


def err_console() -> Console:
    """The rich console for notices and errors (stderr)."""
    return Output(stderr=True).rich


def fail(message: str, code: int = USAGE) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    # a message may quote a repository's config or a provider's words: shown as escapes, never read as markup
    Output(stderr=True).line(("error: ", "red bold"), (printable(message, lines=True), ""), soft_wrap=True)
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
    output = Output(stderr=True)
    for line in notices:
        output.line(("warning: ", "yellow"), (printable(line), ""), soft_wrap=True)

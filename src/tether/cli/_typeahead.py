"""Keys typed while a turn runs in the interactive session: kept for the next prompt, never echoed into the live view.

In its normal (cooked) mode the terminal echoes every key the moment it is typed: text typed during a turn landed on
the spinner's line and left a torn frame in the scrollback, and what was left unread became the answer of the next
approval prompt. So while a turn runs, :class:`TypeAhead` turns the terminal's echo and line editing off (signals
stay on: Ctrl-C still cancels the turn) and reads what is typed, every frame of the live view, into its own buffer,
editing it as a line editor would (Backspace, Ctrl-U, Ctrl-W; arrow keys and other escape sequences are dropped).
The next prompt starts with that text (``Repl.draft``): Enter sends it, or edit it first.

An approval or a question reads the terminal itself: :meth:`TypeAhead.paused` takes what was typed before it into
the buffer, then gives the terminal back its normal mode, so the prompt reads only what is typed after it appears.
The terminal's mode is restored when the turn ends, when it fails, and before a second Ctrl-C exits the process
(:func:`restore_terminals`).
"""

from __future__ import annotations

import codecs
import os
import select
import sys
import termios
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

__all__ = ["TypeAhead", "restore_terminals"]

_ACTIVE: list[TypeAhead] = []


def restore_terminals() -> None:
    """Give every terminal a running turn took over its normal mode back (before the process exits at once)."""
    for typed in list(_ACTIVE):
        typed.stop()


class TypeAhead:
    """The keys typed on ``fd`` (default: stdin) while a turn runs (see the module docstring).

    Nothing happens when ``fd`` is not a terminal: :attr:`text` stays empty.
    """

    def __init__(self, fd: int | None = None) -> None:
        self._given = fd
        self._fd = -1
        self._saved: list[Any] | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lines: list[str] = [""]
        self._escape = ""
        self._paused = False

    @property
    def text(self) -> str:
        """What was typed, line by line (the Enter a person pressed last is not kept: the prompt waits for it)."""
        return "\n".join(self._lines).strip("\n")

    def start(self) -> None:
        """Turn the terminal's echo and line editing off and start keeping what is typed."""
        try:
            self._fd = sys.stdin.fileno() if self._given is None else self._given
            saved = termios.tcgetattr(self._fd)
        except (termios.error, OSError, ValueError, AttributeError):
            return  # not a terminal (or no stdin at all)
        quiet = [*saved]
        quiet[3] = saved[3] & ~(termios.ECHO | termios.ICANON)  # lflag; ISIG stays: Ctrl-C is still SIGINT
        quiet[6] = [*saved[6]]
        quiet[6][termios.VMIN] = 1
        quiet[6][termios.VTIME] = 0
        termios.tcsetattr(self._fd, termios.TCSANOW, quiet)  # TCSANOW: what is already typed stays to be read
        self._saved = saved
        _ACTIVE.append(self)

    def poll(self) -> None:
        """Read what has been typed since the last poll (never waits); nothing while :meth:`paused`: what is typed
        then is the prompt's to read (the live view's frames poll on while an approval waits for its answer)."""
        if self._saved is None or self._paused:
            return
        while select.select([self._fd], [], [], 0)[0]:
            try:
                chunk = os.read(self._fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.feed(chunk)

    @contextmanager
    def paused(self) -> Generator[None]:
        """The terminal in its normal mode while a prompt reads it; what was typed before is kept, not answered."""
        saved = self._saved
        if saved is None:
            yield
            return
        self.poll()
        quiet = termios.tcgetattr(self._fd)
        termios.tcsetattr(self._fd, termios.TCSANOW, saved)
        self._paused = True
        try:
            yield
        finally:
            self._paused = False
            if self._saved is saved:
                termios.tcsetattr(self._fd, termios.TCSANOW, quiet)

    def stop(self) -> None:
        """Keep what is left to read and give the terminal its normal mode back."""
        saved = self._saved
        if saved is None:
            return
        self.poll()
        self._saved = None
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        try:
            termios.tcsetattr(self._fd, termios.TCSANOW, saved)
        except (termios.error, OSError):
            pass

    def feed(self, data: bytes) -> None:
        """Edit the buffer with ``data`` as a line editor would (see the module docstring)."""
        for char in self._decoder.decode(data):
            if self._escape:
                self._escape += char
                # ESC [ ... final byte (@ to ~), ESC O x, or ESC x: a key the buffer does not edit with
                if (self._escape[1:2] == "[" and len(self._escape) > 2 and "@" <= char <= "~") or (
                    self._escape[1:2] != "[" and (self._escape[1:2] != "O" or len(self._escape) > 2)
                ):
                    self._escape = ""
                continue
            if char == "\x1b":
                self._escape = char
            elif char in ("\r", "\n"):
                self._lines.append("")
            elif char in ("\x7f", "\x08"):
                if self._lines[-1]:
                    self._lines[-1] = self._lines[-1][:-1]
                elif len(self._lines) > 1:
                    self._lines.pop()
            elif char == "\x15":  # Ctrl-U: the line so far
                self._lines[-1] = ""
            elif char == "\x17":  # Ctrl-W: the word before
                self._lines[-1] = self._lines[-1].rstrip(" ").rpartition(" ")[0] + (
                    " " if " " in self._lines[-1].rstrip(" ") else ""
                )
            elif char == "\t" or char >= " ":
                self._lines[-1] += char

"""Reading the interactive session's input with prompt-toolkit: line editing, history, Tab for slash commands.

prompt-toolkit owns the terminal only while the prompt is shown. A turn runs after the prompt has returned (the
terminal back in its normal mode), so the live view and the approval prompts of ``_approve`` read and write the
terminal exactly as ``tether run`` does, and ^C during a turn is SIGINT again (``_turn`` cancels the turn on it).

Keys at the prompt: Enter sends, Esc Enter (or Alt-Enter) adds a line, Ctrl-C clears a line that has text and
otherwise raises ``KeyboardInterrupt`` (the session asks for a second one to exit), Ctrl-D on an empty line raises
``EOFError`` (exit).

The history file (``<data dir>/repl-history``) is the user's prompts: created ``0600`` (its mode tightened if it was
looser), never opened through a symlink, and only a regular file is read (a FIFO planted there cannot block the
start). A history that cannot be read or written costs the history, never the session.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import History
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

__all__ = ["HISTORY_FILE", "HistoryFile", "prompt_session"]

HISTORY_FILE = "repl-history"

_MAX_READ = 1 << 20
"""The most bytes of history read at start (the newest end of the file)."""


class HistoryFile(History):
    """Prompts kept in a file (prompt-toolkit's ``FileHistory`` format), opened without following symlinks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.broken: str | None = None
        """Why the history could not be read or written (shown once by the session); ``None``: it works."""
        super().__init__()

    def load_history_strings(self) -> Iterable[str]:
        """The stored prompts, newest first (runs in prompt-toolkit's loader thread)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return []
        except OSError as exc:
            self.broken = f"cannot read {self.path}: {exc.strerror or exc}"
            return []
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                self.broken = f"{self.path} is not a regular file"
                return []
            file.seek(max(0, info.st_size - _MAX_READ))
            data = file.read(_MAX_READ).decode("utf-8", errors="replace")
        entries: list[str] = []
        lines: list[str] = []
        for line in data.split("\n"):
            if line.startswith("+"):
                lines.append(line[1:])
            elif lines:
                entries.append("\n".join(lines))
                lines = []
        if lines:
            entries.append("\n".join(lines))
        return reversed(entries)

    def store_string(self, string: str) -> None:
        """Append one prompt (a few bytes, written where prompt-toolkit calls it)."""
        if self.broken is not None:
            return
        body = f"\n# {datetime.now()}\n" + "".join(f"+{line}\n" for line in string.split("\n"))
        try:
            fd = os.open(
                self.path,
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                0o600,
            )
        except OSError as exc:
            self.broken = f"cannot write {self.path}: {exc.strerror or exc}"
            return
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.broken = f"{self.path} is not a regular file"
                return
            if info.st_mode & 0o077:
                os.fchmod(fd, 0o600)
            os.write(fd, body.encode("utf-8", errors="backslashreplace"))
        except OSError as exc:
            self.broken = f"cannot write {self.path}: {exc.strerror or exc}"
        finally:
            os.close(fd)


class _Commands(Completer):
    """Tab completes a slash command's name (the first word of a line that starts with ``/``)."""

    def __init__(self, names: Sequence[str]) -> None:
        self._names = names

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text:
            return
        for name in self._names:
            if name.startswith(text):
                yield Completion(name, start_position=-len(text))


def _keys() -> KeyBindings:
    keys = KeyBindings()

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:  # pyright: ignore[reportUnusedFunction] (registered)
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    @keys.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:  # pyright: ignore[reportUnusedFunction] (registered)
        event.current_buffer.insert_text("\n")

    return keys


def prompt_session(history: HistoryFile, commands: Sequence[str]) -> PromptSession[str]:
    """The prompt of the interactive session (call :meth:`PromptSession.prompt_async` for each input)."""
    return PromptSession[str](
        history=history,
        key_bindings=_keys(),
        completer=_Commands(commands),
        complete_while_typing=False,
        enable_history_search=False,
        mouse_support=False,
    )

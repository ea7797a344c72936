"""What ``tether run`` sends as the user's input: the prompt argument, text piped on stdin, and ``-f`` files.

* No prompt argument (or ``-``) and stdin is not a terminal: stdin is the prompt.
* A prompt argument and text piped on stdin: the stdin text is appended to the prompt after a newline, as OpenCode's
  ``run`` does (``git diff | tether run "review this"``). Stdin is read then only when it is a pipe or a file: an
  inherited terminal, socket or ``/dev/null`` is never waited on.
* ``-f FILE`` (repeatable): a text file becomes a text part naming its path; an image (PNG, JPEG, GIF, WebP) or a
  PDF becomes a file part (the providers send images as images and PDFs as documents). Paths are resolved against
  the current directory.

Everything read here is outside text: undecodable bytes become visible escapes (:func:`tether.storable.visible`),
never a failed write. Sizes are bounded (:data:`STDIN_LIMIT`, :data:`TEXT_FILE_LIMIT`, :data:`BINARY_FILE_LIMIT`);
what is over a limit is refused with one line saying so, never cut silently.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from ..content import Content, File, Text
from ..errors import UsageError
from ..storable import visible

__all__ = [
    "BINARY_FILE_LIMIT",
    "BINARY_MIMES",
    "STDIN_LIMIT",
    "TEXT_FILE_LIMIT",
    "attach_files",
    "compose_prompt",
    "read_stdin",
    "stdin_is_piped",
]

STDIN_LIMIT = 1024 * 1024
"""The most bytes read from stdin (1 MiB)."""
TEXT_FILE_LIMIT = 1024 * 1024
"""The largest text file ``-f`` attaches (1 MiB)."""
BINARY_FILE_LIMIT = 10 * 1024 * 1024
"""The largest image or PDF ``-f`` attaches (10 MiB: base64 makes a request about a third larger)."""

BINARY_MIMES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
}
"""The file types attached as file parts, by suffix; any other file must be text."""


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB"


def _decode(raw: bytes) -> str:
    return visible(raw.decode("utf-8", "surrogateescape"))


def stdin_is_piped(stream: BinaryIO | None = None) -> bool:
    """Whether stdin is a pipe or a regular file (something that ends), not a terminal, socket or device."""
    try:
        fd = (stream or sys.stdin.buffer).fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, ValueError, OSError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def read_stdin(stream: BinaryIO | None = None, limit: int = STDIN_LIMIT) -> str:
    """All of stdin as text (at most ``limit`` bytes).

    Raises:
        UsageError: stdin holds more than ``limit`` bytes.
    """
    source = stream or sys.stdin.buffer
    raw = source.read(limit + 1)
    if len(raw) > limit:
        raise UsageError(
            f"stdin holds more than {_size(limit)}: pass a shorter prompt, or attach large text with -f FILE "
            "(a text file up to 1 MiB)"
        )
    return _decode(raw)


def compose_prompt(argument: str | None, stdin: str | None) -> str:
    """The prompt text from the argument (``None`` or ``-``: read from stdin) and the piped stdin text.

    Raises:
        UsageError: there is no prompt at all.
    """
    if argument is None or argument == "-":
        text = stdin or ""
        if not text.strip():
            source = "stdin was empty" if stdin is not None else "stdin is a terminal or closed"
            raise UsageError(
                f'no prompt: pass one (tether run "fix the failing test") or pipe it on stdin ({source})'
            )
        return text
    if stdin and stdin.strip():
        return f"{visible(argument)}\n{stdin}"
    return visible(argument)


def _display(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def attach_files(paths: Sequence[Path], cwd: Path) -> list[Content]:
    """The content parts of ``-f`` files, in the order given.

    Raises:
        UsageError: a file is missing, not a regular file, unreadable, too large, or binary of a type that is not
            attached (only images and PDFs are).
    """
    parts: list[Content] = []
    for given in paths:
        path = given.expanduser()
        path = path if path.is_absolute() else cwd / path
        shown = _display(path, cwd)
        try:
            info = path.stat()
        except FileNotFoundError:
            raise UsageError(f"-f {visible(str(given))}: no such file") from None
        except OSError as exc:
            raise UsageError(f"-f {visible(str(given))}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"-f {visible(str(given))}: not a regular file")
        mime = BINARY_MIMES.get(path.suffix.lower())
        limit = BINARY_FILE_LIMIT if mime is not None else TEXT_FILE_LIMIT
        if info.st_size > limit:
            raise UsageError(
                f"-f {visible(str(given))}: {info.st_size:,} bytes, over the {_size(limit)} limit"
            )
        try:
            with path.open("rb") as handle:
                raw = handle.read(limit + 1)
        except OSError as exc:
            raise UsageError(f"-f {visible(str(given))}: {exc.strerror or exc}") from None
        if len(raw) > limit:  # grew since stat
            raise UsageError(f"-f {visible(str(given))}: over the {_size(limit)} limit")
        if mime is not None:
            parts.append(File.from_bytes(raw, mime=mime, name=visible(path.name)))
            continue
        if b"\0" in raw:
            raise UsageError(
                f"-f {visible(str(given))}: a binary file; attach text files, images "
                f"({', '.join(sorted(s for s in BINARY_MIMES if s != '.pdf'))}) or PDFs"
            )
        body = _decode(raw)
        end = "" if body.endswith("\n") else "\n"
        parts.append(Text(f'<file path="{visible(shown)}">\n{body}{end}</file>'))
    return parts

"""Safe file mutation: text decoding with BOM and line-ending awareness, write-if-unchanged, atomic replace.

Writes go to a temporary file in the target's directory, get the target's mode, and are renamed over the target,
so a reader never sees a half-written file. ``write_if_unchanged`` first compares the target's current bytes with
the bytes the tool read after approval; a difference means someone else changed the file in between, and the write
is refused with a message the model can act on. (A change landing between that comparison and the rename is not
detected: the window is one ``stat``/``read`` long and no portable compare-and-swap on file content exists.)

The synchronous ``*_sync`` functions are for worker threads; the async wrappers run them there (law 9).
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread

from ..errors import ToolFailure

__all__ = [
    "BOM",
    "FILE_CHANGED_MESSAGE",
    "TextFile",
    "adapt_line_endings",
    "decode_text",
    "encode_text",
    "line_ending",
    "read_bytes",
    "read_bytes_sync",
    "write_bytes_sync",
    "write_if_unchanged",
    "write_if_unchanged_sync",
]

BOM = b"\xef\xbb\xbf"
FILE_CHANGED_MESSAGE = "File changed after permission approval. Read it again before editing."


@dataclass(frozen=True, kw_only=True, slots=True)
class TextFile:
    """Decoded text: ``text`` without the BOM, line endings untouched; ``bom`` says whether one was present."""

    text: str
    bom: bool


def decode_text(raw: bytes) -> TextFile:
    """Decode UTF-8 bytes, splitting off a leading BOM.

    Raises:
        UnicodeDecodeError: the bytes are not valid UTF-8.
    """
    if raw.startswith(BOM):
        return TextFile(text=raw[len(BOM) :].decode("utf-8"), bom=True)
    return TextFile(text=raw.decode("utf-8"), bom=False)


def encode_text(text: str, *, bom: bool) -> bytes:
    """Encode ``text`` as UTF-8, with a BOM when ``bom`` (never two: a BOM already in ``text`` is kept once)."""
    if text.startswith("\ufeff"):
        text = text[1:]
        bom = True
    data = text.encode("utf-8")
    return BOM + data if bom else data


def line_ending(text: str) -> str:
    """The file's line ending: CRLF if it contains any ``\\r\\n``, else LF."""
    return "\r\n" if "\r\n" in text else "\n"


def adapt_line_endings(new: str, old: str | None) -> str:
    """Give ``new`` the CRLF style of ``old`` when ``old`` used CRLF and ``new`` is plain LF text."""
    if old is None or line_ending(old) != "\r\n" or "\r" in new:
        return new
    return new.replace("\n", "\r\n")


def _read_current(path: Path) -> tuple[bytes | None, os.stat_result | None]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        raise (
            IsADirectoryError(f"Not a regular file: {path}")
            if stat.S_ISDIR(st.st_mode)
            else OSError(f"Not a regular file: {path}")
        )
    return path.read_bytes(), st


def write_bytes_sync(path: Path, data: bytes, *, exclusive: bool = False, make_parents: bool = True) -> bool:
    """Atomically replace (or create) ``path`` with ``data``, keeping an existing file's mode.

    Returns whether the file existed before. With ``exclusive`` the file must not exist (checked atomically by
    linking the temporary file into place).

    Raises:
        FileExistsError: ``exclusive`` and the file exists.
        OSError: the write failed (the temporary file is removed).
    """
    parent = path.parent
    if make_parents:
        parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    tmp = parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # New files get 0o666 minus the umask, like any ordinary create; existing files keep their exact mode.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        if exclusive:
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return mode is not None


def write_if_unchanged_sync(path: Path, expected: bytes | None, data: bytes) -> None:
    """Write ``data`` to ``path`` only if its current bytes equal ``expected`` (``None``: it must not exist).

    Raises:
        ToolFailure: the file changed since it was read (``FILE_CHANGED_MESSAGE``).
        OSError: reading or writing failed.
    """
    current, _ = _read_current(path)
    if current != expected:
        raise ToolFailure(FILE_CHANGED_MESSAGE)
    try:
        write_bytes_sync(path, data, exclusive=expected is None)
    except FileExistsError:
        raise ToolFailure(FILE_CHANGED_MESSAGE) from None


async def write_if_unchanged(path: Path, expected: bytes | None, data: bytes) -> None:
    """Async :func:`write_if_unchanged_sync` (runs in a worker thread).

    Raises:
        ToolFailure: the file changed since it was read.
        OSError: reading or writing failed.
    """
    await anyio.to_thread.run_sync(write_if_unchanged_sync, path, expected, data)


def read_bytes_sync(path: Path) -> bytes | None:
    """The bytes of a regular file, or ``None`` when it does not exist (blocking: for worker threads).

    Raises:
        IsADirectoryError: the path is a directory.
        OSError: the path is not a regular file or cannot be read.
    """
    current, _ = _read_current(path)
    return current


async def read_bytes(path: Path) -> bytes | None:
    """Async :func:`read_bytes_sync` (runs in a worker thread).

    Raises:
        IsADirectoryError: the path is a directory.
        OSError: the path is not a regular file or cannot be read.
    """
    return await anyio.to_thread.run_sync(read_bytes_sync, path)

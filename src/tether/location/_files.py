"""Safe file mutation: text decoding with BOM and line-ending awareness, write-if-unchanged, atomic replace.

Every operation acts on the canonical path through ``_dirfd`` (each directory opened relative to the one before,
never following a symlink; a component swapped for a symlink since the path was resolved fails the call and
nothing is written), and every mutation holds the file's lock from ``_locks`` (one call at a time per file, in this
process and across tether processes).

Writes go to a temporary file in the target's directory, get the target's mode, and are renamed over the target,
so a reader never sees a half-written file. ``write_if_unchanged`` first compares the target's current bytes with
the bytes the tool read after approval; a difference means someone else changed the file in between, and the write
is refused with a message the model can act on. The tools hold :func:`lock_files` around their whole read →
compare → write, so another tether call can never land in between (parallel edits of one file apply one after the
other); the compare catches writers that do not take the lock (an editor, a shell command), except in the window of
one read between the compare and the rename (no portable compare-and-swap on file content exists).

The synchronous ``*_sync`` functions are for worker threads; the async wrappers run them there (law 9). Paths must be
canonical (:attr:`ResolvedPath.path`): a path through a symlink is refused like a swapped one.
"""

from __future__ import annotations

import stat
from pathlib import Path

import anyio.to_thread

from .._record import record
from ..errors import ToolFailure
from ._dirfd import open_for_reading, open_target
from ._locks import lock_files

__all__ = [
    "BOM",
    "FILE_CHANGED_MESSAGE",
    "TextFile",
    "adapt_line_endings",
    "check_path_sync",
    "decode_text",
    "encode_text",
    "line_ending",
    "open_for_reading_sync",
    "read_bytes",
    "read_bytes_sync",
    "remove_if_unchanged_sync",
    "write_bytes_sync",
    "write_if_unchanged",
    "write_if_unchanged_sync",
]

BOM = b"\xef\xbb\xbf"
FILE_CHANGED_MESSAGE = "File changed after permission approval. Read it again before editing."


@record
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


def write_bytes_sync(path: Path, data: bytes, *, exclusive: bool = False, make_parents: bool = True) -> bool:
    """Atomically replace (or create) ``path`` with ``data``, keeping an existing file's mode.

    Returns whether the file existed before. With ``exclusive`` the file must not exist (checked atomically by
    linking the temporary file into place). Holds the file's lock.

    Raises:
        ToolFailure: a directory of the path (or the file) is now a symlink; nothing was written.
        FileExistsError: ``exclusive`` and the file exists.
        FileNotFoundError: not ``make_parents`` and the parent directory does not exist.
        IsADirectoryError: the path is a directory.
        OSError: the write failed (the temporary file is removed).
    """
    with lock_files([path]), open_target(path) as target:
        if not make_parents and target.missing:
            raise FileNotFoundError(f"No such directory: {path.parent.as_posix()}")
        st = target.status()
        target.write(data, mode=None if st is None else stat.S_IMODE(st.st_mode), exclusive=exclusive)
    return st is not None


def write_if_unchanged_sync(path: Path, expected: bytes | None, data: bytes) -> None:
    """Write ``data`` to ``path`` only if its current bytes equal ``expected`` (``None``: it must not exist).

    Holds the file's lock (re-entrant: callers hold it around their own read to make read → write atomic).

    Raises:
        ToolFailure: the file changed since it was read (``FILE_CHANGED_MESSAGE``), or a directory of the path (or
            the file) is now a symlink; nothing was written.
        OSError: reading or writing failed.
    """
    with lock_files([path]), open_target(path) as target:
        found = target.read()
        if (None if found is None else found[0]) != expected:
            raise ToolFailure(FILE_CHANGED_MESSAGE)
        mode = None if found is None else stat.S_IMODE(found[1].st_mode)
        try:
            target.write(data, mode=mode, exclusive=found is None)
        except FileExistsError:
            raise ToolFailure(FILE_CHANGED_MESSAGE) from None


async def write_if_unchanged(path: Path, expected: bytes | None, data: bytes) -> None:
    """Async :func:`write_if_unchanged_sync` (runs in a worker thread).

    Raises:
        ToolFailure: the file changed since it was read, or a directory of the path is now a symlink.
        OSError: reading or writing failed.
    """
    await anyio.to_thread.run_sync(write_if_unchanged_sync, path, expected, data)


def remove_if_unchanged_sync(path: Path, expected: bytes) -> None:
    """Remove ``path`` only if its current bytes equal ``expected``. Holds the file's lock.

    Raises:
        ToolFailure: the file changed (or vanished) since it was read, or a directory of the path (or the file)
            is now a symlink; nothing was removed.
        OSError: reading or removing failed.
    """
    with lock_files([path]), open_target(path) as target:
        found = target.read()
        if found is None or found[0] != expected:
            raise ToolFailure(FILE_CHANGED_MESSAGE)
        target.unlink()


def check_path_sync(path: Path) -> None:
    """Check that no existing directory of the canonical ``path``, nor the file, is a symlink now. Blocking.

    For a caller about to change several files (``apply_patch``): checking them all first means a swapped directory
    fails the whole call before its first write.

    Raises:
        ToolFailure: a directory of the path (or the file) is now a symlink or not a directory.
        OSError: a directory could not be opened.
    """
    with open_target(path) as target:
        try:
            target.status()
        except IsADirectoryError:
            pass  # not a change: the operation that meets it says what is wrong


def open_for_reading_sync(path: Path) -> int | None:
    """A read-only descriptor of the canonical ``path`` (a file or a directory), or ``None`` when it does not exist.

    Blocking. The caller owns (and closes) the descriptor; what it is, it learns with ``os.fstat``.

    Raises:
        ToolFailure: a directory of the path (or the file) is now a symlink ("Nothing was read.").
        OSError: the path could not be opened.
    """
    return open_for_reading(path)


def read_bytes_sync(path: Path) -> bytes | None:
    """The bytes of a regular file, or ``None`` when it does not exist (blocking: for worker threads).

    Raises:
        ToolFailure: a directory of the path (or the file) is now a symlink.
        IsADirectoryError: the path is a directory.
        OSError: the path is not a regular file or cannot be read.
    """
    with open_target(path) as target:
        found = target.read()
    return None if found is None else found[0]


async def read_bytes(path: Path) -> bytes | None:
    """Async :func:`read_bytes_sync` (runs in a worker thread).

    Raises:
        ToolFailure: a directory of the path (or the file) is now a symlink.
        IsADirectoryError: the path is a directory.
        OSError: the path is not a regular file or cannot be read.
    """
    return await anyio.to_thread.run_sync(read_bytes_sync, path)

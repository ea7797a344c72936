"""The managed tool-output store: the one bounding boundary (law 6) and retention of full outputs.

``bound`` measures the text parts of a tool's content (media passes unchanged). Over the limits it first retains the
full text in ``<dir>/<session>/tool_<ascending id>`` (exclusive create), then replaces the text with a head + tail
preview around a marker naming that file. Structured output whose JSON exceeds 16 KiB is retained the same way and replaced
by ``{"_truncated": true, "_bytes": n, "_outputPath": p}``. If retention fails, :class:`OutputStoreError` is raised:
the call fails, it is never a lossy success.

Each session's outputs live in their own directory (:meth:`OutputStore.session_directory`): the runtime lets a
session read its own directory without asking, while any other path under the data directory (another session's
outputs, another project's, the store) asks ``external_directory`` like any path outside the project. Output retained
without a session goes to ``<dir>/tool_<id>`` and has no exemption.

Retained outputs are private: directories are created 0700 and files 0600 (``O_CREAT|O_EXCL|O_NOFOLLOW``), and a
directory another user could have planted or can write into is refused (:meth:`OutputStore.open_sync`), since an
``output_dir`` may be shared (docs/postgres.md) and outputs hold file contents and command output.

Writes stream in chunks, so bounding a 1 GiB text keeps memory growth to a few chunk sizes. Files older than the
retention period are removed by :meth:`OutputStore.cleanup` (run once at start and hourly by the runtime).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.to_thread

from .. import ids
from .._record import record
from .._regex import lazy
from ..content import Content, File, Text
from ..errors import OutputStoreError
from ._preview import bounded_preview, utf8_len

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "MAX_STRUCTURED_BYTES",
    "RETENTION_SECONDS",
    "Bounded",
    "OutputStore",
    "marker_for",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 51_200
MAX_STRUCTURED_BYTES = 16_384
RETENTION_SECONDS = 7 * 24 * 3600
_CHUNK_CHARS = 1 << 20


_plain_id = lazy(r"[A-Za-z0-9_-]{1,96}")


_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _refusal(path: Path, info: os.stat_result) -> str | None:
    """Why a directory with ``info`` cannot hold retained outputs (``None``: it can)."""
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"
    if info.st_uid not in (0, os.getuid()):
        return f"{path} belongs to another user (uid {info.st_uid}), who could read or replace the outputs"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        return (
            f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}) without the sticky bit, so "
            "they could replace the outputs"
        )
    return None


def _component(session: str) -> str:
    """A directory name for ``session``: the id itself when it is plain (``ses_...``), else a digest of it.

    A session id comes from whoever embeds the runtime; a ``/`` or ``..`` in it must not pick the directory.
    """
    if _plain_id().fullmatch(session) and not session.startswith("tool_"):
        return session
    return "session-" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def marker_for(path: Path | str) -> str:
    """The marker placed between head and tail of a bounded preview."""
    return f"... output truncated; full content saved to {path} ..."


@record
class Bounded:
    """The result of bounding: content within limits, the (possibly replaced) output, and retained file paths."""

    content: tuple[Content, ...]
    output: Any
    output_paths: tuple[str, ...] = field(default=())

    @property
    def truncated(self) -> bool:
        return bool(self.output_paths)


class OutputStore:
    """Bounds tool content and retains full outputs under ``directory``.

    Args:
        directory: where managed files live (``<data>/tool-output``); created on first write.
        max_lines: line limit of model content (default 2,000).
        max_bytes: UTF-8 byte limit of model content (default 51,200).
        retention: seconds a managed file is kept (default 7 days).
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        retention: float = RETENTION_SECONDS,
    ) -> None:
        self.directory = Path(directory)
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.retention = retention
        self._opened = False

    def open_sync(self) -> None:
        """Create the directory (0700) if it is missing, and check that only this user can write into it. Blocking;
        done by the runtime at start, else at the first retained output.

        Raises:
            OutputStoreError: the directory cannot be created, is not a directory, belongs to another user (root
                excepted), or is writable by group or others without the sticky bit (``chmod 700`` or ``1777``).
        """
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = os.stat(self.directory)
        except OSError as exc:
            raise OutputStoreError(f"Cannot use the tool output directory {self.directory}: {exc}") from exc
        why = _refusal(self.directory, info)
        if why is not None:
            raise OutputStoreError(
                f"Refusing the tool output directory: {why}. Use a directory of your own (chmod 700), or a shared "
                "one with the sticky bit (chmod 1777), e.g. output_dir in tether.json."
            )
        self._opened = True

    async def open(self) -> None:
        """Async :meth:`open_sync`."""
        await anyio.to_thread.run_sync(self.open_sync)

    # -- measuring ---------------------------------------------------------------------------------------------------

    def fits(self, text: str) -> bool:
        """Whether ``text`` is within both limits (cheap for small text)."""
        return self._fits(text, text.count("\n") + 1)

    def _fits(self, text: str, lines: int) -> bool:
        if lines > self.max_lines:
            return False
        if len(text) * 4 <= self.max_bytes:
            return True
        return utf8_len(text) <= self.max_bytes

    def needs_bounding(self, content: Sequence[Content], output: Any = None) -> bool:
        """Whether :meth:`bound` would change anything (the fast path of settle)."""
        texts = [p.text for p in content if isinstance(p, Text)]
        text = texts[0] if len(texts) == 1 else "".join(texts)
        if not self.fits(text):
            return True
        return output is not None and _structured_len(output) > MAX_STRUCTURED_BYTES

    # -- retaining ---------------------------------------------------------------------------------------------------

    def session_directory(self, session: str | None) -> Path:
        """Where the outputs of ``session`` are retained (``<dir>/<session>``; ``<dir>`` itself for ``None``)."""
        return self.directory if session is None else self.directory / _component(session)

    def open_managed(self, session: str | None = None) -> tuple[Path, IO[bytes]]:
        """Create a new managed file (exclusive) and return its path and a binary handle (for streaming producers).

        Args:
            session: the session the output belongs to (its file goes to :meth:`session_directory`).

        Raises:
            OutputStoreError: the directory or file cannot be created.
        """
        if not self._opened:
            try:
                self.open_sync()
            except OutputStoreError as exc:
                raise OutputStoreError(f"Failed to write tool output: {exc}") from exc
        directory = self.session_directory(session)
        path = directory / ids.ascending("tool")
        try:
            try:
                return path, _create(directory, path, session=session is not None)
            except FileNotFoundError:  # a cleanup removed the (empty) directory just now: make it again
                self.open_sync()
                return path, _create(directory, path, session=session is not None)
        except OSError as exc:
            raise OutputStoreError(f"Failed to write tool output: {exc}") from exc

    def retain_text(self, text: str, session: str | None = None) -> Path:
        """Write ``text`` in full to a new managed file of ``session``, streaming in chunks.

        Raises:
            OutputStoreError: the write failed (the partial file is removed).
        """
        path, handle = self.open_managed(session)
        try:
            with handle:
                for start in range(0, len(text), _CHUNK_CHARS):
                    handle.write(text[start : start + _CHUNK_CHARS].encode("utf-8", "surrogatepass"))
        except OSError as exc:
            path.unlink(missing_ok=True)
            raise OutputStoreError(f"Failed to write tool output: {exc}") from exc
        return path

    # -- bounding ----------------------------------------------------------------------------------------------------

    def bound_sync(
        self, content: Sequence[Content], output: Any = None, *, session: str | None = None
    ) -> Bounded:
        """Bound ``content`` (and structured ``output``) to the limits, retaining what is cut for ``session``. Blocking.

        Raises:
            OutputStoreError: retention failed; nothing lossy is returned.
        """
        paths: list[str] = []
        new_output = output
        if output is not None:
            encoded = json.dumps(output, separators=(",", ":"), ensure_ascii=False)
            size = utf8_len(encoded)
            if size > MAX_STRUCTURED_BYTES:
                path = self.retain_text(encoded, session)
                paths.append(str(path))
                new_output = {"_truncated": True, "_bytes": size, "_outputPath": str(path)}
        texts = [p.text for p in content if isinstance(p, Text)]
        text = texts[0] if len(texts) == 1 else "".join(texts)
        lines = text.count("\n") + 1  # counted once: a large text is scanned for newlines only here
        if self._fits(text, lines):
            return Bounded(content=tuple(content), output=new_output, output_paths=tuple(paths))
        try:
            path = self.retain_text(text, session)
        except OutputStoreError:
            for p in paths:
                Path(p).unlink(missing_ok=True)
            raise
        paths.append(str(path))
        preview = bounded_preview(text, marker_for(path), self.max_lines, self.max_bytes, lines=lines)
        media = [p for p in content if isinstance(p, File)]
        return Bounded(content=(Text(preview), *media), output=new_output, output_paths=tuple(paths))

    async def bound(
        self, content: Sequence[Content], output: Any = None, *, session: str | None = None
    ) -> Bounded:
        """Async :meth:`bound_sync`: the fast path runs inline, retention runs in a worker thread (law 9)."""
        if not self.needs_bounding(content, output):
            return Bounded(content=tuple(content), output=output)
        return await anyio.to_thread.run_sync(lambda: self.bound_sync(content, output, session=session))

    # -- cleanup -----------------------------------------------------------------------------------------------------

    def cleanup_sync(self, now: float | None = None) -> int:
        """Remove managed files older than the retention period; return how many were removed. Errors are ignored.

        Walks ``<dir>`` and each session directory in it (never following symlinks); a session directory that has been
        empty since before the cutoff is removed too.
        """
        cutoff = (time.time() if now is None else now) - self.retention
        removed = _remove_old(self.directory, cutoff)
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return removed
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
                if not os.listdir(entry.path):
                    # Empty since before the cutoff (emptied by an earlier run): no session wrote there lately.
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.rmdir(entry.path)
                    continue
            except OSError:
                continue
            removed += _remove_old(entry.path, cutoff)
        return removed

    async def cleanup(self, now: float | None = None) -> int:
        """Async :meth:`cleanup_sync`."""
        return await anyio.to_thread.run_sync(self.cleanup_sync, now)

    async def run_cleanup(self, interval: float = 3600.0) -> None:
        """Clean up now and then every ``interval`` seconds, until cancelled."""
        while True:
            await self.cleanup()
            await anyio.sleep(interval)


def _create(directory: Path, path: Path, *, session: bool) -> IO[bytes]:
    """Create ``path`` (0600, exclusive, never through a symlink) in ``directory`` (for a ``session`` directory:
    made 0700 if missing, and refused unless it is this user's own directory, not a symlink or one another user
    planted in a shared ``output_dir``)."""
    if session:
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise OSError(f"{directory} is not a directory of this user's (a symlink or another user's)")
    return os.fdopen(os.open(path, _FILE_FLAGS, 0o600), "wb")


def _remove_old(directory: str | Path, cutoff: float) -> int:
    """Remove the ``tool_*`` files in ``directory`` modified before ``cutoff``; return how many."""
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.startswith("tool_"):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed


def _structured_len(output: Any) -> int:
    try:
        return utf8_len(json.dumps(output, separators=(",", ":"), ensure_ascii=False))
    except (TypeError, ValueError):
        return 0

"""What glob, grep and list share: the search directory checks and ripgrep's base flags."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

import anyio.to_thread

from ..errors import ToolFailure
from ..location import Location, ResolvedPath
from ._common import resolve_or_fail

__all__ = [
    "BASE_FLAGS",
    "DEFAULT_LIMIT",
    "GIT_EXCLUDES",
    "PathKind",
    "check_directory",
    "mtime",
    "path_kind",
    "search_root",
]

DEFAULT_LIMIT = 100
# --no-require-git: .gitignore applies even when the project is not (yet) a git repository.
BASE_FLAGS = ("--no-config", "--no-require-git")
# .git is never listed nor searched: the directory is not entered, and nothing under it matches. Pass these after any
# other --glob (ripgrep gives the later glob precedence).
GIT_EXCLUDES = ("--glob=!**/.git", "--glob=!**/.git/**")

PathKind = Literal[
    "missing",
    "directory",
    "file",
    "a FIFO",
    "a character device",
    "a block device",
    "a socket",
    "a special file",
]


async def search_root(location: Location, path: str | None) -> ResolvedPath:
    """Resolve a search path (default: the Location root) as a directory boundary.

    Raises:
        ToolFailure: the path cannot be resolved safely.
    """
    return await resolve_or_fail(location, path if path and path.strip() else ".", "directory")


def mtime(path: Path) -> float:
    """The modification time of ``path``, or 0 when it vanished meanwhile."""
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def path_kind(path: Path) -> PathKind:
    """Whether ``path`` is missing, a directory, a regular file, or which special file (blocking: one ``stat``).

    ripgrep given a FIFO or a device as its path would read it: until a writer closes it, or forever (``/dev/zero``).
    Its directory walks skip them (it searches regular files only and does not follow symlinks).
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


async def check_directory(resolved: ResolvedPath, original: str | None) -> None:
    """Fail unless the search path is an existing directory (the ``stat`` runs in a worker thread).

    Raises:
        ToolFailure: it does not exist or is not a directory.
    """
    shown = (original or ".").strip()
    kind = await anyio.to_thread.run_sync(path_kind, resolved.path)
    if kind == "missing":
        raise ToolFailure(f"Search path does not exist: {shown}")
    if kind != "directory":
        raise ToolFailure(f"Search path is not a directory: {shown}")

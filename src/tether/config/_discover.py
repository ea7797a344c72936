"""Finding the project a directory belongs to, and its config file.

From a subdirectory (``repo/pkg``) the project is the nearest directory above that holds a project marker (a
``.tether/`` directory, ``tether.json`` or ``tether.jsonc``), else the git root (a ``.git`` directory or file), else
the start directory itself. Its config and ``AGENTS.md`` then apply from anywhere inside it.

Walking up is where a stranger's file could be picked up (law 11: trust is granted, never assumed), so the walk
considers only directories that are the user's own and stops:

- at a directory that is world-writable (``/tmp``) or owned by another user: anyone could have planted the marker
  there, and nothing above it is considered either;
- at the git root: a ``.tether`` above the repository belongs to whatever contains the repository, not to it;
- at the home directory (never a project found by walking up: ``~/.tether`` may be data) and the filesystem root;
- at a marker that is owned by another user (planted in a group-writable directory); a ``.git`` is a marker here too,
  so a ``.git`` another user created in a shared directory does not make that directory the project (and the target
  of ``tether trust``).

The config file itself must be the user's own as well (:func:`foreign`): a file owned by another user, or one others
may write, is refused with a notice rather than read, so a teammate's ``tether.json`` dropped into a group-writable
project (beside the user's own ``.tether/``) never speaks for the user.

The start directory is the user's choice and is always the fallback: its own markers count as they did before the
walk existed. The user's config directory (``~/.config/tether``, whose ``tether.json`` is the user's own config) is
never a project marker.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import ConfigError
from ..paths import default_config_dir

__all__ = ["PROJECT_FILES", "find_project", "foreign", "project_file"]

PROJECT_FILES = (
    Path(".tether") / "tether.json",
    Path(".tether") / "tether.jsonc",
    Path("tether.json"),
    Path("tether.jsonc"),
)
"""Where a project's config may be, relative to its root; a project has at most one of them."""
_MARKERS = (".tether", "tether.json", "tether.jsonc")


def find_project(start: Path | str, *, uid: int | None = None) -> Path:
    """The root of the project that contains ``start`` (a real, absolute path); see the module docstring.

    This touches the filesystem: from async code call it through ``anyio.to_thread.run_sync``.

    Args:
        start: the directory a command runs in.
        uid: whose directories may be walked into (default: the effective user).
    """
    first = Path(os.path.realpath(os.path.abspath(os.fspath(start))))
    owner = os.geteuid() if uid is None else uid
    home = _real_home()
    config_dir = os.path.realpath(default_config_dir())
    current = first
    while True:
        if current != first and not _owned(current, owner):
            return first
        if str(current) != config_dir and _marked(current, owner):
            return current
        if _mine(current / ".git", owner):
            return current
        parent = current.parent
        if parent == current or parent == home or parent.parent == parent:
            return first  # the filesystem root and the home directory are never found by walking up
        current = parent


def project_file(
    root: Path, *, user_file: Path | None = None, refused: list[str] | None = None, uid: int | None = None
) -> Path | None:
    """The config file of the project at ``root``, or ``None`` when it has none.

    ``user_file`` (the user's own config) is not a project file even where it sits in the root (a command run in
    ``~/.config/tether``). A file that is not the user's own (:func:`foreign`) is left out, and a one-line notice
    saying why is appended to ``refused``.

    Raises:
        ConfigError: the project has two config files (which one applies would be a guess).
    """
    found = [root / name for name in PROJECT_FILES if os.path.lexists(root / name)]
    if user_file is not None:
        found = [path for path in found if not _same(path, user_file)]
    kept: list[Path] = []
    for path in found:
        why = foreign(path, uid=uid)
        if why is None:
            kept.append(path)
        elif refused is not None:
            refused.append(f"refused config file {path}: {why}; it is not read")
    found = kept
    if len(found) > 1:
        raise ConfigError(
            f"two config files: {found[0]} and {found[1]}; keep one (tether reads both spellings as JSONC)",
            file=str(found[1]),
        )
    return found[0] if found else None


def foreign(path: Path, *, uid: int | None = None) -> str | None:
    """Why the file at ``path`` is not the user's own, or ``None`` when it is (or does not exist).

    The user's own: owned (the link and what it leads to) by ``uid`` (default: the effective user) or by root, not
    writable by everyone, and not writable by its group unless the user owns it. Anyone else who may write the file
    chooses what it says.
    """
    owner = os.geteuid() if uid is None else uid
    try:
        link, info = path.lstat(), path.stat()
    except OSError:
        return None
    for found in (link, info):
        if found.st_uid not in (owner, 0):
            return f"it is owned by another user (uid {found.st_uid})"
    if info.st_mode & stat.S_IWOTH:
        return "anyone may write it"
    if info.st_uid != owner and info.st_mode & stat.S_IWGRP:
        return f"its group (gid {info.st_gid}) may write it"
    return None


def _mine(path: Path, owner: int) -> bool:
    """Whether ``path`` exists and is ``owner``'s (the entry itself: a link planted by another user is theirs)."""
    try:
        return path.lstat().st_uid == owner
    except OSError:
        return False


def _real_home() -> Path | None:
    try:
        return Path(os.path.realpath(Path.home()))
    except RuntimeError:  # no home directory known: nothing to stop at but the root
        return None


def _owned(directory: Path, owner: int) -> bool:
    """Whether ``directory`` is ``owner``'s and not writable by everyone (a sticky ``/tmp`` included)."""
    try:
        info = directory.stat()
    except OSError:
        return False
    return info.st_uid == owner and not info.st_mode & stat.S_IWOTH


def _marked(directory: Path, owner: int) -> bool:
    return any(_mine(directory / name, owner) for name in _MARKERS)


def _same(path: Path, other: Path) -> bool:
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False

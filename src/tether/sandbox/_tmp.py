"""The session temp directories of one sandbox: private, made on first use, removed when the runtime closes.

A session's commands see its directory as ``/tmp`` (bubblewrap) or ``$TMPDIR`` (Landlock). They live under one
parent per user in the system temp directory, a path that stays the same from run to run (the bash tool names it to
the model, and a tool description that changed per run would defeat the provider's prompt cache)::

    <tmp>/tether-sandbox-<uid>/        0700, this user's (a parent that is anything else is never used, see below)
        .lock                          flock'd while an owner registers a directory, a sweep runs or an owner closes
        .owner-<token>/                one per open :class:`SessionTemps` (one runtime), flock'd for its life,
                                       with an empty file named after each directory that owner uses
        <session id>/                  a session's directory (``mcp-<name>/`` for a sandboxed MCP server)

Several runtimes (processes) may use one session at once, so a directory goes when the last owner naming it closes.
An owner whose process died has left its lock free: :func:`sweep` (when a runtime starts) removes its entry and every
directory no live owner names. Nothing here follows a symlink: entries are checked with ``lstat``, opened with
``O_NOFOLLOW`` and removed with :func:`shutil.rmtree` (which never follows links inside); only directories of this
user are removed.

The parent's name is predictable, so another local user could make it first in a shared ``/tmp``: a parent that is
not a directory of this user with mode 0700 (a symlink, someone else's directory, one others may enter) is neither
used nor touched. The first private ``tether-sandbox-<uid>-*`` directory is used instead, else a new one made by
:func:`tempfile.mkdtemp` (atomic, random name, 0700); one warning says so. A temp directory others may write without
the sticky bit is refused (an entry of ours there could be renamed and replaced).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import secrets
import shutil
import stat
import tempfile
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

__all__ = ["SessionTemps", "sweep"]

_log = logging.getLogger("tether.sandbox")
_LOCK = ".lock"
_OWNER = ".owner-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _prefix() -> str:
    return f"tether-sandbox-{os.getuid()}"


def _private(path: Path) -> bool:
    """Whether ``path`` itself (never what a symlink names) is a directory of this user that only it may enter."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def _parents(base: Path) -> list[Path]:
    """This user's private parents in ``base``: the usual one, else the fallback ones (sorted)."""
    usual = base / _prefix()
    if _private(usual):
        return [usual]
    try:
        names = sorted(name for name in os.listdir(base) if name.startswith(_prefix() + "-"))
    except FileNotFoundError:
        return []
    return [base / name for name in names if _private(base / name)]


def choose_parent(base: Path) -> Path:
    """The parent of this user's session directories in ``base``, made when missing (see the module docstring).

    Raises:
        OSError: others may write ``base`` and it has no sticky bit, or nothing can be made there.
    """
    info = base.stat()
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX and info.st_uid != os.getuid():
        raise OSError(
            f"refusing to make the sandbox's temp directories in {base}: others may write it and it has no sticky "
            "bit; set TMPDIR to a directory of your own"
        )
    usual = base / _prefix()
    with contextlib.suppress(FileExistsError):
        usual.mkdir(mode=0o700)
    found = _parents(base)
    if found:
        return found[0]
    _log.warning(
        "sandbox: %s is not a private directory of this user (made by someone else?); not using it", usual
    )
    return Path(tempfile.mkdtemp(prefix=_prefix() + "-", dir=base))


@contextlib.contextmanager
def _locked(parent: Path) -> Generator[None]:
    fd = os.open(parent / _LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _open_up(top: str) -> None:
    """Make every directory below ``top`` this user's to write and enter again (links are not followed)."""
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            os.chmod(directory, 0o700)
            with os.scandir(directory) as entries:
                stack += [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]
        except OSError:
            continue


def _remove(path: Path) -> bool:
    """Remove the directory ``path`` (itself not a symlink, and this user's) and all in it; whether it was removed."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False
    failed: list[Any] = []
    shutil.rmtree(path, onerror=lambda *error: failed.append(error))
    if failed:
        # A command may leave directories it cannot write or enter (Go's module cache is read-only): open them up
        # once and try again.
        _open_up(str(path))
        shutil.rmtree(path, ignore_errors=True)
    gone = not os.path.lexists(path)
    if not gone:
        _log.warning("sandbox: could not remove %s: %s", path, failed[0][2][1] if failed else "unknown error")
    return gone


def _live(parent: Path) -> set[str]:
    """Remove the owner entries in ``parent`` whose process died; the names the live ones use. Under the lock."""
    used: set[str] = set()
    for name in os.listdir(parent):
        if not name.startswith(_OWNER):
            continue
        owner = parent / name
        try:
            fd = os.open(owner, _DIR_FLAGS)
        except OSError:  # a symlink, a file, gone: no owner of ours
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # held: that runtime is alive
            used.update(os.listdir(owner))
        else:
            _remove(owner)
        finally:
            os.close(fd)
    return used


def _sweep_parent(parent: Path) -> list[Path]:
    removed: list[Path] = []
    with _locked(parent):
        used = _live(parent)
        for name in sorted(os.listdir(parent)):
            path = parent / name
            if not name.startswith(".") and name not in used and _remove(path):
                removed.append(path)
    return removed


def sweep(base: Path) -> list[Path]:
    """Remove this user's session directories in ``base`` that no live runtime uses (their processes died). Blocking;
    errors are logged, never raised.

    Returns:
        The directories removed.
    """
    removed: list[Path] = []
    for parent in _parents(base):
        try:
            removed += _sweep_parent(parent)
        except OSError as exc:
            _log.warning("sandbox: could not sweep %s: %s", parent, exc)
    return removed


def _safe_name(name: str) -> str:
    return "".join(c for c in name if c.isalnum() or c in "_-") or "session"


class SessionTemps:
    """The session temp directories one runtime uses: its owner entry in the parent (see the module docstring).

    Thread-safe: the bash tool asks for a directory from worker threads.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self._parent: Path | None = None
        self._owner: Path | None = None
        self._fd: int | None = None
        self._names: set[str] = set()
        self._guard = threading.Lock()

    @property
    def parent(self) -> Path:
        """Where this runtime's session directories are (the usual path until :meth:`open` chose another)."""
        return self._parent or self.base / _prefix()

    def open(self) -> Path:
        """Choose the parent and register this runtime as an owner there (once; again after :meth:`close`). Blocking.

        Raises:
            OSError: no safe parent can be had (see :func:`choose_parent`).
        """
        with self._guard:
            return self._open()

    def _open(self) -> Path:
        if self._parent is not None:
            return self._parent
        parent = choose_parent(self.base)
        with _locked(parent):
            owner = parent / f"{_OWNER}{secrets.token_hex(8)}"
            owner.mkdir(mode=0o700)
            fd = os.open(owner, _DIR_FLAGS)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # new, and made under the lock: nobody holds it
        self._parent, self._owner, self._fd = parent, owner, fd
        return parent

    def session(self, session_id: str) -> Path:
        """The private directory of ``session_id`` (0700, made on first use, kept until :meth:`close`). Blocking.

        Raises:
            OSError: no safe parent can be had, or the directory's name is taken by something that is not a private
                directory of this user.
        """
        name = _safe_name(session_id)
        with self._guard:
            parent = self._open()
            path = parent / name
            if name in self._names:
                _make(path)  # again: someone may have removed it by hand
                return path
            assert self._owner is not None
            with _locked(parent):  # a sweep or a closing owner sees this claim before the directory exists
                claim = os.open(
                    self._owner / name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
                )
                os.close(claim)
                self._names.add(name)
                _make(path)
        return path

    def release(self, session_id: str) -> bool:
        """Drop this runtime's claim on ``session_id``'s directory (the session was deleted) and remove the directory
        when no other live runtime uses it. A long-running runtime (the server) otherwise keeps a deleted session's
        directory until it closes. Blocking.

        Returns:
            Whether the directory was removed.
        """
        name = _safe_name(session_id)
        with self._guard:
            parent, owner = self._parent, self._owner
            if parent is None or owner is None or name not in self._names:
                return False
            self._names.discard(name)
            try:
                with _locked(parent):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(owner / name)
                    return name not in _live(parent) and _remove(parent / name)
            except OSError as exc:  # the parent went (removed by hand): nothing is left to clean
                _log.warning("sandbox: could not remove the temp directory of %s: %s", session_id, exc)
                return False

    def close(self) -> list[Path]:
        """Remove this runtime's owner entry and the directories no other live runtime uses. Blocking.

        Returns:
            The directories removed.
        """
        with self._guard:
            parent, owner, fd, names = self._parent, self._owner, self._fd, self._names
            self._parent = self._owner = self._fd = None
            self._names = set()
            if parent is None or owner is None or fd is None:
                return []
            removed: list[Path] = []
            try:
                with _locked(parent):
                    _remove(owner)
                    used = _live(parent)
                    removed = [parent / name for name in sorted(names - used) if _remove(parent / name)]
            except OSError as exc:  # the parent went (removed by hand): nothing is left to clean
                _log.warning("sandbox: could not remove the temp directories in %s: %s", parent, exc)
            finally:
                os.close(fd)
            return removed


def _make(path: Path) -> None:
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if not _private(path):
            raise OSError(
                f"refusing the sandbox temp directory {path}: not a private directory of this user"
            ) from None

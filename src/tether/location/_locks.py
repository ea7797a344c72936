"""Serialized mutations: one file is changed by one call at a time, within a process and across tether processes.

:func:`lock_files` holds, for each canonical path, a re-entrant ``threading`` lock (other calls in this process) and
an advisory ``flock`` on a lock file (other tether processes), taken in sorted order and deduplicated, so two calls
locking overlapping sets of files (``apply_patch``) cannot deadlock. The file tools hold it around read → compare →
write, which makes that sequence atomic against every other tether call: parallel edits of one file each see the
previous edit's result, and none is lost. Writers that do not take the lock (an editor, a shell command) are still
caught by the compare in ``write_if_unchanged``.

Why a threading lock taken inside the worker thread rather than an anyio lock awaited in the event loop: the read,
the compare and the write run in one worker thread (law 9), and the ``flock`` is a blocking call that belongs in that
same thread; a threading lock also serializes callers on other event loops and synchronous library callers, which an
anyio lock (bound to one event loop) cannot. A waiting call occupies a worker thread, but it holds nothing another
call needs, so waiting never deadlocks; it checks for cancellation while it waits and after it gets the lock, so a
call cancelled while waiting leaves without writing.

Where the lock files live: ``$XDG_RUNTIME_DIR/tether-locks`` (the per-user directory meant for locks, removed at
logout), else ``locks`` in the data directory (``$TETHER_DATA_DIR``, else the platform's user data directory; made
``0700`` as the runtime makes it). Never a predictable name in the shared temp directory: another local user could
create ``/tmp/tether-<uid>-locks`` first, and every write of ours would fail (we cannot remove it from a sticky
``/tmp``). The directory is created ``0700`` and must be a real directory owned by the user: one planted by another
user is refused (the call fails), so nobody else can hold or swap our lock files. Not in the project (lock files
would show up in the user's repository); ``$XDG_RUNTIME_DIR`` first so that processes with different data
directories still exclude each other where it exists (without it they do through one data directory, and the
compare in ``write_if_unchanged`` catches the rest). One empty file per path ever mutated,
named by a hash of the canonical path; lock files are never deleted, since deleting one races with a process about
to lock it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import stat
import threading
import time
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from pathlib import Path

import anyio
import anyio.from_thread

from ..paths import default_data_dir

__all__ = ["lock_directory", "lock_file", "lock_files"]

_POLL_SECONDS = 0.05
"""How often a thread waiting for the in-process lock checks for cancellation (a release wakes it at once)."""
_FLOCK_POLL_MAX = 0.01
"""The longest pause between two attempts at a flock held by another process."""
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class _Entry:
    """One path's lock: the re-entrant lock, how many threads hold or wait for it, and the held ``flock``."""

    __slots__ = ("depth", "fd", "lock", "users")

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.users = 0
        self.depth = 0
        self.fd = -1


_entries: dict[str, _Entry] = {}
_entries_guard = threading.Lock()
_directory: Path | None = None


def _check_cancelled() -> None:
    try:
        anyio.from_thread.check_cancelled()
    except anyio.NoEventLoopError:
        pass  # not an anyio worker thread: nothing can cancel this wait


def lock_directory() -> Path:
    """The directory holding the lock files, created ``0700`` on first use.

    Raises:
        OSError: it cannot be created, or it is a symlink, not a directory, or owned by another user.
    """
    global _directory
    if _directory is not None:
        return _directory
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        directory = Path(runtime) / "tether-locks"
    else:
        data = default_data_dir()
        with contextlib.suppress(FileExistsError):
            data.mkdir(mode=0o700, parents=True)
        directory = data / "locks"
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory, 0o700)
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise OSError(
            errno.EPERM,
            "the lock directory is not a private directory of this user (remove it and try again)",
            str(directory),
        )
    _directory = directory
    return directory


def lock_file(path: Path) -> Path:
    """The lock file of the canonical ``path`` (it may not exist yet).

    Raises:
        OSError: as :func:`lock_directory`.
    """
    return lock_directory() / _lock_name(str(path))


def _lock_name(key: str) -> str:
    return hashlib.sha256(os.fsencode(key)).hexdigest()[:40] + ".lock"


def _open_lock_file(key: str) -> int:
    global _directory
    name = _lock_name(key)
    try:
        return os.open(os.path.join(lock_directory(), name), _LOCK_FLAGS, 0o600)
    except FileNotFoundError:
        _directory = None  # the directory was cleaned away (a temp cleaner): make it again
        return os.open(os.path.join(lock_directory(), name), _LOCK_FLAGS, 0o600)


def _flock(fd: int) -> None:
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        _check_cancelled()
        time.sleep(delay)  # another process holds it; no portable way to wait on a flock with a timeout
        delay = min(delay * 2, _FLOCK_POLL_MAX)


def _acquire(key: str) -> _Entry:
    with _entries_guard:
        entry = _entries.get(key)
        if entry is None:
            entry = _entries[key] = _Entry()
        entry.users += 1
    try:
        while not entry.lock.acquire(timeout=_POLL_SECONDS):
            _check_cancelled()
    except BaseException:
        _forget(key, entry)
        raise
    try:
        if entry.depth == 0:
            fd = _open_lock_file(key)
            try:
                _flock(fd)
            except BaseException:
                os.close(fd)
                raise
            entry.fd = fd
        entry.depth += 1
    except BaseException:
        entry.lock.release()
        _forget(key, entry)
        raise
    return entry


def _release(key: str, entry: _Entry) -> None:
    entry.depth -= 1
    if entry.depth == 0:
        fd, entry.fd = entry.fd, -1
        os.close(fd)  # closing the only descriptor of the lock file releases the flock
    entry.lock.release()
    _forget(key, entry)


def _forget(key: str, entry: _Entry) -> None:
    with _entries_guard:
        entry.users -= 1
        if entry.users == 0:
            del _entries[key]


@contextmanager
def lock_files(paths: Iterable[Path]) -> Generator[None]:
    """Hold the mutation lock of every canonical path in ``paths`` (in this process and across processes).

    Blocking: for worker threads. Re-entrant per thread: a function holding the lock may call another that takes it
    again. Cancellation of the host task (when called from an anyio worker thread) is checked while waiting and once
    every lock is held, so a cancelled call leaves before touching anything.

    Raises:
        OSError: the lock directory or a lock file cannot be used.
    """
    held: list[tuple[str, _Entry]] = []
    try:
        for key in sorted({str(path) for path in paths}):
            held.append((key, _acquire(key)))
        _check_cancelled()
        yield
    finally:
        for key, entry in reversed(held):
            _release(key, entry)

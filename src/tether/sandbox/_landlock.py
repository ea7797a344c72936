"""Landlock through ``ctypes``: the ABI version, and confining the calling process's writes (and TCP) for good.

Stdlib only, and importable on its own: the bash tool's guard (``builtins/_shell_guard.py``, run with ``python -S
-I``) loads this file by path and calls :func:`restrict` in the forked shell just before ``execve``, so the
fallback costs no extra process per call. tether itself calls :func:`abi_version` when it detects the mechanism.

Why our own ~100 lines instead of a package: the guard runs isolated from site-packages (``-I``), so whatever
applies the rules must be stdlib code it can load by path; the PyPI bindings (``landlock`` 1.0.0.dev5, ``landlockpy``,
``py-landlock``) are young single-maintainer releases wrapping the same three syscalls, and none is importable there.

What Landlock gives (kernel >= 5.13): an allow-list of file-system rights per directory tree, inherited by every
child and never lifted. Only *write* rights are handled here, so reads stay unrestricted; writes, removals, renames
and links are allowed beneath the writable roots only (``REFER``, ABI 2, makes a cross-root rename or link fail with
``EXDEV``; ``TRUNCATE``, ABI 3). With ABI >= 4, TCP ``connect``/``bind`` are handled with no port allowed: no TCP
reaches anything (UDP and unix sockets are not covered by Landlock). It cannot carve a read-only path out of a
writable tree: protected paths inside the project stay decided by the parse-level asks under this fallback.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

__all__ = ["abi_version", "restrict"]

_CREATE_RULESET = 444  # the same number on every architecture (the syscalls are newer than the unified table)
_ADD_RULE = 445
_RESTRICT_SELF = 446
_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_WRITE_FILE = 1 << 1
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1

_WRITES = (
    _WRITE_FILE
    | _REMOVE_DIR
    | _REMOVE_FILE
    | _MAKE_CHAR
    | _MAKE_DIR
    | _MAKE_REG
    | _MAKE_SOCK
    | _MAKE_FIFO
    | _MAKE_BLOCK
    | _MAKE_SYM
)
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE
"""The rights a rule on a file (not a directory) may hold (``/dev/null``)."""


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def abi_version() -> int:
    """The kernel's Landlock ABI version, ``0`` when it has none (not Linux, too old, or disabled at boot)."""
    libc = _libc()
    if libc is None:
        return 0
    result = libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    return max(0, int(result))


def restrict(writable: list[str], *, network: bool) -> None:
    """Confine this process (and what it will start) to writing beneath ``writable``; without ``network``, no TCP.

    Paths that do not exist are skipped. Call it in the child, just before ``execve``: it cannot be undone.

    Raises:
        OSError: the kernel has no Landlock, or a syscall failed (its errno).
    """
    libc = _libc()
    abi = abi_version()
    if libc is None or abi < 1:
        raise OSError(38, "Landlock is not available")  # ENOSYS
    handled = _WRITES | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    handled_net = 0 if network or abi < 4 else _NET_BIND_TCP | _NET_CONNECT_TCP
    attr = struct.pack("=QQ", handled, handled_net) if abi >= 4 else struct.pack("=Q", handled)
    ruleset = _check(
        libc.syscall(ctypes.c_long(_CREATE_RULESET), attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    )
    try:
        for path in writable:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rights = handled if os.path.isdir(path) else handled & _FILE_RIGHTS
                rule = struct.pack("=Qi", rights, fd)
                _check(
                    libc.syscall(
                        ctypes.c_long(_ADD_RULE), ruleset, _RULE_PATH_BENEATH, rule, ctypes.c_uint32(0)
                    )
                )
            finally:
                os.close(fd)
        _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        _check(libc.syscall(ctypes.c_long(_RESTRICT_SELF), ruleset, ctypes.c_uint32(0)))
    finally:
        os.close(ruleset)


def _check(result: int) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return result

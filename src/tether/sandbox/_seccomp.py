"""A seccomp filter that keeps sandboxed commands off unix sockets: no ``socket(AF_UNIX, ...)``, no io_uring.

Stdlib only, and importable on its own, like ``_landlock.py``: the bash tool's guard loads this file by path and calls
:func:`deny_unix_sockets` in the forked child just before it ``execve``\\ s bubblewrap (or the shell, under
Landlock); the network bridge calls it in the command's child (the bridge itself must still reach tether's proxy
over its unix socket); an MCP server runs it as a trampoline (``python -S -I _seccomp.py -- ARGV``).

Why: a read-only mount does not stop ``connect()`` on a unix socket (the kernel checks write permission on the socket
inode, and ``EROFS`` applies to files, not sockets), and the host's ``/run`` holds ``docker.sock``,
``containerd.sock``, the D-Bus system bus, systemd's private socket: each is a door out of any file-system sandbox
(``docker run -v /:/host`` is root on the host). Sockets can live anywhere (a home directory, the project), so
hiding directories cannot close them all; refusing the socket itself can. Abstract sockets are already out of reach
in a network namespace of the sandbox's own, and ``socketpair`` (pipes between a program's own processes) stays
allowed: only a socket that could ``connect`` to, or ``bind``, a name is refused. The same cut as Claude Code's
sandbox (its seccomp filter refuses ``socket(AF_UNIX)``) and Docker's default profile (no io_uring, through which
a socket could be opened without the ``socket`` system call).

The program, in classic BPF over ``struct seccomp_data`` (``nr`` at offset 0, ``arch`` at 4, ``args[0]`` at 16):

1. an architecture other than the machine's own (a 32-bit binary on a 64-bit kernel) is killed: its system call
   numbers differ, so the checks below would not apply to it;
2. on x86_64, an x32 call (``nr >= 0x40000000``) fails with ``EPERM``;
3. ``io_uring_setup`` fails with ``EPERM``;
4. ``socket`` with ``AF_UNIX`` (the low 32 bits of the first argument) fails with ``EPERM``, a program sees
   "Operation not permitted", as for any refused socket; everything else is allowed.

``sandbox.unix_sockets: true`` in tether.json leaves the filter off (a command that must reach a local daemon).
"""

from __future__ import annotations

import os
import struct
import sys

__all__ = ["ARCHITECTURES", "deny_unix_sockets", "program", "supported"]

_AUDIT_ARCH_X86_64 = 0xC000003E
_AUDIT_ARCH_AARCH64 = 0xC00000B7

ARCHITECTURES = {
    # machine: (AUDIT_ARCH value, socket, io_uring_setup, x32 calls exist)
    "x86_64": (_AUDIT_ARCH_X86_64, 41, 425, True),
    "aarch64": (_AUDIT_ARCH_AARCH64, 198, 425, False),
}
"""The machines the filter knows: each one's audit architecture and its numbers for the calls it checks."""

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_EPERM = 1
_AF_UNIX = 1
_X32_BIT = 0x40000000
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


def supported(machine: str | None = None) -> bool:
    """Whether the filter knows this machine's architecture (``uname``'s machine by default)."""
    return (machine or os.uname().machine) in ARCHITECTURES


def program(machine: str | None = None) -> bytes:
    """The filter's instructions (``struct sock_filter`` array) for ``machine``.

    Raises:
        OSError: an architecture the filter does not know (``ENOSYS``).
    """
    name = machine or os.uname().machine
    if name not in ARCHITECTURES:
        raise OSError(38, f"no seccomp filter for the {name} architecture")
    arch, socket_nr, uring_nr, x32 = ARCHITECTURES[name]

    def op(code: int, jt: int, jf: int, k: int) -> bytes:
        return struct.pack("=HBBI", code, jt, jf, k)

    # Jumps are relative to the next instruction; DENY and ALLOW are the last two.
    return b"".join(
        (
            op(_LD_W_ABS, 0, 0, 4),  # 0: arch
            op(_JEQ_K, 1, 0, arch),  # 1: the machine's own -> 3
            op(_RET_K, 0, 0, _RET_KILL_PROCESS),  # 2
            op(_LD_W_ABS, 0, 0, 0),  # 3: nr
            op(_JGE_K, 5, 0, _X32_BIT) if x32 else op(_JEQ_K, 5, 0, 0xFFFFFFFF),  # 4: x32 -> DENY
            op(_JEQ_K, 4, 0, uring_nr),  # 5: io_uring_setup -> DENY
            op(_JEQ_K, 0, 2, socket_nr),  # 6: socket -> 7, else ALLOW
            op(_LD_W_ABS, 0, 0, 16),  # 7: args[0], low half (little-endian on both machines)
            op(_JEQ_K, 1, 0, _AF_UNIX),  # 8: AF_UNIX -> DENY
            op(_RET_K, 0, 0, _RET_ALLOW),  # 9: ALLOW
            op(_RET_K, 0, 0, _RET_ERRNO | _EPERM),  # 10: DENY
        )
    )


def deny_unix_sockets() -> None:
    """Install the filter on the calling thread for good (inherited by every child; ``no_new_privs`` first).

    ``ctypes`` is imported here, not with the module: tether imports this module for :func:`supported` at start-up,
    and only the processes that install the filter (the guard, the bridge's child, the trampoline) need it.

    Raises:
        OSError: the architecture is unknown, or the kernel refused (``prctl``'s errno).
    """
    import ctypes

    class _Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    code = program()
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def main(argv: list[str]) -> None:
    """``_seccomp.py -- ARGV...``: install the filter, then ``execvp`` ARGV (exit 126 when either fails)."""
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: _seccomp.py -- ARGV...\n")
        os._exit(2)
    try:
        deny_unix_sockets()
        os.execvp(argv[2], argv[2:])
    except OSError as exc:
        sys.stderr.write(f"tether sandbox: cannot run {argv[2]}: {exc.strerror or exc}\n")
        os._exit(126 if not isinstance(exc, FileNotFoundError) else 127)


if __name__ == "__main__":
    main(sys.argv)

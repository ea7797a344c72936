"""The bubblewrap command line that holds one command to a :class:`~tether.sandbox.SandboxPolicy`.

The view inside, mount by mount (later mounts cover earlier ones):

1. ``/`` read-only, a fresh ``/dev`` (null, zero, random, tty, shm) and a fresh ``/proc``;
2. the session's private temp directory on ``/tmp`` (so tools that hard-code ``/tmp`` work, and other sessions' and
   users' files there are out of reach), then the outside directories this call was approved to use, read-only
   (one under ``/tmp`` would be hidden otherwise);
3. each writable root on itself, the git directories on themselves (a mount point cannot be renamed or removed:
   ``EBUSY``), then each protected carve-out read-only on itself (a write is ``EROFS``, a hard link out of it
   ``EXDEV``, a rename or unlink of it ``EBUSY``).

Namespaces: a user namespace with further ones disabled (``--disable-userns``: no nested namespace where the
read-only mounts could be unmounted; ``umount``/``mount`` inside fail with ``EPERM``, and ``/proc/<pid>/root`` of a
process outside cannot be followed: both pinned by attack tests), IPC, UTS, and, unless the network is ``host``,
network (loopback only, nothing routes out). ``--die-with-parent`` kills the sandbox when the process that started
it dies; the bash tool's guard is that parent, so the guard's "no process outlives its call" holds inside too.

No PID namespace, on purpose: the guard finds and ends every process of the call by walking its descendants in the
host's process table (a PID namespace's init would SIGKILL them without the guard's SIGTERM and grace period), and
the pids a command prints (``$$``, ``$!``) stay the host's, as callers and the existing tests expect.

``network == "proxy"`` is the seam for tether's proxy (``sandbox/_proxy.py``): its unix socket is bound at
:data:`PROXY_SOCKET` and its variables are set; the bridge (``sandbox/_bridge.py``) that listens on loopback inside
and forwards to that socket goes in front of the command (``Sandbox.wrap``). :func:`bwrap_argv` refuses ``proxy``
without a seam.
"""

from __future__ import annotations

from typing import assert_never

from ..errors import UsageError
from ._policy import PROXY_SOCKET, SandboxPolicy

__all__ = ["NAMESPACE_FLAGS", "bwrap_argv"]

NAMESPACE_FLAGS = (
    "--unshare-user",
    "--disable-userns",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
)
"""The namespaces every sandbox gets (detection probes exactly these, with ``--unshare-net``)."""


def bwrap_argv(bwrap: str, policy: SandboxPolicy, *, cwd: str) -> list[str]:
    """The argv that runs a command under ``policy`` in ``cwd``: append the command's own argv after it.

    Raises:
        UsageError: ``network`` is ``proxy`` but the policy has no proxy seam.
    """
    argv = [bwrap, *NAMESPACE_FLAGS]
    match policy.network:
        case "none":
            argv.append("--unshare-net")
        case "proxy":
            if policy.proxy is None:
                raise UsageError("sandbox network 'proxy' needs tether's proxy, which is not running")
            argv.append("--unshare-net")
        case "host":
            pass
        case _:  # pragma: no cover
            assert_never(policy.network)
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if policy.tmp is not None:
        argv += ["--bind", policy.tmp, "/tmp"]
    for path in sorted(policy.visible, key=_depth):
        argv += ["--ro-bind-try", path, path]
    for root in sorted(policy.writable, key=_depth):
        argv += ["--bind-try", root, root]
    for gitdir in policy.git_dirs:
        argv += ["--bind", gitdir, gitdir]
    for path in sorted(policy.read_only, key=_depth):
        argv += ["--ro-bind-try", path, path]
    if policy.proxy is not None:
        # The seam: the proxy's socket, and the variables that point programs at the bridge in front of it.
        argv += ["--ro-bind", policy.proxy.socket, PROXY_SOCKET]
        for name, value in sorted(policy.proxy.env.items()):
            argv += ["--setenv", name, value]
    argv += ["--chdir", cwd, "--"]
    return argv


def _depth(path: str) -> int:
    return path.rstrip("/").count("/")

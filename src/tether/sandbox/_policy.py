"""The sandbox policy: what one command may write, what stays read-only inside that, and its network.

A :class:`SandboxPolicy` is built per call (:func:`build_policy`) from the Location's root, the session's private
temp directory, the directories the user's rules make writable, and the protected paths that exist now. The
read-only carve-outs come from the one protected list, ``tether.location.protected_anchor`` (the parse-level asks
use the same function), applied to the entries that can be found without walking the project:

- the project root's entries (``.tether/``, ``.git``, ``.gitmodules``, ``AGENTS.md``, ``tether.json``, the skill
  folders, ...) and the Location's extra protected resources that lie inside a writable root;
- inside each git directory (the root's ``.git``, its ``modules/<name>/`` and ``worktrees/<name>/``): every entry
  that is not git's data (``config``, ``hooks/``, ``info/``, ``commondir``, ...). The git directory itself is bound
  writable onto itself (git writes ``index.lock``, ``COMMIT_EDITMSG`` there), which makes it a mount point: ``mv .git
  .git2`` then fails with ``EBUSY``, so a fresh ``.git`` cannot be planted under the old name.

Missing protected directories of tether's and git's own layout (``.tether/``, ``.git/hooks/``, ``.git/info/``) are
created empty before the call, so they can be held read-only too. What cannot be held (a protected name that does
not exist yet: a ``config`` or ``AGENTS.md`` in a subdirectory, ``.git/commondir``, a root ``AGENTS.md``) stays with
the parse-level asks; ``docs/sandbox.md`` lists it.

The network is ``none`` (its own namespace: no route out), ``host`` (the machine's network) or ``proxy`` (the seam
for tether's proxy: a unix socket bound into the sandbox and the proxy variables, :class:`ProxySeam`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import field
from typing import Any, Literal

from .._record import record
from ..location import protected_anchor
from ..permissions import names_protected_path
from ._seccomp import supported as seccomp_supported

__all__ = ["Mechanism", "Network", "ProxySeam", "SandboxPolicy", "build_policy", "protected_entries"]

Mechanism = Literal["bwrap", "landlock", "none"]
"""How the kernel holds a command: bubblewrap (namespaces and bind mounts), Landlock (writes only), or not at all."""
Network = Literal["none", "proxy", "host"]
"""``none``: no route out; ``proxy``: only through tether's proxy (:class:`ProxySeam`); ``host``: the machine's."""

PROXY_SOCKET = "/dev/tether/proxy.sock"
"""Where the proxy's unix socket is bound inside the sandbox (``network: proxy``): on the sandbox's own ``/dev`` (a
fresh tmpfs, where bubblewrap can make the mount point; ``/run`` is the host's, read-only)."""


@record
class ProxySeam:
    """tether's network proxy, as a sandbox sees it (``sandbox/_proxy.py``: one per call).

    Attributes:
        socket: the proxy's unix socket on the host; bound at :data:`PROXY_SOCKET` inside, where the bridge
            (``sandbox/_bridge.py``) forwards a loopback port to it and sets the proxy variables.
        env: further variables for the command (none by default: the bridge sets ``HTTP_PROXY``, ``HTTPS_PROXY``,
            ``ALL_PROXY``, ``NO_PROXY``, ... once it knows its port).
    """

    socket: str
    env: Mapping[str, str] = field(default_factory=dict[str, str])


@record
class SandboxPolicy:
    """What one command may touch.

    Attributes:
        mechanism: what enforces it.
        writable: real paths writable with everything beneath them (the project first).
        read_only: existing real paths inside ``writable`` held read-only (the protected carve-outs).
        tmp: the session's private temp directory (real path): ``/tmp`` inside bubblewrap, ``$TMPDIR`` always.
        network: see :data:`Network`.
        proxy: the proxy to bind in when ``network == "proxy"``.
        git_dirs: git directories bound writable onto themselves (a mount point cannot be renamed away).
        visible: outside directories this call was approved to use (``external_directory``), shown read-only even
            where the sandbox's own mounts cover them (a directory under ``/tmp``).
        unix_sockets: whether the command may make unix sockets; ``False`` (the default) refuses them with a seccomp
            filter where the machine has one (``sandbox/_seccomp.py``: a read-only mount does not stop a
            ``connect()`` to the host's ``docker.sock``).
    """

    mechanism: Mechanism
    writable: tuple[str, ...]
    read_only: tuple[str, ...] = ()
    tmp: str | None = None
    network: Network = "none"
    proxy: ProxySeam | None = None
    git_dirs: tuple[str, ...] = ()
    visible: tuple[str, ...] = ()
    unix_sockets: bool = False

    @property
    def filtered(self) -> bool:
        """Whether the seccomp filter refuses unix sockets to this command (a mechanism holds it, the user did not
        allow them, and the filter knows the machine)."""
        return self.mechanism != "none" and not self.unix_sockets and seccomp_supported()

    def describe(self) -> dict[str, Any]:
        """The compact JSON the session record keeps per call, and ``--explain`` prints."""
        data: dict[str, Any] = {
            "mechanism": self.mechanism,
            "writable": [*self.writable, *([self.tmp] if self.tmp else [])],
            "network": self.network if self.mechanism == "bwrap" else _network_without_bwrap(self),
        }
        if self.read_only:
            data["readOnly"] = list(self.read_only)
        if self.mechanism != "none":
            data["unixSockets"] = not self.filtered
        return data


def _network_without_bwrap(policy: SandboxPolicy) -> str:
    # Landlock holds TCP only (ABI 4+); without a mechanism nothing is held.
    if policy.mechanism == "landlock" and policy.network == "none":
        return "none (TCP)"
    return "host"


_PRECREATE_ROOT = (".tether",)
_PRECREATE_GIT = ("hooks", "info")


def protected_entries(
    root: str, extra: Collection[str] = (), *, create: bool = False
) -> tuple[list[str], list[str]]:
    """The existing protected paths under ``root`` (real, absolute) and the git directories found there.

    Looks at the root's entries and inside its git directories only (no walk of the project). With ``create``, the
    missing directories of tether's and git's own layout are made first (see the module docstring).
    """
    found: list[str] = []
    git_dirs: list[str] = []
    if create:
        for name in _PRECREATE_ROOT:
            _mkdir(os.path.join(root, name))
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return found, git_dirs
    for name in names:
        path = os.path.join(root, name)
        if name.casefold() == ".git" and os.path.isdir(path) and not os.path.islink(path):
            git_dirs.append(path)
            found.extend(_git_entries(path, name, extra, create=create))
            continue
        if protected_anchor(name, extra) is not None:
            found.append(path)
    for entry in extra:
        if entry.startswith("/") or "*" in entry or "?" in entry:
            continue  # outside paths are read-only anyway; a pattern names no one file to bind
        path = os.path.join(root, entry.rstrip("/"))
        if os.path.lexists(path) and path not in found:
            found.append(path)
    return found, git_dirs


def _git_entries(gitdir: str, resource: str, extra: Collection[str], *, create: bool) -> list[str]:
    """The protected entries of one git directory (``resource`` is its path relative to the root)."""
    if create:
        for name in _PRECREATE_GIT:
            _mkdir(os.path.join(gitdir, name))
    out: list[str] = []
    try:
        names = sorted(os.listdir(gitdir))
    except OSError:
        return out
    for name in names:
        path = os.path.join(gitdir, name)
        if name in ("modules", "worktrees") and os.path.isdir(path) and not os.path.islink(path):
            for child in _listdir(path):
                nested = os.path.join(path, child)
                if os.path.isdir(nested) and not os.path.islink(nested):
                    out.extend(_git_entries(nested, f"{resource}/{name}/{child}", extra, create=False))
            continue
        if protected_anchor(f"{resource}/{name}", extra) is not None:
            out.append(path)
    return out


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _mkdir(path: str) -> None:
    try:
        os.mkdir(path, 0o755)
    except OSError:
        pass  # it exists (or cannot be made: then it is simply not held)


def build_policy(
    *,
    mechanism: Mechanism,
    root: str,
    tmp: str | None,
    writable: Iterable[str] = (),
    allowed_protected: Iterable[str] = (),
    extra_protected: Collection[str] = (),
    network: Network = "none",
    proxy: ProxySeam | None = None,
    visible: Iterable[str] = (),
    create: bool = True,
    unix_sockets: bool = False,
) -> SandboxPolicy:
    """The policy of one command run in the Location whose real root is ``root``. Reads the file system.

    Args:
        mechanism: the detected mechanism (``tether.sandbox.detect``).
        root: the project root (real path); writable.
        tmp: the session's private temp directory (real path), or ``None``.
        writable: further real directories the user's rules make writable (``external_directory`` allows).
        allowed_protected: rule patterns (or exact resources) the user allowed for protected paths: a carve-out
            whose anchor one of them names (``names_protected_path``) stays writable.
        extra_protected: the Location's extra protected resources (``Location.protected``).
        network: see :data:`Network`.
        proxy: the proxy seam for ``network == "proxy"``.
        visible: outside directories approved for this call (real paths), read-only inside.
        create: make the missing directories of tether's and git's layout first (``False``: only look).
        unix_sockets: let the command make unix sockets (``sandbox.unix_sockets``).
    """
    roots = [root, *(path for path in dict.fromkeys(writable) if path != root)]
    carve: list[str] = []
    git_dirs: list[str] = []
    if mechanism == "bwrap":
        found, git_dirs = protected_entries(root, extra_protected, create=create)
        allowed = tuple(allowed_protected)
        for path in found:
            resource = os.path.relpath(path, root).replace(os.sep, "/")
            anchor = protected_anchor(resource, extra_protected) or resource
            if not any(names_protected_path(pattern, anchor) for pattern in allowed):
                carve.append(path)
    return SandboxPolicy(
        mechanism=mechanism,
        writable=tuple(roots),
        read_only=tuple(carve),
        tmp=tmp,
        network=network,
        proxy=proxy if network == "proxy" else None,
        git_dirs=tuple(git_dirs),
        visible=tuple(dict.fromkeys((*visible, *_own_environment()) if tmp is not None else visible)),
        unix_sockets=unix_sockets,
    )


@functools.cache
def _own_environment() -> tuple[str, ...]:
    """The directories of the Python running tether (its prefixes and tether's own package), when they lie under the
    real ``/tmp``: the session's temp directory covers ``/tmp`` inside, which would hide them, and the sandbox's own
    helpers (the proxy's bridge) and the commands a project runs with that Python need them (a checkout or a venv in
    ``/tmp``, as CI and throwaway clones have). Shown read-only; elsewhere they are visible already."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = (os.path.realpath(path) for path in (sys.prefix, sys.exec_prefix, sys.base_prefix, package))
    return tuple(dict.fromkeys(path for path in found if path.startswith("/tmp/")))

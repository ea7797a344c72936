"""The user's ``sandbox`` settings (``tether.json``), read from the validated config, and the session temp directory.

The keys are described (checked, defaulted, documented) by ``config._models.SandboxSection``; this module reads the
merged JSON that validation passed. An untrusted project's file never reaches it (``config._restrict`` keeps only
keys that tighten, and ``sandbox`` is not one of them), so a repository cannot turn its own sandbox off.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from .._record import record
from ._detect import Mode
from ._policy import Network

__all__ = ["SandboxSettings", "session_tmp"]


@record
class SandboxSettings:
    """``sandbox`` in ``tether.json``.

    Attributes:
        mode: ``auto`` (the best the machine offers), ``bwrap``, ``landlock`` or ``off``.
        required: refuse to run commands when no mechanism holds them.
        network: ``proxy`` (the default: only through tether's proxy, which asks ``network`` per host; ``none`` where
            the proxy cannot run, see ``Sandbox.network``), ``none`` or ``host``.
        writable: further directories commands may write (``~`` expanded, made real).
        auto_allow: with bubblewrap, the built-in agents allow bash commands except destructive ones.
    """

    mode: Mode = "auto"
    required: bool = False
    network: Network = "proxy"
    writable: tuple[str, ...] = ()
    auto_allow: bool = False

    @classmethod
    def from_config(cls, value: object) -> SandboxSettings:
        """Read ``config.data["sandbox"]`` (already validated; anything else gives the defaults)."""
        if not isinstance(value, Mapping):
            return cls()
        data = cast(Mapping[str, Any], value)
        writable = data.get("writable")
        paths = tuple(
            os.path.realpath(os.path.expanduser(p))
            for p in (writable if isinstance(writable, list) else ())
            if isinstance(p, str)
        )
        mode = data.get("mode", "auto")
        network = data.get("network", "proxy")
        return cls(
            mode=mode if mode in ("auto", "bwrap", "landlock", "off") else "auto",
            required=data.get("required") is True,
            network=network if network in ("none", "proxy", "host") else "proxy",
            writable=paths,
            auto_allow=data.get("auto_allow") is True,
        )


def session_tmp(base: Path, session_id: str) -> Path:
    """The session's private temp directory, ``<base>/tether-sandbox-<uid>/<session id>`` (0700, made on first use).

    Raises:
        OSError: the parent exists but is not this user's private directory (another user made it first), or the
            directory cannot be made.
    """
    parent = base / f"tether-sandbox-{os.getuid()}"
    try:
        parent.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"refusing the sandbox temp directory {parent}: not a private directory of this user")
    name = "".join(c for c in session_id if c.isalnum() or c in "_-") or "session"
    path = parent / name
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    return path

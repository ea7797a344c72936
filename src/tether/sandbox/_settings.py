"""The user's ``sandbox`` settings (``tether.json``), read from the validated config.

The keys are described (checked, defaulted, documented) by ``config._models.SandboxSection``; this module reads the
merged JSON that validation passed. An untrusted project's file never reaches it (``config._restrict`` keeps only
keys that tighten, and ``sandbox`` is not one of them), so a repository cannot turn its own sandbox off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast

from .._record import record
from ._detect import Mode
from ._policy import Network

__all__ = ["SandboxSettings"]


@record
class SandboxSettings:
    """``sandbox`` in ``tether.json``.

    Attributes:
        mode: ``auto`` (the best the machine offers), ``bwrap``, ``landlock`` or ``off``.
        required: refuse to run commands when no mechanism holds them.
        network: ``proxy`` (the default: only through tether's proxy, which asks ``network`` per host; ``none`` where
            the proxy cannot run, see ``Sandbox.network``), ``none`` or ``host``.
        writable: further directories commands may write (``~`` expanded, made real).
        auto_allow: whether the built-in agents let bash commands that bubblewrap holds run without asking, except
            destructive ones; ``None`` (the default) means yes unless ``network`` is ``host`` (``Sandbox.auto_allow``).
        unix_sockets: let commands make unix sockets (``False``: a seccomp filter refuses them, so the host's
            ``docker.sock`` and the D-Bus system bus stay out of reach; ``sandbox/_seccomp.py``).
    """

    mode: Mode = "auto"
    required: bool = False
    network: Network = "proxy"
    writable: tuple[str, ...] = ()
    auto_allow: bool | None = None
    unix_sockets: bool = False

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
            auto_allow=auto_allow if isinstance(auto_allow := data.get("auto_allow"), bool) else None,
            unix_sockets=data.get("unix_sockets") is True,
        )

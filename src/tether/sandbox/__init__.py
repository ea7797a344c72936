"""The sandbox: what a command may touch is held by the kernel (bubblewrap, else Landlock), not guessed from its text.

See ``docs/sandbox.md``. The bash tool runs every command through :meth:`Sandbox.wrap`; MCP stdio servers marked
``"sandbox": true`` start through it too.
"""

from ._bwrap import NAMESPACE_FLAGS, bwrap_argv
from ._detect import Detection, Mode, detect, notice, reset
from ._network import NetworkGate, Refusal, destination_resource, may_use_network
from ._policy import (
    PROXY_SOCKET,
    Mechanism,
    Network,
    ProxySeam,
    SandboxPolicy,
    build_policy,
    protected_entries,
)
from ._proxy import open_proxy
from ._sandbox import LANDLOCK_MODULE, Launch, Sandbox, protected_allows, writable_from_rules
from ._settings import SandboxSettings
from ._tmp import SessionTemps, sweep

__all__ = [
    "LANDLOCK_MODULE",
    "NAMESPACE_FLAGS",
    "PROXY_SOCKET",
    "Detection",
    "Launch",
    "Mechanism",
    "Mode",
    "Network",
    "NetworkGate",
    "ProxySeam",
    "Refusal",
    "Sandbox",
    "SandboxPolicy",
    "SandboxSettings",
    "SessionTemps",
    "build_policy",
    "bwrap_argv",
    "destination_resource",
    "detect",
    "may_use_network",
    "notice",
    "open_proxy",
    "protected_allows",
    "protected_entries",
    "reset",
    "sweep",
    "writable_from_rules",
]

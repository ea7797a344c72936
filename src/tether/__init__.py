"""tether: a Python runtime for coding agents, built around a tool-calling subsystem treated as infrastructure.

``from tether import Runtime`` is lazy: importing ``tether`` stays fast (the CLI imports it first).
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Runtime", "__version__"]

if TYPE_CHECKING:
    from ._runtime import Runtime


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        from ._runtime import Runtime

        return Runtime
    raise AttributeError(f"module 'tether' has no attribute {name!r}")

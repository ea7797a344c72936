"""tether: a Python runtime for coding agents, built around a tool-calling subsystem treated as infrastructure.

``from tether import Runtime`` is lazy: importing ``tether`` stays fast (the CLI imports it first).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Runtime", "__version__", "run"]

if TYPE_CHECKING:
    from ._runtime import Runtime
    from .llm import Model
    from .session import TurnResult
    from .tools import Content, Tool


def run(
    prompt: str | Sequence[Content],
    *,
    model: Model | str,
    directory: str | os.PathLike[str] = ".",
    tools: Mapping[str, Tool[Any, Any]] | None = None,
    agent: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    deps: Any = None,
) -> TurnResult:
    """Run one turn of an agent on ``directory`` and return what it did: the one-call entry point for scripts.

    Opens a :class:`Runtime` (store and outputs in ``data_dir``, default ``$TETHER_DATA_DIR`` or the user data
    directory), creates a session for ``agent`` (default ``build``) with ``deps``, registers ``tools`` (name → tool)
    for the turn, runs it with ``model`` (a ``Model`` or a ``provider/model`` spec) and closes everything.

    Raises:
        UsageError: called from a running event loop (use ``await rt.run(...)`` there), no such agent, or
            ``directory`` is not a directory.
        ConfigError: ``model`` names an unknown provider.
        ProviderAuthError: the provider needs an API key and none is set.
        ProviderError: the model failed and retrying did not help.
    """
    from ._runtime import Runtime

    return Runtime(data_dir=data_dir).run_sync(
        prompt, model=model, directory=directory, tools=tools, agent=agent, deps=deps
    )


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        from ._runtime import Runtime

        return Runtime
    raise AttributeError(f"module 'tether' has no attribute {name!r}")

"""tether: a Python runtime for coding agents, built around a tool-calling subsystem treated as infrastructure.

``from tether import Runtime`` is lazy: importing ``tether`` stays fast (the CLI imports it first).

``python -m tether.cli`` (and any ``python -m tether...``) is as safe as the ``tether`` script: ``python -m`` puts the
current directory first on ``sys.path``, so a cloned repository's ``typer.py`` (or ``typing.py``) would run as tether
starts. This package, which Python imports before any module of the command, drops that entry first thing, before
its own first import (hence no ``from __future__ import annotations`` here): :func:`_safe_path`. It does so only when
the ``-m`` target is tether's; a program that imports tether keeps its path. docs/security.md says what is left: the
few standard modules Python itself imports for ``-m`` before any of tether runs (``python -P`` closes that too).
"""

import sys


def _safe_path() -> None:
    """Drop the current directory that ``python -m tether...`` put first on ``sys.path`` (``-P`` semantics).

    Runs while Python locates the ``-m`` target (``sys.argv[0]`` is then ``"-m"``), and only when that target is
    tether or one of its modules (``sys.orig_argv``); with ``-P``/``-I``/``$PYTHONSAFEPATH`` there is nothing to drop.
    """
    if sys.flags.safe_path or sys.argv[:1] != ["-m"]:
        return
    if _module_target(sys.orig_argv[1:]).partition(".")[0] != "tether":
        return
    import os  # loaded already: runpy imports it before any package of the target

    if sys.path and os.path.realpath(sys.path[0]) == os.path.realpath(os.getcwd()):
        del sys.path[0]


def _module_target(args: "list[str]") -> str:
    """The ``-m`` target of the interpreter's options ``args`` (this is a ``-m`` run), read as CPython reads them:
    short flags cluster (``-Bm tether.cli``, ``-OOsmtether.cli``) and ``-W``/``-X`` take a value, attached or the next
    word, as ``--check-hash-based-pycs`` does."""
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--check-hash-based-pycs":
            index += 1
        elif arg.startswith("-") and not arg.startswith("--"):
            for position, flag in enumerate(arg[1:], 2):
                if flag in "mWX":
                    value = arg[position:]
                    if not value:
                        value, index = (args[index] if index < len(args) else ""), index + 1
                    if flag == "m":
                        return value
                    break
    return ""


_safe_path()

import os  # noqa: E402  (after the path is safe)
from collections.abc import Mapping, Sequence  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from ._version import __version__  # noqa: E402

__all__ = ["Runtime", "__version__", "run"]

if TYPE_CHECKING:
    from ._runtime import Runtime
    from .llm import Model
    from .session import TurnResult
    from .tools import Content, Tool


def run(
    prompt: "str | Sequence[Content]",
    *,
    model: "Model | str",
    directory: str | os.PathLike[str] = ".",
    tools: "Mapping[str, Tool[Any, Any]] | None" = None,
    agent: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    deps: Any = None,
) -> "TurnResult":
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

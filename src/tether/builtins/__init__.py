"""The built-in tools: one module per tool, each exposing ``make(deps) -> Tool``.

:func:`builtin_tools` builds them all for one Location. Every built-in is a plain :class:`~tether.tools.Tool`
(law 1) that captures its services at construction and asks permission itself at the point of action (law 4).
Most tools' modules load at their first call (``_deferred``): importing this package loads none of them.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ..tools import Tool
from . import _deferred
from ._deferred import deferred, deferred_bash
from ._deps import BuiltinDeps

__all__ = ["BuiltinDeps", "builtin_tools"]

_ALWAYS = ("apply_patch", "edit", "glob", "grep", "list", "read", "webfetch", "write")


def builtin_tools(deps: BuiltinDeps) -> dict[str, Tool[Any, Any]]:
    """Build every built-in tool for ``deps``, keyed by its registration name (sorted)."""
    tools: dict[str, Tool[Any, Any]] = {name: deferred(name, deps) for name in _ALWAYS}
    if deps.questions is not None:  # only with the runtime's question service
        tools["question"] = deferred("question", deps)
    if deps.children is not None:  # only with child sessions; its description lists the subagents
        tools["task"] = _deferred.deferred_task(deps.permissions, deps.children, deps.subagents)
    if deps.todos is not None:
        tools["todoread"] = deferred("todoread", deps)
        tools["todowrite"] = deferred("todowrite", deps)
    if deps.skills is not None and deps.skills.found:
        from .skill import make

        tools["skill"] = make(deps)
    if (
        importlib.util.find_spec(f"{__name__}.bash") is not None
    ):  # the bash tool ships separately: it may be absent
        tools["bash"] = deferred_bash(deps)
    return dict(sorted(tools.items()))

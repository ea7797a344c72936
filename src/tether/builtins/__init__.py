"""The built-in tools: one module per tool, each exposing ``make(deps) -> Tool``.

:func:`builtin_tools` builds them all for one Location. Every built-in is a plain :class:`~tether.tools.Tool`
(law 1) that captures its services at construction and asks permission itself at the point of action (law 4).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..tools import Tool
from . import (
    apply_patch,
    edit,
    glob,
    grep,
    list,
    question,
    read,
    skill,
    task,
    todoread,
    todowrite,
    webfetch,
    write,
)
from ._deps import BuiltinDeps

__all__ = ["BuiltinDeps", "builtin_tools"]


def builtin_tools(deps: BuiltinDeps) -> dict[str, Tool[Any, Any]]:
    """Build every built-in tool for ``deps``, keyed by its registration name (sorted)."""
    tools: dict[str, Tool[Any, Any]] = {
        "apply_patch": apply_patch.make(deps),
        "edit": edit.make(deps),
        "glob": glob.make(deps),
        "grep": grep.make(deps),
        "list": list.make(deps),
        "read": read.make(deps),
        "webfetch": webfetch.make(deps),
        "write": write.make(deps),
    }
    for name, built in (("question", question.make(deps)), ("task", task.make(deps))):
        if built is not None:  # only with the runtime's question service and child sessions
            tools[name] = built
    if deps.todos is not None:
        tools["todoread"] = todoread.make(deps)
        tools["todowrite"] = todowrite.make(deps)
    if deps.skills is not None and deps.skills.found:
        tools["skill"] = skill.make(deps)
    try:
        bash = importlib.import_module(f"{__name__}.bash")
    except ModuleNotFoundError as exc:  # the bash tool ships separately; only its own absence is tolerated
        if exc.name != f"{__name__}.bash":
            raise
    else:
        tools["bash"] = bash.make(deps)
    return dict(sorted(tools.items()))

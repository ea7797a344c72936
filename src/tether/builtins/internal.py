"""What tether's own packages share from ``tether.builtins`` beyond its user surface.

``tether.builtins`` makes the built-in tools. The names here are for ``_preview`` (the change an edit, write or
apply_patch call would make, shown before approval): the diff, edit's replacement with its errors and apply_patch's
parser and applier, so a preview computes exactly what the tool will do; and for the runtime: ``discover_skills``
(a Location's skills, found in a worker thread when it opens) and ``deferred_task`` (the ``task`` tool of an agent's
own subagents, registered before its module loads). They may change without notice. ``tests/test_exports.py`` pins
the list.

Each name is imported at its first use (``__getattr__``): a run that shows no preview loads neither the patch parser
nor the replacers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._common import unified_diff
    from ._deferred import deferred_task
    from ._patch import PatchError, apply_chunks, parse_patch
    from ._replacers import AmbiguousMatch, IndentationUnclear, NoMatch, SpanTooLarge, replace
    from ._skills import discover_skills

__all__ = [
    "AmbiguousMatch",
    "IndentationUnclear",
    "NoMatch",
    "PatchError",
    "SpanTooLarge",
    "apply_chunks",
    "deferred_task",
    "discover_skills",
    "parse_patch",
    "replace",
    "unified_diff",
]

_MODULES = {
    "AmbiguousMatch": "_replacers",
    "IndentationUnclear": "_replacers",
    "NoMatch": "_replacers",
    "PatchError": "_patch",
    "SpanTooLarge": "_replacers",
    "apply_chunks": "_patch",
    "deferred_task": "_deferred",
    "discover_skills": "_skills",
    "parse_patch": "_patch",
    "replace": "_replacers",
    "unified_diff": "_common",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    globals()[name] = value
    return value

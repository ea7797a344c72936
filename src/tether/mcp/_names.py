"""The model-facing names of a server's tools: ``<server>_<tool>``, provider-legal, stable and unique.

Every provider accepts ``^[A-Za-z0-9_-]{1,64}$`` (the rule ``tools/_names.py`` applies to every registration). A
server's name and its tools' names come from outside (the config, the server's listing): characters outside the rule
become ``_``; a name longer than 64 characters, or one that collides with another tool's (two raw names that clean up
alike, or a name already taken in the Location), keeps a prefix and gets ``_`` plus 8 hex characters of a hash of the
raw ``server`` and ``tool`` names. The hash depends only on those, so a tool keeps its name across restarts and
listings, whatever else the server lists.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable

__all__ = ["MAX_NAME", "tool_names"]

MAX_NAME = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


def _suffixed(cleaned: str, server: str, tool: str) -> str:
    digest = hashlib.sha256(f"{server}\x00{tool}".encode()).hexdigest()[:8]
    return f"{cleaned[: MAX_NAME - 9]}_{digest}"


def tool_names(tools: Iterable[tuple[str, str]], taken: Collection[str] = ()) -> dict[tuple[str, str], str]:
    """Map each ``(server, tool)`` pair of raw names to its effective name (see the module docstring).

    Args:
        tools: the servers' names and their raw tool names, as listed (a repeated pair is named once).
        taken: effective names already used in the Location (the built-ins): never reused.
    """
    cleaned = {pair: _INVALID.sub("_", f"{pair[0]}_{pair[1]}") for pair in dict.fromkeys(tools)}
    counts: dict[str, int] = {}
    for name in cleaned.values():
        counts[name] = counts.get(name, 0) + 1
    out: dict[tuple[str, str], str] = {}
    for (server, tool), name in cleaned.items():
        if len(name) > MAX_NAME or counts[name] > 1 or name in taken:
            name = _suffixed(name, server, tool)
        out[server, tool] = name
    return out

"""The wildcard matcher used by permission rules and catalog visibility.

``*`` matches any run of characters (crossing ``/``), ``?`` exactly one character, everything else is literal. A
pattern ending in `` *`` also matches the bare prefix (``git *`` matches ``git`` and ``git push``, not ``gits``).
Backslashes are treated as ``/`` in both the input and the pattern. Matching is a full-string, case-sensitive match.

Compiled patterns are cached; the cache only saves work, results never depend on it. It lives here, below both
``tools`` and ``permissions``, because catalog visibility needs the same matcher and ``tools`` must not import
``permissions``.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["match"]


@lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    pattern = pattern.replace("\\", "/")
    out: list[str] = []
    for ch in pattern:
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        else:
            out.append(re.escape(ch))
    regex = "".join(out)
    if regex.endswith("\\ .*"):
        regex = regex[: -len("\\ .*")] + "(?:\\ .*)?"
    return re.compile(regex, re.DOTALL)


def match(value: str, pattern: str) -> bool:
    """Return whether ``value`` matches the wildcard ``pattern`` in full."""
    if pattern == "*":
        return True
    if "\\" in value:
        value = value.replace("\\", "/")
    if "*" not in pattern and "?" not in pattern and "\\" not in pattern:
        return value == pattern  # a literal pattern (most rules' actions): no expression to look up and run
    return _compile(pattern).fullmatch(value) is not None

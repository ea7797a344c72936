"""Regular expressions compiled at their first use.

``re`` compiles a pattern in pure Python, and a module that compiles its patterns at import pays for every one of
them in each process, ``tether --version`` and a run that never matches them included (23 patterns were ~1 % of a
scripted ``tether run``; issue 38). :func:`lazy` names a pattern once and compiles it the first time it is asked
for: ``_NAME = lazy(r"[a-z]+")``, then ``_NAME().fullmatch(text)``. Two threads asking at once may both compile it;
they get equal patterns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import AnyStr

__all__ = ["lazy"]


def lazy(source: AnyStr, flags: int = 0) -> Callable[[], re.Pattern[AnyStr]]:
    """The pattern ``re.compile(source, flags)``, compiled at the first call of the returned function."""
    return functools.cache(lambda: re.compile(source, flags))

"""What passes between the sandbox driver and the ``execute`` tool: an inner call's answer and the run's result.

Kept apart from ``_sandbox`` so that importing Code Mode does not import pydantic-monty (about 0.1 s): the driver
is imported at the first ``execute`` call.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._record import record

__all__ = ["Answer", "CallHandler", "Raise", "RunResult", "Stop", "jsonable"]


@record(kw_only=False)
class Raise:
    """An inner call's answer: raise this Python exception in the code (the model can catch it)."""

    exc_type: Literal[
        "PermissionError", "ValueError", "TypeError", "TimeoutError", "RuntimeError", "AttributeError"
    ]
    message: str


@record(kw_only=False)
class Stop:
    """An inner call's answer: stop the whole run and raise ``error`` from :func:`run_code` (a declined call)."""

    error: Exception


Answer = Any
"""What an inner call answers: the value the code receives, or :class:`Raise` / :class:`Stop`."""

CallHandler = Callable[[str, Mapping[str, Any]], Awaitable[Answer]]


@dataclass(slots=True)
class RunResult:
    """What the code did: its printed text, its final expression's value, why it failed (``None``: it did not)."""

    printed: str
    value: Any = None
    error: str | None = None
    limit: bool = False
    """``error`` is a limit tether or monty enforced (not an exception the code raised)."""
    calls: int = 0
    searches: int = 0
    """``search`` calls, limited like the inner calls (each one matches the whole catalog)."""
    dropped: int = 0


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` (what the code's last expression gave) as JSON: containers kept, anything else as its repr."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth < 32 and isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if depth < 32 and isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v, depth + 1) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return repr(value)

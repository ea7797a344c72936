"""``@record``: tether's internal records, immutable by type and plain dataclasses at run time.

Every record (a stream event, a tool part, an outcome, a message) is declared once with ``@record`` (keyword-only
fields) or ``@record(kw_only=False)``. The type checker treats a record as a frozen dataclass (PEP 681
``frozen_default``): assigning a field is an error that ``pyright src`` (strict, in ``scripts/test``) reports, and
``dataclasses.replace`` makes a changed copy. Records compare and hash by value, as frozen dataclasses do.

At run time a record is a plain slotted dataclass, not a ``frozen=True`` one, by design: a frozen dataclass's
``__init__`` sets every field through ``object.__setattr__`` (a call each), so building a 21-field tool part costs
3.6 µs frozen against 0.7 µs plain, and a tool call builds about a dozen records on its way through a step (stream
events, three states of its part, their store events, the outcome, the history's content). Immutability is a
property of tether's code, checked where it is written (by the type checker) instead of on every construction.
Code that assigns a record's field anyway (untyped code, ``setattr``) is outside the contract.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["record"]

T = TypeVar("T")


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, kw_only: bool = True, eq: bool = True, slots: bool = True) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field,))
def record(
    cls: type[T] | None = None, /, *, kw_only: bool = True, eq: bool = True, slots: bool = True
) -> Any:
    """Declare a record: ``@record`` (keyword-only fields) or ``@record(kw_only=False)`` (positional too).

    ``slots=False`` keeps an instance ``__dict__`` (the tool part, which ``session/_processor._evolve`` copies).
    """

    def wrap(kind: type[T]) -> type[T]:
        return dataclasses.dataclass(kind, kw_only=kw_only, slots=slots, eq=eq, unsafe_hash=eq)

    return wrap if cls is None else wrap(cls)

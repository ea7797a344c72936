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

Declaring a record is cheap, because a command pays for every record its modules declare (about 170) and builds
only some of them (issue 38: a no-tool ``tether run`` uses about 30). ``dataclasses`` compiles four methods per class
from source (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``: ~0.3 ms a class at rest, most of declaring it).
Here ``dataclasses`` only collects the fields (``init=False, repr=False, eq=False``: ``fields``, ``replace``,
``asdict`` and ``__match_args__`` are the standard ones), and each of the four methods is a stand-in until it is first called: then
``dataclasses`` compiles that very method (on a throwaway subclass that declares no field of its own), it replaces
the stand-in on the class, and every later call costs what it did. A method the class defines itself is kept, as
``dataclasses`` keeps it. One visible difference: before a record is first built, ``inspect.signature`` of the class
shows the stand-in's ``(*args, **kwargs)``.
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
        return _declare(kind, kw_only=kw_only, eq=eq, slots=slots)

    return wrap if cls is None else wrap(cls)


def _declare(kind: type[T], *, kw_only: bool, eq: bool, slots: bool) -> type[T]:
    own = kind.__dict__
    if own.get("__doc__") is None:
        # dataclasses would write the signature there through inspect.signature (~50 µs). "Name(" starts it as
        # there, which pydantic's JSON Schema knows for no description.
        kind.__doc__ = f"{kind.__name__}(...)"
    if eq and own.get("__hash__") is not None:  # as dataclass(unsafe_hash=True) refuses it
        raise TypeError(f"Cannot overwrite attribute __hash__ in class {kind.__name__}")
    names = ("__init__", "__repr__", "__eq__", "__hash__") if eq else ("__init__", "__repr__")
    names = tuple(name for name in names if name == "__hash__" or name not in own)
    made: type[T] = dataclasses.dataclass(
        kind, init=False, repr=False, eq=False, kw_only=kw_only, slots=slots
    )
    for name in names:
        setattr(made, name, _stand_in(made, name))
    return made


def _stand_in(kind: type, name: str) -> Callable[..., Any]:
    """A method that has ``dataclasses`` compile the real ``name`` of ``kind``, puts it on the class and calls it."""

    def method(self: object, *args: Any, **kwargs: Any) -> Any:
        return _compile(kind, name)(self, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"{kind.__qualname__}.{name}"
    return method


def _compile(kind: type, name: str) -> Callable[..., Any]:
    # A subclass with no field of its own gets exactly kind's method from dataclasses (every inherited field with
    # its default, factory and kw_only; __post_init__ called if there is one; eq and hash over the compared fields).
    # Two threads may both compile it: the same method, set twice.
    probe = type(kind)(kind.__name__, (kind,), {"__module__": kind.__module__, "__doc__": kind.__doc__})
    dataclasses.dataclass(
        probe,
        init=name == "__init__",
        repr=name == "__repr__",
        eq=name == "__eq__",
        unsafe_hash=name == "__hash__",
        match_args=False,
    )
    method = probe.__dict__[name]
    method.__qualname__ = f"{kind.__qualname__}.{name}"
    setattr(kind, name, method)
    return method

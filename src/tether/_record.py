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
shows the stand-in's ``(*args, **kwargs)``. ``__init__``, the one method nearly every record needs, is written here
from the collected fields (:func:`_init`: the source ``dataclasses`` writes, without a throwaway class to process).

``@record(frozen=False)`` declares a mutable record (hook events, which hooks change in place): the type checker lets
its fields be assigned, and it is unhashable, as a mutable dataclass that compares by value.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["record"]

T = TypeVar("T")


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(
    *, kw_only: bool = True, eq: bool = True, slots: bool = True, frozen: bool = True
) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(dataclasses.field,))
def record(
    cls: type[T] | None = None,
    /,
    *,
    kw_only: bool = True,
    eq: bool = True,
    slots: bool = True,
    frozen: bool = True,
) -> Any:
    """Declare a record: ``@record`` (keyword-only fields) or ``@record(kw_only=False)`` (positional too).

    ``slots=False`` keeps an instance ``__dict__`` (the tool part, which ``session/_processor._evolve`` copies).
    ``frozen=False`` declares a mutable one (a hook's event, which the hook changes in place): the type checker lets
    its fields be assigned and, as a mutable dataclass compared by value, it is unhashable (``__hash__`` is
    ``None``, unless the class defines one).
    """

    def wrap(kind: type[T]) -> type[T]:
        return _declare(kind, kw_only=kw_only, eq=eq, slots=slots, frozen=frozen)

    return wrap if cls is None else wrap(cls)


def _declare(kind: type[T], *, kw_only: bool, eq: bool, slots: bool, frozen: bool = True) -> type[T]:
    own = kind.__dict__
    if own.get("__doc__") is None:
        # dataclasses would write the signature there through inspect.signature (~50 µs). "Name(" starts it as
        # there, which pydantic's JSON Schema knows for no description.
        kind.__doc__ = f"{kind.__name__}(...)"
    hashed = eq and frozen
    if hashed and own.get("__hash__") is not None:  # as dataclass(unsafe_hash=True) refuses it
        raise TypeError(f"Cannot overwrite attribute __hash__ in class {kind.__name__}")
    names = ("__init__", "__repr__", "__eq__", "__hash__") if hashed else ("__init__", "__repr__", "__eq__")
    names = tuple(name for name in names[: 3 if eq else 2] if name not in own) + names[3:]
    made: type[T] = dataclasses.dataclass(
        kind, init=False, repr=False, eq=False, kw_only=kw_only, slots=slots
    )
    for name in names:
        setattr(made, name, _stand_in(made, name))
    if eq and not frozen and "__hash__" not in own:
        # as dataclasses leaves a mutable class compared by value
        made.__hash__ = None  # pyright: ignore[reportAttributeAccessIssue]
    return made


def _stand_in(kind: type, name: str) -> Callable[..., Any]:
    """A method that has ``dataclasses`` compile the real ``name`` of ``kind``, puts it on the class and calls it."""

    def method(self: object, *args: Any, **kwargs: Any) -> Any:
        return _compile(kind, name)(self, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"{kind.__qualname__}.{name}"
    return method


def _compile(kind: type, name: str) -> Callable[..., Any]:
    # Two threads may both compile it: the same method, set twice.
    method = _init(kind) if name == "__init__" else None
    if method is None:
        # A subclass with no field of its own gets exactly kind's method from dataclasses (every inherited field
        # with its default, factory and kw_only; __post_init__ called if there is one; eq and hash over the compared
        # fields).
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


class _Factory:
    """The default of a field with a ``default_factory`` in the signature (dataclasses shows ``<factory>`` too)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _init(kind: type) -> Callable[..., Any] | None:
    """``kind``'s ``__init__`` as ``dataclasses`` writes it (``_init_fn``: the same source, parameters, defaults,
    factories, ``__post_init__`` call), from its collected fields: a no-tool ``tether run`` builds ~50 records' first
    instances, and the throwaway subclass ``dataclasses`` would process for each was ~40 % of compiling its
    ``__init__`` (issue 38). ``None`` for a record with an ``InitVar`` (``dataclasses`` then writes it)."""
    fields = dataclasses.fields(kind)
    real = {f.name for f in fields}
    for pseudo in getattr(kind, "__dataclass_fields__", {}).values():
        if pseudo.name not in real and (
            isinstance(pseudo.type, dataclasses.InitVar) or "InitVar" in str(pseudo.type)
        ):
            return None
    self_name = "__dataclass_self__" if "self" in real else "self"
    slots = "__slots__" in kind.__dict__
    values: dict[str, Any] = {"_HAS_DEFAULT_FACTORY": _FACTORY, "_return_type": None}
    body: list[str] = []
    params: list[str] = []
    keywords: list[str] = []
    seen_default = False
    for f in fields:
        values[f"_type_{f.name}"] = f.type
        default = f"_dflt_{f.name}"
        if f.default_factory is not dataclasses.MISSING:
            values[default] = f.default_factory
            value = (
                f"{default}() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}" if f.init else f"{default}()"
            )
            given = "=_HAS_DEFAULT_FACTORY"
        elif f.default is not dataclasses.MISSING:
            values[default] = f.default
            value = f.name if f.init else default if slots else None
            given = f"={default}"
        else:
            value = f.name if f.init else None
            given = ""
        if value is not None:
            body.append(f"  {self_name}.{f.name}={value}")
        if not f.init:
            continue
        if not f.kw_only:
            if given:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        (keywords if f.kw_only else params).append(f"{f.name}:_type_{f.name}{given}")
    if hasattr(kind, "__post_init__"):
        body.append(f"  {self_name}.__post_init__()")
    arguments = ",".join([self_name, *params, *(["*", *keywords] if keywords else [])])
    lines = "\n".join(body or ["  pass"])
    source = f"def __create_fn__({', '.join(values)}):\n def __init__({arguments})->_return_type:\n{lines}\n return __init__"
    module = sys.modules.get(kind.__module__)
    namespace: dict[str, Any] = {}
    # in the module's globals, as dataclasses writes its methods; not under this module's __future__ annotations
    code = compile(source, "<string>", "exec", dont_inherit=True)
    exec(code, module.__dict__ if module is not None else {}, namespace)
    return namespace["__create_fn__"](**values)

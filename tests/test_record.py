"""``@record``: frozen to the type checker, a plain slotted dataclass at run time (see ``tether/_record.py``)."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import threading
from typing import Any

import pytest

from tether._record import record


@record
class Point:
    x: int
    y: int = 0


@record(kw_only=False)
class Pair:
    a: str
    b: str


@record(kw_only=False, eq=False)
class Handle:
    name: str


@record(slots=False)
class Open:
    value: int


def test_fields_are_keyword_only_by_default_and_positional_when_asked() -> None:
    with pytest.raises(TypeError):
        Point(1, 2)  # type: ignore[misc]
    assert Point(x=1) == Point(x=1, y=0)
    assert Pair("a", "b").b == "b"


def test_records_compare_and_hash_by_value_as_frozen_dataclasses_do() -> None:
    assert Point(x=1, y=2) == Point(x=1, y=2) != Point(x=2, y=2)
    assert hash(Point(x=1, y=2)) == hash(Point(x=1, y=2))
    assert len({Point(x=1), Point(x=1), Point(x=2)}) == 2
    assert Handle("a") != Handle("a")  # eq=False: identity, as a frozen eq=False dataclass
    assert len({Handle("a"), Handle("a")}) == 2


def test_slots_by_default_and_a_dict_when_asked() -> None:
    assert not hasattr(Point(x=1), "__dict__")
    with pytest.raises(AttributeError):
        Point(x=1).z = 3  # type: ignore[attr-defined]
    assert Open(value=1).__dict__ == {"value": 1}


def test_replace_makes_a_changed_copy() -> None:
    p = Point(x=1, y=2)
    q = dataclasses.replace(p, y=5)
    assert (p.y, q.y) == (2, 5)


def test_the_type_checker_is_told_records_are_frozen() -> None:
    # PEP 681: pyright (strict, scripts/test) reads this and reports an assignment to a record's field.
    transform = record.__dataclass_transform__  # type: ignore[attr-defined]
    options = {
        **transform,
        **transform.get("kwargs", {}),
    }  # Python 3.11 keeps frozen_default among the kwargs
    assert options["frozen_default"] is True
    assert options["kw_only_default"] is True


def _twin(kind: type, **options: bool) -> type:
    """The plain dataclass ``@record`` stood for before issue 38: four methods compiled at declaration."""
    return dataclasses.dataclass(kind, unsafe_hash=options.pop("eq", True), **options)


def _declare_pair() -> tuple[type, type]:
    """The same class body declared as a record and as its compiled dataclass twin."""

    def body() -> type:
        class Base:
            first: int
            hidden: str = dataclasses.field(default="h", repr=False, compare=False)

        return Base

    record_base = record(body())

    @record
    class Rec(record_base):  # pyright: ignore[reportUntypedBaseClass]
        items: list[int] = dataclasses.field(default_factory=list[int])
        label: str = ""

        def __post_init__(self) -> None:
            self.items.append(len(self.label))

    twin_base = _twin(body(), kw_only=True, slots=True)

    @dataclasses.dataclass(kw_only=True, slots=True, unsafe_hash=True)
    class Twin(twin_base):  # pyright: ignore[reportUntypedBaseClass]
        items: list[int] = dataclasses.field(default_factory=list[int])
        label: str = ""

        def __post_init__(self) -> None:
            self.items.append(len(self.label))

    return Rec, Twin


def test_a_record_compiles_its_methods_at_first_use_not_at_declaration() -> None:
    rec, twin = _declare_pair()
    assert list(inspect.signature(rec).parameters) == ["args", "kwargs"]  # the stand-in: nothing compiled yet
    made = rec(first=1, label="ab")
    assert str(inspect.signature(rec)) == str(inspect.signature(twin))
    assert rec.__init__.__qualname__ == "_declare_pair.<locals>.Rec.__init__"
    assert made.items == [2]
    assert (
        rec.__dict__["__init__"].__code__.co_name == "__init__"
    )  # the compiled method replaced the stand-in
    assert rec.__dict__["__repr__"].__code__.co_name != "__repr__"  # each method at its own first use


@pytest.mark.parametrize("first_use", ["init", "repr", "eq", "hash"])
def test_a_record_behaves_as_the_compiled_dataclass_whichever_method_is_used_first(first_use: str) -> None:
    rec, twin = _declare_pair()
    # an instance built without __init__ (as pydantic builds one) lets repr, eq or hash be the first use
    bare = object.__new__(rec)
    for name, value in {"first": 1, "hidden": "x", "items": [], "label": "a"}.items():
        object.__setattr__(bare, name, value)
    if first_use == "repr":
        assert repr(bare).endswith(".Rec(first=1, items=[], label='a')")
    elif first_use == "eq":
        assert bare != rec(first=1, label="a")  # items [] against the built one's [1]
    elif first_use == "hash":
        with pytest.raises(TypeError, match="unhashable"):
            hash(bare)  # a list field, as the dataclass's own hash
    made, other = rec(first=1, label="ab"), twin(first=1, label="ab")
    assert (
        repr(made).split("Rec", 1)[1] == repr(other).split("Twin", 1)[1] == "(first=1, items=[2], label='ab')"
    )
    assert made == rec(first=1, hidden="other", label="ab")  # compare=False left out, as there
    assert made != rec(first=2, label="ab") and made != other  # another class is never equal
    assert rec(first=1).items == [0] and twin(first=1).items == [0]
    with pytest.raises(TypeError):
        rec(1)
    assert dataclasses.asdict(made) == dataclasses.asdict(other)
    assert dataclasses.replace(made, first=3).first == 3
    assert rec.__match_args__ == twin.__match_args__


def test_a_method_the_class_defines_is_kept_and_an_explicit_hash_refused() -> None:
    @record(kw_only=False)
    class Own:
        value: int

        def __init__(self, *values: int) -> None:
            object.__setattr__(self, "value", sum(values))

        def __repr__(self) -> str:
            return "own"

    assert Own(1, 2).value == 3 and repr(Own(1)) == "own" and Own(1) == Own(1)

    with pytest.raises(TypeError, match="__hash__"):

        @record
        class Hashed:
            value: int

            def __hash__(self) -> int:
                return 0


def test_threads_building_a_fresh_record_at_once_all_get_correct_instances() -> None:
    for _ in range(20):
        rec, _twin_kind = _declare_pair()
        start = threading.Barrier(4)
        built: list[object] = []

        def build(start: threading.Barrier = start, rec: type = rec, built: list[object] = built) -> None:
            start.wait(timeout=60)
            built.append(rec(first=1, label="abc"))

        workers = [threading.Thread(target=build) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=60)
        assert len(built) == 4 and all(made == built[0] for made in built)
        assert rec.__dict__["__init__"].__code__.co_name == "__init__"


def _written(init: object) -> tuple[object, ...]:
    """What a compiled ``__init__`` is made of: its byte code and names, signature, defaults, annotations and the
    values it closes over (dataclasses' factory sentinel and ours both read ``<factory>``)."""
    code = init.__code__  # type: ignore[attr-defined]
    cells = tuple(repr(cell.cell_contents) for cell in init.__closure__ or ())  # type: ignore[attr-defined]
    return (
        code.co_code,
        code.co_varnames,
        code.co_freevars,
        code.co_names,
        str(inspect.signature(init)),  # type: ignore[arg-type]
        init.__annotations__,  # type: ignore[attr-defined]
        cells,
    )


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11),
    reason="compared with the source Python 3.11's dataclasses writes (later versions name its locals otherwise); "
    "the behaviour on every version: test_a_records_init_behaves_as_the_dataclass_one",
)
@pytest.mark.parametrize(
    "which", ["Point", "Pair", "Open", "Rec", "TextPart", "ToolPart", "Agent", "StaticRules"]
)
def test_a_records_init_is_the_one_dataclasses_writes(which: str) -> None:
    # _record writes __init__ from the collected fields (issue 38: no throwaway subclass for dataclasses to process
    # at each record's first instance); it must be byte for byte the method dataclasses compiles for it
    from tether._record import _init  # pyright: ignore[reportPrivateUsage]
    from tether.permissions._agents import Agent  # pyright: ignore[reportPrivateUsage]
    from tether.permissions._resolve import StaticRules  # pyright: ignore[reportPrivateUsage]
    from tether.records import TextPart, ToolPart

    kinds = {"Point": Point, "Pair": Pair, "Open": Open, "Rec": _declare_pair()[0]}
    kinds |= {"TextPart": TextPart, "ToolPart": ToolPart, "Agent": Agent, "StaticRules": StaticRules}
    kind = kinds[which]
    meta: Any = type(kind)  # the record's own metaclass, whatever it is
    probe = meta(kind.__name__, (kind,), {"__module__": kind.__module__, "__doc__": kind.__doc__})
    dataclasses.dataclass(probe, init=True, repr=False, eq=False, match_args=False)
    ours = _init(kind)
    assert ours is not None
    assert _written(ours) == _written(probe.__dict__["__init__"])


def test_a_records_init_behaves_as_the_dataclass_one() -> None:
    # On any Python: the same signature, and every field set as a dataclass of the same declaration sets it
    # (positional and keyword, a default, a factory, init=False with a default on a slotted class, __post_init__).
    posted: list[str] = []

    def declare(decorate: Any) -> type:
        class Kind:
            first: int
            second: str = "s"
            items: list[int] = dataclasses.field(default_factory=lambda: [1])
            fixed: str = dataclasses.field(default="f", init=False)
            named: int = dataclasses.field(default=0, kw_only=True)

            def __post_init__(self) -> None:
                posted.append(type(self).__name__)

        return decorate(Kind)

    ours = declare(record(kw_only=False))
    theirs = declare(lambda kind: dataclasses.dataclass(kind, frozen=True, slots=True))
    calls: tuple[tuple[tuple[Any, ...], dict[str, Any]], ...] = (((1,), {}), ((1, "x", [2]), {"named": 3}))
    for args, kwargs in calls:
        made, twin = ours(*args, **kwargs), theirs(*args, **kwargs)
        assert [getattr(made, f.name) for f in dataclasses.fields(made)] == [
            getattr(twin, f.name) for f in dataclasses.fields(twin)
        ]
    assert ours(1).items is not ours(1).items  # a new list per instance
    assert posted == ["Kind"] * 6
    # compiled at the first instance: now the method itself
    assert str(inspect.signature(ours.__init__)) == str(inspect.signature(theirs.__init__))


def test_a_mutable_record_is_assigned_compared_and_unhashable_as_a_mutable_dataclass() -> None:
    # frozen=False (hook events, which hooks change in place): the methods are still compiled at first use
    @record(frozen=False)
    class Event:
        tool: str
        input: object = None

    @dataclasses.dataclass(kw_only=True, slots=True)
    class Twin:
        tool: str
        input: object = None

    assert list(inspect.signature(Event).parameters) == ["args", "kwargs"]  # nothing compiled at declaration
    event = Event(tool="read", input={"path": "a"})
    event.input = {"path": "b"}
    assert event == Event(tool="read", input={"path": "b"}) and event != Event(tool="edit")
    assert Event.__hash__ is None and Twin.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(event)
    assert repr(event).endswith("Event(tool='read', input={'path': 'b'})")
    assert str(inspect.signature(Event)) == str(inspect.signature(Twin))
    from tether.tools import AfterEvent, BeforeEvent

    assert BeforeEvent.__hash__ is None and AfterEvent.__hash__ is None

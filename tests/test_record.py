"""``@record``: frozen to the type checker, a plain slotted dataclass at run time (see ``tether/_record.py``)."""

from __future__ import annotations

import dataclasses

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

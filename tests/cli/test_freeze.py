"""The CLI's long-lived commands keep start-up's objects out of later garbage collections (issue 14)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tether.cli import _common


def _tracked(value: object) -> bool:
    """Whether a collection would look at ``value`` (it is in one of the three generations)."""
    return any(o is value for generation in range(3) for o in gc.get_objects(generation))


@pytest.fixture
def unfrozen(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    gc.unfreeze()
    monkeypatch.setattr(_common, "_frozen", False)
    yield
    gc.unfreeze()  # the test process collects as before


def test_freeze_startup_moves_what_exists_out_of_collections_once(unfrozen: None) -> None:
    before = [object()]  # a tracked container that exists at start-up
    assert gc.get_freeze_count() == 0
    _common.freeze_startup()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    assert not _tracked(before)

    later = [object()]  # made after start-up: collected as usual
    _common.freeze_startup()  # once per process: a later call freezes nothing more
    assert gc.get_freeze_count() == frozen
    assert _tracked(later)

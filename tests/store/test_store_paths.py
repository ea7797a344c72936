"""The stores' public paths: ``tether.store`` now, ``tether.session``'s old names for one release (with a warning)."""

import ast
import importlib
from pathlib import Path

import pytest

import tether.records
import tether.session
import tether.store

MOVED = ["PostgresStore", "SQLiteStore", "SessionStore", "StoredMessage"]


@pytest.mark.parametrize("name", MOVED)
def test_the_old_session_path_warns_and_gives_the_same_class(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"tether\.session\.{name} moved to tether\.store\.{name}"):
        old = getattr(tether.session, name)
    assert old is getattr(tether.store, name)


def test_the_old_path_works_in_a_from_import() -> None:
    with pytest.warns(DeprecationWarning, match="tether.store.SQLiteStore"):
        from tether.session import SQLiteStore
    assert SQLiteStore is tether.store.SQLiteStore


def test_the_moved_names_are_not_in_the_session_surface_and_unknown_names_still_fail() -> None:
    assert not set(MOVED) & set(tether.session.__all__)
    with pytest.raises(AttributeError, match="NoSuchStore"):
        _ = tether.session.NoSuchStore  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]


def test_the_records_are_the_same_objects_from_the_session_without_a_warning() -> None:
    # filterwarnings=error: a warning here fails the test
    for name in set(tether.records.__all__) & set(tether.session.__all__):
        assert getattr(tether.session, name) is getattr(tether.records, name)
    assert "ToolPart" in tether.session.__all__


def _imports(package: str) -> set[str]:
    """The modules a package's files import (absolute, from its relative imports)."""
    found: set[str] = set()
    for path in sorted(Path(importlib.import_module(package).__file__ or "").parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module:
                found.add("tether." + node.module)
    return found


def test_the_records_import_neither_the_store_nor_the_runner() -> None:
    assert not {m for m in _imports("tether.records") if m.startswith(("tether.store", "tether.session"))}


def test_the_store_never_imports_the_runner_and_uses_the_records_only_through_their_surfaces() -> None:
    imports = _imports("tether.store")
    assert not {m for m in imports if m.startswith("tether.session")}
    assert {m for m in imports if m.startswith("tether.records")} <= {
        "tether.records",
        "tether.records.internal",
    }
    assert {m for m in imports if m.startswith("tether.permissions")} <= {"tether.permissions"}


def test_an_unknown_name_of_the_store_fails_as_usual() -> None:
    with pytest.raises(AttributeError, match="NoSuchStore"):
        _ = tether.store.NoSuchStore  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]

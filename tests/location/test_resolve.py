from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.errors import PathError, UsageError
from tether.location import Location


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    (root / "actual").mkdir()
    outside.mkdir()
    (root / "src" / "main.py").write_text("print()\n")
    (outside / "secret.txt").write_text("secret\n")
    return root, outside


def test_relative_path_is_internal_with_relative_resource(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    resolved = Location(root).resolve("src/main.py")
    assert resolved.internal and resolved.external is None
    assert resolved.resource == "src/main.py"
    assert resolved.path == root / "src" / "main.py"


def test_root_itself_is_dot(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    assert Location(root).resolve(".", "directory").resource == "."


def test_absolute_path_inside_needs_no_external_approval(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    resolved = Location(root).resolve(str(root / "src" / "main.py"))
    assert resolved.internal and resolved.external is None and resolved.resource == "src/main.py"


def test_dotdot_escape_is_external_with_directory_request(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    resolved = Location(root).resolve("../outside/secret.txt")
    assert not resolved.internal
    assert resolved.resource == (outside / "secret.txt").as_posix()
    assert resolved.external is not None
    assert resolved.external.directory == outside.as_posix()
    assert resolved.external.resource == f"{outside.as_posix()}/*"
    assert resolved.external.save == resolved.external.resource


def test_absolute_outside_path_is_external(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    resolved = Location(root).resolve(str(outside / "new" / "nested" / "file.txt"))
    assert resolved.external is not None
    # a missing nested path is approved at its nearest existing ancestor
    assert resolved.external.resource == f"{outside.as_posix()}/*"


def test_external_directory_kind_uses_the_directory_itself(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    resolved = Location(root).resolve(str(outside), "directory")
    assert resolved.external is not None and resolved.external.directory == outside.as_posix()
    as_file = Location(root).resolve(str(outside), "file")
    assert as_file.external is not None and as_file.external.directory == outside.parent.as_posix()


def test_external_save_is_the_containing_project_root(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (outside / ".git").mkdir()
    (outside / "pkg").mkdir()
    resolved = Location(root).resolve(str(outside / "pkg" / "mod.py"))
    assert resolved.external is not None
    assert resolved.external.resource == f"{(outside / 'pkg').as_posix()}/*"
    assert resolved.external.save == f"{outside.as_posix()}/*"


def test_symlink_escape_is_rejected(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "escape").symlink_to(outside)
    with pytest.raises(PathError) as info:
        Location(root).resolve("escape/secret.txt")
    assert info.value.reason == "location_escape"
    with pytest.raises(PathError) as prospective:
        Location(root).resolve("escape/new.txt")
    assert prospective.value.reason == "location_escape"


def test_dangling_symlink_pointing_outside_is_rejected(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    with pytest.raises(PathError) as info:
        Location(root).resolve("dangling")
    assert info.value.reason == "location_escape"


def test_internal_symlink_is_followed_to_its_real_resource(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "linked").symlink_to(root / "actual")
    resolved = Location(root).resolve("linked/new.txt")
    assert resolved.internal and resolved.resource == "actual/new.txt"
    assert resolved.path == root / "actual" / "new.txt"


def test_symlinked_root_still_classifies_paths_inside(tmp_path: Path, layout: tuple[Path, Path]) -> None:
    root, _ = layout
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    loc = Location(alias)
    assert loc.root == root
    assert loc.resolve(str(alias / "src" / "main.py")).resource == "src/main.py"
    assert loc.resolve(str(root / "src" / "main.py")).internal


def test_file_as_ancestor_fails(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    with pytest.raises(PathError) as info:
        Location(root).resolve("src/main.py/child.txt")
    assert info.value.reason == "non_directory_ancestor"


def test_tilde_expands_to_home(
    layout: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = layout
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    resolved = Location(root).resolve("~/notes.md")
    assert resolved.path == home / "notes.md" and not resolved.internal
    assert Location(root).resolve("~", "directory").path == home
    literal = Location(root).resolve("~draft.md")
    assert literal.internal and literal.resource == "~draft.md"


def test_location_at_home_makes_tilde_internal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    resolved = Location(tmp_path).resolve("~/a.txt")
    assert resolved.internal and resolved.resource == "a.txt"


def test_trailing_newlines_and_whitespace_are_stripped_but_original_kept(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    resolved = Location(root).resolve("  src/main.py\n\n")
    assert resolved.resource == "src/main.py"
    assert resolved.original == "  src/main.py\n\n"


@pytest.mark.parametrize("path", ["", "   \n", "a\0b"])
def test_empty_or_nul_path_is_invalid(layout: tuple[Path, Path], path: str) -> None:
    root, _ = layout
    with pytest.raises(PathError) as info:
        Location(root).resolve(path)
    assert info.value.reason == "invalid"


def test_unicode_names_resolve(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    assert Location(root).resolve("données/é.txt").resource == "données/é.txt"


def test_location_root_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        Location(tmp_path / "missing")
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageError):
        Location(tmp_path / "f")


@pytest.mark.anyio
async def test_aresolve_matches_resolve(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    loc = Location(root)
    assert await loc.aresolve("../outside/x") == loc.resolve("../outside/x")


def test_root_is_real_path(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    assert Location(root).root == Path(os.path.realpath(root))

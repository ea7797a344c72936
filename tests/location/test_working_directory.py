"""A Location's working directory (``repo/pkg``) inside its project root (``repo``), as OpenCode's instance
``directory`` inside its ``worktree``: relative paths join the working directory; what is external, and what a
permission resource names, is judged against the root."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.errors import PathError, UsageError
from tether.location import Location


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "README.md").write_text("hello\n")
    (root / "pkg" / "x.txt").write_text("x\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return root


def test_relative_paths_join_the_working_directory(repo: Path) -> None:
    loc = Location(repo, directory=repo / "pkg")
    resolved = loc.resolve("x.txt")
    assert resolved.path == repo / "pkg" / "x.txt"
    assert resolved.internal
    assert resolved.resource == "pkg/x.txt"  # relative to the root: a rule on pkg/* means the same everywhere


def test_a_parent_inside_the_root_is_internal(repo: Path) -> None:
    resolved = Location(repo, directory=repo / "pkg").resolve("../README.md")
    assert resolved.internal and resolved.external is None
    assert resolved.resource == "README.md"
    assert resolved.path == repo / "README.md"


def test_dot_is_the_working_directory_and_its_resource_is_root_relative(repo: Path) -> None:
    resolved = Location(repo, directory=repo / "pkg" / "deep").resolve(".", "directory")
    assert resolved.path == repo / "pkg" / "deep"
    assert resolved.resource == "pkg/deep"


def test_leaving_the_root_from_the_working_directory_is_external(repo: Path) -> None:
    outside = repo.parent / "outside"
    resolved = Location(repo, directory=repo / "pkg").resolve("../../outside/secret.txt")
    assert not resolved.internal
    assert resolved.external is not None
    assert resolved.external.directory == outside.as_posix()
    assert resolved.resource == (outside / "secret.txt").as_posix()


def test_the_working_directory_s_parent_outside_the_root_is_external(repo: Path) -> None:
    # ``..`` of the root itself, spelled from the working directory: outside, whatever the working directory is
    resolved = Location(repo, directory=repo / "pkg").resolve("../..", "directory")
    assert not resolved.internal and resolved.external is not None
    assert resolved.external.directory == repo.parent.as_posix()


def test_a_symlink_in_the_working_directory_leading_out_is_an_escape(repo: Path) -> None:
    outside = repo.parent / "outside"
    (repo / "pkg" / "out").symlink_to(outside)
    loc = Location(repo, directory=repo / "pkg")
    with pytest.raises(PathError) as caught:
        loc.resolve("out/secret.txt")
    assert caught.value.reason == "location_escape"
    # spelled by its real path, it is an external directory that must be approved
    real = loc.resolve(str(outside / "secret.txt"))
    assert real.external is not None and not real.internal


def test_a_working_directory_outside_the_root_is_refused(repo: Path) -> None:
    with pytest.raises(UsageError, match="outside the project root"):
        Location(repo, directory=repo.parent / "outside")
    with pytest.raises(UsageError, match="outside the project root"):
        Location(repo / "pkg", directory=repo)  # the parent of the root


def test_a_working_directory_leaving_the_root_through_a_symlink_is_refused(repo: Path) -> None:
    (repo / "pkg" / "out").symlink_to(repo.parent / "outside")
    with pytest.raises(UsageError, match="outside the project root"):
        Location(repo, directory=repo / "pkg" / "out")
    with pytest.raises(UsageError, match="outside the project root"):
        Location(repo, directory="pkg/../../outside")


def test_a_missing_working_directory_is_refused(repo: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        Location(repo, directory=repo / "nope")
    with pytest.raises(UsageError, match="not a directory"):
        Location(repo, directory=repo / "README.md")


def test_a_relative_working_directory_is_relative_to_the_root(repo: Path) -> None:
    loc = Location(repo, directory="pkg")
    assert loc.directory == repo / "pkg"
    assert loc.resolve("x.txt").resource == "pkg/x.txt"


def test_a_working_directory_spelled_through_a_symlink_joins_from_its_real_path(repo: Path) -> None:
    (repo / "alias").symlink_to(repo / "pkg")
    loc = Location(repo, directory=repo / "alias")
    assert loc.directory == repo / "pkg"
    assert loc.resolve("x.txt").resource == "pkg/x.txt"
    # as the shell's cwd: ``..`` of the real directory, not of the alias
    assert loc.resolve("../README.md").resource == "README.md"


def test_a_root_given_through_a_symlink_keeps_lexical_containment(repo: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(repo)
    loc = Location(link, directory=link / "pkg")
    assert loc.root == repo and loc.lexical_root == link and loc.directory == repo / "pkg"
    assert loc.resolve(str(link / "README.md")).resource == "README.md"
    (repo / "pkg" / "out").symlink_to(tmp_path / "outside")
    with pytest.raises(PathError) as caught:
        loc.resolve(str(link / "pkg" / "out" / "secret.txt"))
    assert caught.value.reason == "location_escape"


def test_without_a_working_directory_the_root_is_it(repo: Path) -> None:
    loc = Location(repo)
    assert loc.directory == loc.root == repo
    assert loc.resolve("pkg/x.txt").resource == "pkg/x.txt"
    assert repr(loc) == f"Location({str(repo)!r})"
    assert "directory=" in repr(Location(repo, directory="pkg"))


_BASE = Path(tempfile.mkdtemp(prefix="tether-workdir-prop-"))
_ROOT = _BASE / "root"
_OUTSIDE = _BASE / "outside"
(_ROOT / "pkg" / "sub").mkdir(parents=True)
_OUTSIDE.mkdir()
(_ROOT / "pkg" / "out").symlink_to(_OUTSIDE)
(_ROOT / "pkg" / "up").symlink_to(_ROOT)
(_ROOT / "file.txt").write_text("x")

_COMPONENTS = st.sampled_from(["..", ".", "pkg", "sub", "out", "up", "file.txt", "new", "outside", "root"])
_PREFIXES = st.sampled_from(["", "/", str(_ROOT) + "/", str(_OUTSIDE) + "/", "../", "../../"])


@settings(max_examples=300, deadline=None)
@given(prefix=_PREFIXES, parts=st.lists(_COMPONENTS, min_size=0, max_size=6))
def test_internal_from_a_working_directory_means_inside_the_root(prefix: str, parts: list[str]) -> None:
    path = prefix + "/".join(parts)
    loc = Location(_ROOT, directory=_ROOT / "pkg")
    try:
        resolved = loc.resolve(path)
    except PathError:
        return
    real = os.path.realpath(resolved.path)
    inside = real == str(_ROOT) or real.startswith(str(_ROOT) + os.sep)
    assert resolved.internal == inside, (path, real)
    if inside:
        assert resolved.resource == Path(os.path.relpath(real, _ROOT)).as_posix()
    else:
        assert resolved.external is not None

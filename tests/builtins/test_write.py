from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio


async def test_creates_file_and_parents(project, root: Path) -> None:
    outcome = await project.ok("write", path="a/b/new.txt", content="hello\n")
    assert outcome.content[0].text == "Created file successfully: a/b/new.txt"  # type: ignore[union-attr]
    assert (root / "a" / "b" / "new.txt").read_bytes() == b"hello\n"
    meta = outcome.metadata
    assert meta is not None and meta["existed"] is False and meta["operation"] == "write"
    assert meta["files"][0]["status"] == "added" and "+hello" in meta["files"][0]["patch"]


async def test_overwrites_and_returns_a_unified_diff(project, root: Path) -> None:
    (root / "f.txt").write_text("old\n")
    outcome = await project.ok("write", path="f.txt", content="new\n")
    assert outcome.content[0].text == "Wrote file successfully: f.txt"  # type: ignore[union-attr]
    diff = outcome.metadata["files"][0]  # type: ignore[index]
    assert diff["patch"].startswith("--- a/f.txt\n+++ b/f.txt\n")
    assert "-old\n+new\n" in diff["patch"] and (diff["additions"], diff["deletions"]) == (1, 1)


async def test_preserves_bom_crlf_and_mode(project, root: Path) -> None:
    target = root / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    os.chmod(target, 0o640)
    await project.ok("write", path="win.txt", content="x\ny\n")
    assert target.read_bytes() == b"\xef\xbb\xbfx\r\ny\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


async def test_writing_a_directory_fails(project, root: Path) -> None:
    (root / "d").mkdir()
    assert (await project.fail("write", path="d", content="x")).error == "Path is a directory, not a file: d"


async def test_file_as_parent_fails_clearly(project, root: Path) -> None:
    (root / "f").write_text("")
    failed = await project.fail("write", path="f/child.txt", content="x")
    assert "is not a directory" in failed.error


async def test_write_through_internal_symlink_updates_the_target(project, root: Path) -> None:
    (root / "real.txt").write_text("a\n")
    (root / "alias.txt").symlink_to(root / "real.txt")
    await project.ok("write", path="alias.txt", content="b\n")
    assert (root / "alias.txt").is_symlink() and (root / "real.txt").read_text() == "b\n"
    assert project.permissions.asked == [("edit", ("real.txt",))]


async def test_outside_write_asks_external_directory_then_edit(project, root: Path, tmp_path: Path) -> None:
    await project.ok("write", path="../outside/o.txt", content="o\n")
    assert project.permissions.asked == [
        ("external_directory", (f"{tmp_path.as_posix()}/*",)),
        ("edit", ((tmp_path / "outside" / "o.txt").as_posix(),)),
    ]
    assert (tmp_path / "outside" / "o.txt").read_text() == "o\n"

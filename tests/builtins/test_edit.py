from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.anyio


async def test_exact_single_replacement_with_short_diff(project, root: Path) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\n")
    outcome = await project.ok("edit", path="m.py", old_string="b = 2", new_string="b = 3")
    assert (root / "m.py").read_text() == "a = 1\nb = 3\n"
    assert outcome.content[0].text == (  # type: ignore[union-attr]
        "Edited file successfully: m.py\nReplacements: 1\n```diff\n-b = 2\n+b = 3\n```"
    )
    assert outcome.metadata is not None and outcome.metadata["replacements"] == 1


async def test_short_diff_is_capped(project, root: Path) -> None:
    old = "\n".join(f"line{i}" for i in range(8))
    (root / "f.txt").write_text(old + "\n")
    text = await project.text("edit", path="f.txt", old_string=old, new_string="z" * 300)
    assert "-line5\n-...\n+" + "z" * 240 + "...\n```" in text


async def test_identical_strings_fail_first(project) -> None:
    failed = await project.fail("edit", path="/nonexistent/../x", old_string="a", new_string="a")
    assert failed.error == "No changes to apply: old_string and new_string are identical."
    assert project.permissions.requests == []


async def test_empty_old_string_fails_before_resolving(project) -> None:
    failed = await project.fail("edit", path="x", old_string="", new_string="a")
    assert failed.error == "old_string must not be empty. Use write to create or overwrite a file."
    assert project.permissions.requests == []


async def test_not_found(project, root: Path) -> None:
    (root / "f.txt").write_text("hello\n")
    failed = await project.fail("edit", path="f.txt", old_string="bye", new_string="x")
    assert failed.error.startswith("Could not find old_string in the file. It must match exactly")


async def test_ambiguous_match_is_refused_with_the_lines_of_every_candidate(project, root: Path) -> None:
    (root / "f.txt").write_text("x = 1\nx = 1\n")
    failed = await project.fail("edit", path="f.txt", old_string="x = 1", new_string="x = 2")
    assert failed.error == (
        "old_string matches 2 places (lines 1, 2). Add more surrounding lines to old_string to make it unique, "
        "or set replace_all to true to replace every one."
    )
    assert (root / "f.txt").read_text() == "x = 1\nx = 1\n"


async def test_replace_all_counts(project, root: Path) -> None:
    (root / "f.txt").write_text("foo foo\nfoo\n")
    text = await project.text("edit", path="f.txt", old_string="foo", new_string="bar", replace_all=True)
    assert "Replacements: 3" in text and (root / "f.txt").read_text() == "bar bar\nbar\n"


async def test_missing_file_and_directory(project, root: Path) -> None:
    assert (await project.fail("edit", path="no.txt", old_string="a", new_string="b")).error == (
        "File not found: no.txt"
    )
    (root / "d").mkdir()
    assert (await project.fail("edit", path="d", old_string="a", new_string="b")).error == (
        "Path is a directory, not a file: d"
    )


async def test_invalid_utf8(project, root: Path) -> None:
    (root / "l.txt").write_bytes(b"caf\xe9\n")
    failed = await project.fail("edit", path="l.txt", old_string="caf", new_string="x")
    assert failed.error == "File is not valid UTF-8: l.txt"


async def test_crlf_and_bom_are_preserved(project, root: Path) -> None:
    (root / "w.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    await project.ok("edit", path="w.txt", old_string="one\ntwo", new_string="1\n2\n2.5")
    assert (root / "w.txt").read_bytes() == b"\xef\xbb\xbf1\r\n2\r\n2.5\r\nthree\r\n"


async def test_indentation_flexible_match_reindents_new_string_to_the_file(project, root: Path) -> None:
    (root / "f.py").write_text("def f():\n    if x:\n        return 1\n")
    await project.ok("edit", path="f.py", old_string="if x:\n    return 1", new_string="if y:\n    return 2")
    assert (root / "f.py").read_text() == "def f():\n    if y:\n        return 2\n"


async def test_lenient_match_in_two_places_is_refused_with_how_and_where(project, root: Path) -> None:
    text = "class A:\n    if x:\n        go()\n\nif x:\n    go()\n"
    (root / "f.py").write_text(text)
    failed = await project.fail("edit", path="f.py", old_string="if x: \ngo()", new_string="if y:\n    go()")
    assert failed.error.startswith("old_string matches 2 places after ignoring indentation (lines 2, 5). ")
    assert (root / "f.py").read_text() == text


async def test_unmappable_indentation_is_refused_and_the_file_is_unchanged(project, root: Path) -> None:
    text = "class A:\n    def f(self):\n        a = 1\n        b = 2\n"
    (root / "f.py").write_text(text)
    failed = await project.fail(
        "edit", path="f.py", old_string="\t\ta = 1\n\t\tb = 2", new_string="\t\tif a:\n\t\t\tb = 2"
    )
    assert failed.error.startswith(
        "old_string matches line 3 only after ignoring indentation, and new_string's indentation cannot be carried"
    )
    assert (root / "f.py").read_text() == text


async def test_edit_asks_edit_with_save_star(project, root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    await project.ok("edit", path="f.txt", old_string="a", new_string="b")
    assert project.permissions.asked == [("edit", ("f.txt",))]
    assert tuple(project.permissions.requests[0].save) == ("*",)

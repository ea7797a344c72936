from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.builtins.edit import MAX_DIFF_LINES, _written_diff

pytestmark = pytest.mark.anyio


async def test_exact_single_replacement_with_short_diff(project, root: Path) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\n")
    outcome = await project.ok("edit", path="m.py", old_string="b = 2", new_string="b = 3")
    assert (root / "m.py").read_text() == "a = 1\nb = 3\n"
    assert outcome.content[0].text == (  # type: ignore[union-attr]
        "Edited file successfully: m.py\nReplacements: 1\n```diff\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n \n```"
    )
    assert outcome.metadata is not None and outcome.metadata["replacements"] == 1


async def test_short_diff_is_capped(project, root: Path) -> None:
    old = "\n".join(f"line{i}" for i in range(20))
    (root / "f.txt").write_text(old + "\n")
    text = await project.text("edit", path="f.txt", old_string=old, new_string="z" * 300)
    assert "-line14\n... (7 more diff lines)\n```" in text
    assert "+z" not in text  # the 22nd diff line went with the rest
    text = await project.text("edit", path="f.txt", old_string="z" * 300, new_string="y" * 300)
    assert "-" + "z" * 239 + "...\n+" + "y" * 239 + "...\n" in text  # 240 characters with the mark


async def test_the_answer_shows_the_file_as_written_not_the_models_strings(project, root: Path) -> None:
    # Both strings dedented alike: the file gets new_string re-indented, and the answer shows that, with line numbers.
    (root / "m.py").write_text("class A:\n    def f(self):\n        return 1\n")
    text = await project.text("edit", path="m.py", old_string="return 1", new_string="x = 2\nreturn x")
    assert (root / "m.py").read_text() == "class A:\n    def f(self):\n        x = 2\n        return x\n"
    assert text.endswith(
        "```diff\n@@ -2,3 +2,4 @@\n     def f(self):\n-        return 1\n+        x = 2\n+        return x\n \n```"
    )


def _apply_hunks(diff: str, before: list[str]) -> list[str]:
    """``before`` with the hunks of a short diff applied (line numbers from their headers)."""
    out: list[str] = []
    position = 0
    for line in diff.removeprefix("```diff\n").removesuffix("\n```").split("\n"):
        if line.startswith("@@"):
            found = re.match(r"@@ -(\d+)(?:,(\d+))? ", line)
            assert found is not None
            start = int(found[1]) - (found[2] != "0")
            out += before[position:start]
            position = start
        elif line.startswith("-"):
            position += 1
        elif line.startswith("+"):
            out.append(line[1:])
        else:
            out.append(before[position])
            position += 1
    return out + before[position:]


@given(
    st.lists(st.sampled_from("abcd"), max_size=30),
    st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from(["insert", "delete", "change"])), min_size=1, max_size=3
    ),
)
def test_the_short_diff_turns_the_file_before_into_the_file_after(lines: list[str], edits) -> None:
    after = list(lines)
    for at, what in edits:
        at = min(at, len(after))
        if what == "insert":
            after.insert(at, "new")
        elif after:
            at = min(at, len(after) - 1)
            after[at : at + 1] = [] if what == "delete" else ["changed"]
    before_text, after_text = "\n".join(lines), "\n".join(after)
    diff = _written_diff(before_text, after_text)
    if diff.count("\n") - 1 <= MAX_DIFF_LINES and after_text != before_text:
        assert _apply_hunks(diff, before_text.split("\n")) == after_text.split("\n")


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


async def test_unclear_indentation_is_refused_with_what_to_send_and_the_file_is_unchanged(
    project, root: Path
) -> None:
    text = "class A:\n    def f(self):\n        a = 1\n        b = 2\n"
    (root / "f.py").write_text(text)
    failed = await project.fail("edit", path="f.py", old_string="a = 1\nb = 2", new_string="  a = 1\n  b = 3")
    assert failed.error == (
        "old_string matches line 3 after ignoring indentation, but indented differently: the file indents that line "
        "with 8 spaces, old_string with no indentation. It is unclear which indentation new_string is written in: "
        "nothing in it shows which indentation it is written in. Nothing was changed. Call edit again with old_string "
        "copied exactly as `read` shows it (indentation included, without the line-number prefix) and new_string in "
        "the file's indentation."
    )
    assert (root / "f.py").read_text() == text


def _textwrap_source() -> str:
    return Path(textwrap.__file__).read_text(encoding="utf-8")


MUNGE = """        if self.expand_tabs:
            text = text.expandtabs(self.tabsize)
        if self.replace_whitespace:
            text = text.translate(self.unicode_whitespace_trans)
        return text"""
MUNGED = """        if self.expand_tabs:
            text = text.expandtabs(self.tabsize)
        if self.replace_whitespace:
            text = text.translate(self.unicode_whitespace_trans)
        if self.strip_nul:
            text = text.replace("\\0", "")
        return text"""


@pytest.mark.parametrize("family", ["old_string only", "both strings"])
@pytest.mark.parametrize(
    "mistake", ["dedented", "one level shallower", "one level deeper", "tabs", "first line"]
)
async def test_a_mis_indented_edit_of_a_real_source_file_lands_where_it_was_meant(
    project, root: Path, family: str, mistake: str
) -> None:
    source = _textwrap_source()
    assert source.count(MUNGE) == 1
    fix = {
        "dedented": lambda text: textwrap.dedent(text),
        "one level shallower": lambda text: "\n".join(line.removeprefix("    ") for line in text.split("\n")),
        "one level deeper": lambda text: "\n".join("    " + line for line in text.split("\n")),
        "tabs": lambda text: "\n".join(
            "\t" * ((len(line) - len(line.lstrip())) // 4) + line.lstrip() for line in text.split("\n")
        ),
        "first line": lambda text: text.lstrip(),
    }[mistake]
    (root / "textwrap.py").write_text(source)
    new = MUNGED if family == "old_string only" else fix(MUNGED)
    text = await project.text("edit", path="textwrap.py", old_string=fix(MUNGE), new_string=new)
    after = (root / "textwrap.py").read_text()
    assert after == source.replace(MUNGE, MUNGED)
    method = next(
        node
        for node in ast.walk(ast.parse(after))
        if isinstance(node, ast.FunctionDef) and node.name == "_munge_whitespace"
    )
    assert len(method.body) == 5  # the new if sits in the method, not after it
    assert '+        if self.strip_nul:\n+            text = text.replace("\\0", "")\n' in text


async def test_edit_asks_edit_with_save_star(project, root: Path) -> None:
    (root / "f.txt").write_text("a\n")
    await project.ok("edit", path="f.txt", old_string="a", new_string="b")
    assert project.permissions.asked == [("edit", ("f.txt",))]
    assert tuple(project.permissions.requests[0].save) == ("*",)

"""File names that are not UTF-8: shown with visible escapes, found again from the shown name, never confused with a
file literally named like the escape."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.storable import has_surrogates

pytestmark = pytest.mark.anyio

RAW = os.fsdecode(b"bad\xffname.txt")  # "bad\udcffname.txt"
SHOWN = "bad\\xffname.txt"


def _make(root: Path) -> None:
    with open(os.path.join(os.fsencode(root), b"bad\xffname.txt"), "wb") as f:
        f.write(b"the real bytes file\n")
    (root / "ok.txt").write_text("fine\n")


async def test_list_glob_and_read_dot_show_an_undecodable_name_with_a_visible_escape(
    project, root: Path
) -> None:
    _make(root)
    for name, kwargs in (("list", {"path": "."}), ("glob", {"pattern": "*.txt"}), ("read", {"path": "."})):
        outcome = await project.ok(name, **kwargs)
        text = outcome.content[0].text
        assert SHOWN in text, (name, text)
        assert not has_surrogates(text), name
        assert outcome.title is None or not has_surrogates(outcome.title)


async def test_reading_the_shown_name_reaches_the_same_file(project, root: Path) -> None:
    _make(root)
    text = await project.text("read", path=SHOWN)
    assert "1: the real bytes file" in text
    assert not has_surrogates(text)


async def test_a_file_literally_named_like_the_escape_is_never_read_in_place_of_the_other(
    project, root: Path
) -> None:
    _make(root)
    (root / SHOWN).write_text("the literal backslash file\n")
    failed = await project.fail("read", path=SHOWN)
    assert "Ambiguous path" in failed.error
    # The canary: the byte-named file was not read in place of the literal one, nor the other way round.
    assert "real bytes" not in str(failed.partial) and "literal backslash" not in str(failed.partial)


async def test_a_literal_backslash_name_alone_is_read_as_named(project, root: Path) -> None:
    (root / SHOWN).write_text("the literal backslash file\n")
    assert "1: the literal backslash file" in await project.text("read", path=SHOWN)

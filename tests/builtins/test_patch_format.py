"""The apply_patch format on its own: every malformed patch is a precise error naming the line, and the lenient
forms a model writes (a heredoc wrapper, CRLF, a first chunk without ``@@``, Unicode punctuation) still apply."""

from __future__ import annotations

import re

import pytest

from tether.builtins._patch import Chunk, PatchError, apply_chunks, parse_patch


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "The first line of the patch must be '*** Begin Patch'"),
        ("*** Begin Patch", "The last line of the patch must be '*** End Patch'"),
        ("*** Begin Patch\n*** Add File: a\n+x", "The last line of the patch must be '*** End Patch'"),
        (patch("*** Add File:   "), "Missing path after '*** Add File:' (line 2)"),
        (patch("*** Frobnicate File: a"), "'*** Frobnicate File: a' is not a valid hunk header (line 2)"),
        (patch("*** Update File: a"), "Update file hunk for path 'a' is empty"),
        (patch("*** Update File: a", "@@ ctx"), "Update hunk does not contain any lines (line 3)"),
        (patch("*** Update File: a", "@@", "?odd"), "Unexpected line found in update hunk (line 4): '?odd'"),
    ],
)
def test_a_malformed_patch_is_an_error_that_names_what_and_where(text: str, message: str) -> None:
    with pytest.raises(PatchError) as error:
        parse_patch(text)
    assert message in str(error.value)


def test_a_patch_parses_every_kind_of_hunk_bare_in_a_heredoc_or_with_crlf() -> None:
    body = patch(
        "*** Add File: new.txt",
        "+one",
        "",
        "*** Delete File: old.txt",
        "*** Update File: a.txt",
        "*** Move to: b.txt",
        " keep",
        "-gone",
        "+come",
        "*** End of File",
    )
    for text in ("cat <<'EOF'\n" + body + "\nEOF", body.replace("\n", "\r\n")):
        assert parse_patch(text) == parse_patch(body)
    hunks = parse_patch(body)
    assert [(h.kind, h.path, h.move_to) for h in hunks] == [
        ("add", "new.txt", None),
        ("delete", "old.txt", None),
        ("update", "a.txt", "b.txt"),
    ]
    assert hunks[0].contents == "one\n"
    assert hunks[2].chunks == (
        Chunk(context=None, old=("keep", "gone"), new=("keep", "come"), end_of_file=True),
    )


def test_a_second_chunk_without_its_at_marker_ends_the_hunk() -> None:
    with pytest.raises(PatchError, match="not a valid hunk header"):
        parse_patch(patch("*** Update File: a", "@@", "-x", "+y", "*** End of File", "-z"))


def test_an_empty_line_inside_a_chunk_is_an_empty_context_line() -> None:
    (hunk,) = parse_patch(patch("*** Update File: a", "@@", " a", "", " b", "-c"))
    assert hunk.chunks[0].old == ("a", "", "b", "c")
    assert hunk.chunks[0].new == ("a", "", "b")


def test_a_context_line_that_is_not_in_the_file_names_the_context() -> None:
    chunk = Chunk(context="def missing():", old=("x",), new=("y",))
    with pytest.raises(PatchError, match=re.escape("Failed to find context 'def missing():' in f.py")):
        apply_chunks("x\n", (chunk,), "f.py")


def test_old_lines_that_are_not_in_the_file_are_an_error_listing_them() -> None:
    with pytest.raises(PatchError, match=re.escape("Failed to find expected lines in f.py:\nnope")):
        apply_chunks("x\n", (Chunk(context=None, old=("nope",), new=("y",)),), "f.py")


def test_old_lines_longer_than_the_file_are_not_found() -> None:
    with pytest.raises(PatchError):
        apply_chunks("x\n", (Chunk(context=None, old=("x", "y", "z"), new=()),), "f.py")


def test_a_pure_insertion_goes_to_the_end_of_the_file() -> None:
    result = apply_chunks("a\nb\n", (Chunk(context="a", old=(), new=("c",)),), "f")
    assert result == "a\nb\nc\n"


def test_a_trailing_empty_old_line_is_retried_without_it() -> None:
    result = apply_chunks("a\nb", (Chunk(context=None, old=("b", ""), new=("B", "")),), "f")
    assert result == "a\nB\n"


def test_unicode_punctuation_in_the_file_matches_ascii_in_the_patch() -> None:
    text = "say \u201chi\u201d \u2014 ok\u2026\n"
    result = apply_chunks(text, (Chunk(context=None, old=('say "hi" - ok...',), new=("bye",)),), "f")
    assert result == "bye\n"


def test_trailing_whitespace_and_indentation_differences_still_match() -> None:
    assert apply_chunks("  a  \n", (Chunk(context=None, old=("a",), new=("b",)),), "f") == "b\n"
    assert apply_chunks("a   \n", (Chunk(context=None, old=("a",), new=("b",)),), "f") == "b\n"


def test_an_end_of_file_chunk_matches_the_last_occurrence() -> None:
    result = apply_chunks("x\ny\nx\n", (Chunk(context=None, old=("x",), new=("z",), end_of_file=True),), "f")
    assert result == "x\ny\nz\n"


def test_untouched_lines_keep_their_own_endings_and_new_lines_take_the_first() -> None:
    result = apply_chunks("a\r\nb\nc\r", (Chunk(context=None, old=("b",), new=("B", "B2")),), "f")
    assert result == "a\r\nB\r\nB2\r\nc\r"

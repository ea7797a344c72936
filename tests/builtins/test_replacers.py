from __future__ import annotations

import pytest

from tether.builtins import _replacers as r
from tether.builtins._replacers import REPLACERS, AmbiguousMatch, NoMatch, SpanTooLarge, replace


def test_order_is_the_references() -> None:
    assert [f.__name__ for f in REPLACERS] == [
        "simple",
        "line_trimmed",
        "block_anchor",
        "whitespace_normalized",
        "indentation_flexible",
        "escape_normalized",
        "trimmed_boundary",
        "context_aware",
        "multi_occurrence",
    ]


def test_exact() -> None:
    assert replace("a b c", "b", "X") == ("a X c", 1)


def test_line_trimmed() -> None:
    content = "  foo  \n\tbar\nbaz\n"
    assert list(r.line_trimmed(content, "foo\nbar\n")) == ["  foo  \n\tbar"]
    assert replace(content, "foo\nbar", "Q") == ("Q\nbaz\n", 1)


def test_block_anchor_accepts_similar_middle() -> None:
    content = "start\n  alpha = 1\n  beta = 2\nend\nother\n"
    find = "start\n  alpha = 1\n  beta = 3\nend"
    assert list(r.block_anchor(content, find)) == ["start\n  alpha = 1\n  beta = 2\nend"]


def test_block_anchor_rejects_dissimilar_middle_and_size_mismatch() -> None:
    content = "start\ncompletely different text here\nnothing alike at all\nend\n"
    assert list(r.block_anchor(content, "start\nabc\nxyz\nend")) == []
    long_block = "start\n" + "x\n" * 10 + "end\n"
    assert list(r.block_anchor(long_block, "start\nx\nx\nend")) == []


def test_block_anchor_picks_best_of_several() -> None:
    content = "s\nfoo one\ne\ns\nbar two\ne\n"
    assert list(r.block_anchor(content, "s\nbar twx\ne")) == ["s\nbar two\ne"]


def test_whitespace_normalized() -> None:
    assert list(r.whitespace_normalized("x  =   1\n", "x = 1")) == ["x  =   1"]
    assert list(r.whitespace_normalized("call(a,   b) + 1\n", "a, b")) == ["a,   b"]


def test_indentation_flexible() -> None:
    content = "        if x:\n            y()\n"
    assert list(r.indentation_flexible(content, "if x:\n    y()")) == ["        if x:\n            y()"]


def test_escape_normalized() -> None:
    assert next(iter(r.escape_normalized('say("hi")\nnext\n', 'say(\\"hi\\")\\nnext'))) == 'say("hi")\nnext'


def test_trimmed_boundary() -> None:
    assert next(iter(r.trimmed_boundary("abc def\n", "  abc def  "))) == "abc def"
    assert list(r.trimmed_boundary("abc", "abc")) == []


def test_context_aware_needs_half_the_middle() -> None:
    content = "begin\nsame\nchanged\nend\n"
    assert list(r.context_aware(content, "begin\nsame\ndifferent\nend")) == ["begin\nsame\nchanged\nend"]
    assert list(r.context_aware(content, "begin\nno\nnope\nend")) == []


def test_multi_occurrence_yields_each() -> None:
    assert list(r.multi_occurrence("a a a", "a")) == ["a", "a", "a"]


def test_ambiguous_is_an_error_and_replace_all_replaces_every_one() -> None:
    with pytest.raises(AmbiguousMatch):
        replace("x\nx\n", "x", "y")
    assert replace("x\nx\n", "x", "y", replace_all=True) == ("y\ny\n", 2)


def test_not_found() -> None:
    with pytest.raises(NoMatch):
        replace("abc", "zzz", "y")


def test_whitespace_only_candidates_never_match_empty() -> None:
    with pytest.raises(NoMatch):
        replace("abc\n", "   ", "y")


def test_disproportionate_span_guard() -> None:
    # The guard is defensive: with block_anchor's size filter no shipped replacer yields such a span today.
    assert r._too_large("a\nb\nc\nd", "a")
    assert r._too_large("x\n" + "y" * 900, "x\ny")
    assert not r._too_large("a\nb", "a\nb")
    assert SpanTooLarge is not None

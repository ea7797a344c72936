from __future__ import annotations

import pytest

from tether.builtins import _replacers as r
from tether.builtins._replacers import (
    STRATEGIES,
    AmbiguousMatch,
    IndentationUnclear,
    NoMatch,
    SpanTooLarge,
    replace,
)


def _spans(strategy: r.Strategy, content: str, find: str, new: str = "X") -> list[str]:
    return [content[m.start : m.end] for m in strategy(r._Doc(content), find, new)]


def test_strategies_run_from_the_fewest_transformations_to_the_most() -> None:
    assert [s.__name__ for s, _ in STRATEGIES] == [
        "exact",
        "trailing_whitespace",
        "indentation",
        "block_anchor",
        "whitespace_normalized",
        "escape_normalized",
        "trimmed_boundary",
        "context_aware",
    ]


def test_exact_match_is_replaced() -> None:
    assert replace("a b c", "b", "X") == ("a X c", 1)


def test_exact_match_beats_a_block_that_matches_only_after_trimming_trailing_whitespace() -> None:
    content = "class A:\n    def f(self):  \n        return 1\n\ndef g():\n    return 1\n"
    assert replace(content, "def g():\n    return 1", "def g():\n    return 2") == (
        "class A:\n    def f(self):  \n        return 1\n\ndef g():\n    return 2\n",
        1,
    )


def test_trailing_whitespace_match_beats_an_indentation_flexible_one() -> None:
    content = "class A:\n    def f():\n        return 1\n\ndef f():\n    return 1\n"
    updated, _ = replace(content, "def f():  \n    return 1 ", "def f():\n    return 2")
    assert updated == "class A:\n    def f():\n        return 1\n\ndef f():\n    return 2\n"


def test_several_candidates_of_one_strategy_are_refused_with_their_lines() -> None:
    content = "x = 1\n\nclass A:\n    if a:\n        b()\n\n    if a:\n            b()\n"
    with pytest.raises(AmbiguousMatch) as info:
        replace(content, "if a: \nb()", "if c:\n    d()")
    assert info.value.lines == (4, 7)
    assert info.value.how == " after ignoring indentation"


def test_exact_duplicates_are_refused_and_replace_all_replaces_every_one() -> None:
    with pytest.raises(AmbiguousMatch) as info:
        replace("x\nx\n", "x", "y")
    assert info.value.lines == (1, 2) and info.value.how == ""
    assert replace("x\nx\n", "x", "y", replace_all=True) == ("y\ny\n", 2)


def test_lost_first_line_indentation_keeps_the_files_indentation_when_new_string_has_it() -> None:
    content = "def f():\n    if a:\n        b()\n"
    updated, _ = replace(content, "if a:\n        b()", "    if c:\n        d()")
    assert updated == "def f():\n    if c:\n        d()\n"


def test_lost_first_line_indentation_keeps_the_files_indentation_when_new_string_lost_it_too() -> None:
    content = "def f():\n    if a:\n        b()\n"
    updated, _ = replace(content, "if a:\n        b()", "if c:\n        d()")
    assert updated == "def f():\n    if c:\n        d()\n"


def test_a_single_unindented_line_matched_after_the_indentation_takes_new_string_as_written() -> None:
    assert replace("def f():\n    x = 1\n", "x = 1", "    x = 2") == ("def f():\n    x = 2\n", 1)
    assert replace("def f():\n    x = 1\n", "x = 1", "x = 2") == ("def f():\n    x = 2\n", 1)


def test_an_exact_match_starting_with_a_newline_keeps_the_indentation_before_it() -> None:
    assert replace("x\n    \ny = 1\n", "\ny = 1", "\ny = 2") == ("x\n    \ny = 2\n", 1)


def test_a_dedented_block_is_reindented_deeper_lines_included() -> None:
    content = "class A:\n    def f(self):\n        return 1\n"
    updated, _ = replace(content, "def f(self):\n    return 1", "def f(self):\n    if x:\n        return 2")
    assert updated == "class A:\n    def f(self):\n        if x:\n            return 2\n"


def test_doubled_indentation_is_halved() -> None:
    content = "class A:\n    def f(self):\n        return 1\n"
    find = "        def f(self):\n                return 1"
    updated, _ = replace(content, find, "        def f(self):\n                return 2")
    assert updated == "class A:\n    def f(self):\n        return 2\n"


def test_tabs_map_to_the_files_spaces() -> None:
    content = "class A:\n    def f(self):\n        return 1\n"
    updated, _ = replace(content, "\tdef f(self):\n\t\treturn 1", "\tdef f(self):\n\t\tif x:\n\t\t\treturn 2")
    assert updated == "class A:\n    def f(self):\n        if x:\n            return 2\n"


def test_new_indentation_that_cannot_be_mapped_is_refused() -> None:
    content = "class A:\n    def f(self):\n        a = 1\n        b = 2\n"
    with pytest.raises(IndentationUnclear) as info:
        replace(content, "\t\ta = 1\n\t\tb = 2", "\t\tif a:\n\t\t\tb = 2")
    assert info.value.line == 3


def test_an_exact_match_leaves_the_trailing_whitespace_after_it() -> None:
    assert replace("a hard break  \nb\n", "a hard break", "a line break") == ("a line break  \nb\n", 1)


def test_line_matches_keep_crlf_line_endings() -> None:
    content = "  one \r\n  two\r\nthree\r\n"
    assert replace(content, "one\r\ntwo", "1\r\n2") == ("  1\r\n  2\r\nthree\r\n", 1)


def test_block_anchor_accepts_a_similar_middle() -> None:
    content = "start\n  alpha = 1\n  beta = 2\nend\nother\n"
    find = "start\n  alpha = 1\n  beta = 3\nend"
    assert _spans(r.block_anchor, content, find) == ["start\n  alpha = 1\n  beta = 2\nend"]


def test_block_anchor_rejects_dissimilar_middle_and_size_mismatch() -> None:
    content = "start\ncompletely different text here\nnothing alike at all\nend\n"
    assert _spans(r.block_anchor, content, "start\nabc\nxyz\nend") == []
    long_block = "start\n" + "x\n" * 10 + "end\n"
    assert _spans(r.block_anchor, long_block, "start\nx\nx\nend") == []


def test_block_anchor_refuses_two_similar_blocks() -> None:
    content = "s\nbar twz\ne\ns\nbar two\ne\n"
    with pytest.raises(AmbiguousMatch) as info:
        replace(content, "s\nbar twx\ne", "Q")
    assert info.value.lines == (1, 4)


def test_whitespace_normalized() -> None:
    assert _spans(r.whitespace_normalized, "x  =   1\n", "x = 1") == ["x  =   1"]
    assert _spans(r.whitespace_normalized, "call(a,   b) + 1\n", "a, b") == ["a,   b"]


def test_escape_normalized() -> None:
    assert _spans(r.escape_normalized, 'say("hi")\nnext\n', 'say(\\"hi\\")\\nnext') == ['say("hi")\nnext']


def test_trimmed_boundary() -> None:
    assert _spans(r.trimmed_boundary, "abc def\n", "  abc def  ") == ["abc def"]
    assert _spans(r.trimmed_boundary, "abc", "abc") == []


def test_context_aware_needs_half_the_middle() -> None:
    content = "begin\nsame\nchanged\nend\n"
    assert _spans(r.context_aware, content, "begin\nsame\ndifferent\nend") == ["begin\nsame\nchanged\nend"]
    assert _spans(r.context_aware, content, "begin\nno\nnope\nend") == []


def test_not_found() -> None:
    with pytest.raises(NoMatch):
        replace("abc", "zzz", "y")


def test_whitespace_only_candidates_never_match_empty() -> None:
    with pytest.raises(NoMatch):
        replace("abc\n", "   ", "y")


def test_disproportionate_span_guard() -> None:
    # The guard is defensive: with block_anchor's size filter no shipped strategy yields such a span today.
    assert r._too_large("a\nb\nc\nd", "a")
    assert r._too_large("x\n" + "y" * 900, "x\ny")
    assert not r._too_large("a\nb", "a\nb")
    assert SpanTooLarge is not None

from __future__ import annotations

import textwrap

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


def test_tabs_one_level_deeper_map_to_one_level_of_the_files_spaces() -> None:
    content = "class A:\n    def f(self):\n        a = 1\n        b = 2\n"
    updated, _ = replace(content, "\t\ta = 1\n\t\tb = 2", "\t\tif a:\n\t\t\tb = 2")
    assert updated == "class A:\n    def f(self):\n        if a:\n            b = 2\n"


def test_new_string_in_a_third_indentation_is_refused() -> None:
    content = "class A:\n    def f(self):\n        a = 1\n        b = 2\n"
    with pytest.raises(IndentationUnclear) as info:
        replace(
            content, "a = 1\nb = 2", "  a = 1\n  b = 3"
        )  # old_string at column 0, new_string at 2, the file at 8
    assert info.value.line == 3
    assert (info.value.old_indent, info.value.file_indent) == ("", "        ")
    assert info.value.reason == "nothing in it shows which indentation it is written in"


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


# --- which indentation new_string is written in (issue 34, item 7) ---------------------------------------------------
#
# A model that gets old_string's indentation wrong writes new_string either in the file's indentation (only old_string
# was wrong: keep it as written) or in the same wrong one (shift it like old_string). The file below is the kind of code
# where the wrong choice moves a method out of its class or a return out of its function.

CLASS = """class Store:
    def get(self, key):
        value = self._data.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def put(self, key, value):
        self._data[key] = value
"""
# The intended change, in the file's indentation: get() gains a default, put() is unchanged.
CHANGED = CLASS.replace(
    "    def get(self, key):\n        value = self._data.get(key)\n        if value is None:\n            raise KeyError(key)",
    "    def get(self, key, default=None):\n        value = self._data.get(key)\n        if value is None:\n"
    "            if default is not None:\n                return default\n            raise KeyError(key)",
)
OLD = "    def get(self, key):\n        value = self._data.get(key)\n        if value is None:\n            raise KeyError(key)"
NEW = (
    "    def get(self, key, default=None):\n        value = self._data.get(key)\n        if value is None:\n"
    "            if default is not None:\n                return default\n            raise KeyError(key)"
)


def _dedent(text: str, prefix: str = "    ") -> str:
    return "\n".join(line.removeprefix(prefix) for line in text.split("\n"))


def _tabs(text: str) -> str:
    return "\n".join(
        "\t" * ((len(line) - len(line.lstrip(" "))) // 4) + line.lstrip(" ") for line in text.split("\n")
    )


def _first_lost(text: str) -> str:
    return text.lstrip(" ")


MISTAKES = {
    "dedented": _dedent,
    "dedented_twice": lambda text: _dedent(_dedent(text)),
    "reindented_deeper": lambda text: "\n".join("    " + line for line in text.split("\n")),
    "tabs": _tabs,
    "first_line_lost": _first_lost,
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_only_old_string_mis_indented_keeps_new_string_as_written(mistake: str) -> None:
    assert replace(CLASS, MISTAKES[mistake](OLD), NEW) == (CHANGED, 1)


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_both_strings_mis_indented_alike_shifts_new_string_to_the_file(mistake: str) -> None:
    fix = MISTAKES[mistake]
    assert replace(CLASS, fix(OLD), fix(NEW)) == (CHANGED, 1)


def test_a_method_written_in_the_files_indentation_stays_in_its_class() -> None:
    # The regression of issue 34: old_string dedented to column 0, new_string copied from the file. Shifting
    # new_string like old_string put the method 4 columns too deep; the reverse mistake puts one at column 0.
    old = "def put(self, key, value):\n    self._data[key] = value"
    new = "    def put(self, key, value):\n        self._data[key] = value\n        self._dirty = True"
    assert replace(CLASS, old, new) == (
        CLASS.replace("[key] = value\n", "[key] = value\n        self._dirty = True\n"),
        1,
    )


def test_a_return_written_in_the_files_indentation_stays_in_its_function() -> None:
    old = "    raise KeyError(key)\nreturn value"  # the raise one level too shallow, the return at column 0
    new = "            raise KeyError(key)\n        return value or None"
    assert replace(CLASS, old, new) == (CLASS.replace("return value\n", "return value or None\n"), 1)


def test_wrapping_and_unwrapping_in_either_frame() -> None:
    # Wrap: old_string one level too shallow; new_string in the same frame, then in the file's.
    wrapped = CLASS.replace(
        "        return value\n",
        "        try:\n            return value\n        finally:\n            self._hits += 1\n",
    )
    old = "    return value"
    assert (
        replace(CLASS, old, "    try:\n        return value\n    finally:\n        self._hits += 1")[0]
        == wrapped
    )
    assert (
        replace(
            CLASS,
            old,
            "        try:\n            return value\n        finally:\n            self._hits += 1",
        )[0]
        == wrapped
    )
    # Unwrap: the if's body takes the if's place, in either frame.
    unwrapped = CLASS.replace(
        "        if value is None:\n            raise KeyError(key)\n", "        raise KeyError(key)\n"
    )
    old = "if value is None:\n    raise KeyError(key)"
    assert replace(CLASS, old, "raise KeyError(key)")[0] == unwrapped
    assert replace(CLASS, old, "        raise KeyError(key)")[0] == unwrapped


def test_moving_a_line_out_of_its_block_in_either_frame() -> None:
    content = "def f(items):\n    for x in items:\n        if x:\n            go(x)\n        done(x)\n"
    moved = content.replace("        done(x)", "    done(x)")
    old = "    if x:\n        go(x)\n    done(x)"  # one level too shallow
    assert replace(content, old, "    if x:\n        go(x)\ndone(x)")[0] == moved
    assert replace(content, old, "        if x:\n            go(x)\n    done(x)")[0] == moved


def test_a_single_line_compares_new_strings_indentation_with_both() -> None:
    content = "def f():\n    if a:\n        x = 1\n"
    assert (
        replace(content, "    x = 1", "        x = 2")[0] == "def f():\n    if a:\n        x = 2\n"
    )  # the file's
    assert (
        replace(content, "    x = 1", "    x = 2")[0] == "def f():\n    if a:\n        x = 2\n"
    )  # old_string's
    assert (
        replace(content, "x = 1", "x = 2\ny = 3")[0] == "def f():\n    if a:\n        x = 2\n        y = 3\n"
    )
    assert (
        replace(content, "x = 1", "if b:\n    x = 2")[0]
        == "def f():\n    if a:\n        if b:\n            x = 2\n"
    )
    with pytest.raises(IndentationUnclear) as info:
        replace(content, "    x = 1", "  x = 2")  # neither
    assert info.value.reason == "nothing in it shows which indentation it is written in"


def test_an_exact_match_inside_a_lines_indentation_is_an_indentation_mismatch() -> None:
    # "    x = 1" is found verbatim inside "        x = 1": replacing there would indent new_string twice.
    content = "def f():\n    if a:\n        x = 1\n        y = 2\n"
    assert replace(content, "    x = 1\n        y = 2", "        x = 3\n        y = 2")[0] == content.replace(
        "x = 1", "x = 3"
    )


def test_new_string_half_in_each_frame_is_refused() -> None:
    with pytest.raises(IndentationUnclear) as info:
        replace(CLASS, _dedent(OLD), "def get(self, key, default=None):\n        value = self._data.get(key)")
    assert info.value.reason == "its lines fit neither old_string's indentation nor the file's"


# OpenCode's replacer table (reference §2.4): each lenient strategy reached with old_string dedented, and new_string
# in the file's indentation ("old") or dedented alike ("both"): the same file either way.
STORE = """class Store:
    def get(self, key):
        value  =  self._data.get(key)
        if value is None:
            raise KeyError("missing")
        return value
"""
TABLE = [
    # (strategy, old_string dedented, new_string in the file's indentation, the file after)
    (
        "indentation",
        'value  =  self._data.get(key)\nif value is None:\n    raise KeyError("missing")',
        "        value  =  self._data.get(key)\n        if value is None:\n            raise LookupError(key)",
        STORE.replace('KeyError("missing")', "LookupError(key)"),
    ),
    (
        "block_anchor",
        'value  =  self._data.get(key)\nif value is None:\n    raise KeyErr("missing")\nreturn value',
        "        value  =  self._data.get(key)\n        if value is None:\n            raise LookupError(key)\n"
        "        return value",
        STORE.replace('KeyError("missing")', "LookupError(key)"),
    ),
    (
        "whitespace_normalized",
        'value = self._data.get(key)\nif value is None:\n    raise KeyError("missing")',
        '        value = self._data.get(key)\n        if value is None:\n            raise KeyError("missing")',
        STORE.replace("value  =  self", "value = self"),
    ),
    (
        "escape_normalized",
        'raise KeyError(\\"missing\\")',
        "            raise KeyError(key)",
        STORE.replace('KeyError("missing")', "KeyError(key)"),
    ),
    (
        "trimmed_boundary",
        "  \nreturn value\n ",
        "        return value or None",
        STORE.replace("return value", "return value or None"),
    ),
    (
        "context_aware",
        "value  =  self._data.get(key)\nif value is None:\n    totally different words here\nreturn value",
        "        value  =  self._data.get(key)\n        if value is None:\n            raise LookupError(key)\n"
        "        return value",
        STORE.replace('KeyError("missing")', "LookupError(key)"),
    ),
]


@pytest.mark.parametrize(("strategy", "old", "new", "after"), TABLE, ids=[row[0] for row in TABLE])
@pytest.mark.parametrize("family", ["old", "both"])
def test_each_lenient_strategy_carries_new_string_over_in_both_families(
    strategy: str, old: str, new: str, after: str, family: str
) -> None:
    doc = r._Doc(STORE)
    first = next(s for s, _ in STRATEGIES if s(doc, old, new))
    assert first.__name__ == strategy
    sent = new if family == "old" else textwrap.dedent(new)
    assert replace(STORE, old, sent) == (after, 1)


def test_an_opener_replaced_by_another_keeps_its_body_in_place_in_either_frame() -> None:
    content = "def f(queue):\n    if ready:\n        go(x)\n    return queue\n"
    after = "def f(queue):\n    # drain first\n    for x in queue:\n        go(x)\n    return queue\n"
    old = "if ready:\n    go(x)"
    assert replace(content, old, "# drain first\nfor x in queue:\n    go(x)")[0] == after
    assert replace(content, old, "    # drain first\n    for x in queue:\n        go(x)")[0] == after


def test_a_continuation_line_settles_which_lines_were_shifted() -> None:
    # A single bare line grows a call over two lines: read with all lines shifted, or only the first, the second is
    # deeper after "(" either way; the bare second line can only have been shifted.
    content = "def f():\n    x = 1\n"
    assert replace(content, "x = 1", "x = compute(\n    1)")[0] == "def f():\n    x = compute(\n        1)\n"
    assert (
        replace(content, "x = 1", "x = compute(\n        1)")[0] == "def f():\n    x = compute(\n        1)\n"
    )


def test_a_new_first_line_in_neither_indentation_is_refused() -> None:
    content = "def f():\n    if a:\n        one()\n        two()\n"
    with pytest.raises(IndentationUnclear) as info:
        replace(content, "one()\ntwo()", "  zero()\none()\ntwo()")
    assert (
        info.value.reason == "its first line is indented like neither old_string's first line nor the file's"
    )


def test_a_first_line_in_old_strings_indentation_over_lines_in_the_files_is_refused() -> None:
    content = "def f():\n    if a:\n        one()\n        two()\n"
    with pytest.raises(IndentationUnclear) as info:
        replace(
            content, "one()\ntwo()", "# then\n        one()\n        two()"
        )  # a comment is nobody's parent
    assert info.value.reason == "its first line is in one indentation and its other lines in the other"


def test_a_second_line_that_fits_no_reading_of_a_bare_line_is_refused() -> None:
    # "y = 2" 4 deeper than a plain statement (all lines shifted), or at column 4 (only the first line's indentation
    # lost): neither follows "x = 3" as code does.
    content = "class A:\n    def f(self):\n        x = 1\n"
    with pytest.raises(IndentationUnclear) as info:
        replace(content, "x = 1", "x = 3\n    y = 2")
    assert info.value.reason == "it reads as well in old_string's indentation as in the file's"


def test_a_line_ending_with_a_comma_is_followed_by_a_sibling() -> None:
    content = '{\n  "scripts": {\n    "test": "jest",\n    "build": "tsc"\n  }\n}\n'
    updated, _ = replace(content, '"build": "tsc"', '"build": "tsc",\n"lint": "eslint ."')
    assert updated == content.replace('"build": "tsc"', '"build": "tsc",\n    "lint": "eslint ."')

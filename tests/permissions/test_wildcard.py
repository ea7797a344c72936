"""The wildcard matcher, against a reference implementation that uses no regular expressions."""

from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from tether.permissions import wildcard_match


def _glob(value: str, pattern: str) -> bool:
    @cache
    def at(i: int, j: int) -> bool:
        if j == len(pattern):
            return i == len(value)
        ch = pattern[j]
        if ch == "*":
            return at(i, j + 1) or (i < len(value) and at(i + 1, j))
        if i == len(value):
            return False
        return (ch == "?" or ch == value[i]) and at(i + 1, j + 1)

    return at(0, 0)


def reference(value: str, pattern: str) -> bool:
    value = value.replace("\\", "/")
    pattern = pattern.replace("\\", "/")
    if _glob(value, pattern):
        return True
    return pattern.endswith(" *") and _glob(value, pattern[:-2])


ALPHABET = st.sampled_from([*"ab/\\ *?.+()[]^$|{}-\n", "é", "日"])
PATTERN_CHARS = st.text(ALPHABET, max_size=8)
VALUE_CHARS = st.text(st.sampled_from([*"ab/\\ .-\n*?", "é"]), max_size=10)


@given(value=VALUE_CHARS, pattern=PATTERN_CHARS)
def test_matches_the_reference_implementation(value: str, pattern: str) -> None:
    assert wildcard_match(value, pattern) == reference(value, pattern)


@given(value=VALUE_CHARS, pattern=PATTERN_CHARS)
def test_result_does_not_depend_on_the_cache(value: str, pattern: str) -> None:
    first = wildcard_match(value, pattern)
    assert wildcard_match(value, pattern) == first


def test_star_crosses_slashes_and_question_mark_is_one_character() -> None:
    assert wildcard_match("src/a/b.py", "src/*.py")
    assert wildcard_match("a.py", "?.py")
    assert not wildcard_match("ab.py", "?.py")


def test_trailing_space_star_also_matches_the_bare_prefix() -> None:
    assert wildcard_match("git", "git *")
    assert wildcard_match("git push origin", "git *")
    assert not wildcard_match("gits", "git *")


def test_backslashes_are_slashes_on_both_sides() -> None:
    assert wildcard_match("src\\a.py", "src/*")
    assert wildcard_match("src/a.py", "src\\*")


def test_regex_characters_are_literal_and_match_is_full() -> None:
    assert wildcard_match("a.b", "a.b")
    assert not wildcard_match("axb", "a.b")
    assert not wildcard_match("xa.b", "a.b")
    assert wildcard_match("(x)+[y]", "(x)+[y]")


LITERAL = st.text(st.sampled_from([*"ab/ .+()[]^$|{}-\n", "é"]), max_size=8)


@given(value=LITERAL, pattern=LITERAL)
def test_a_pattern_without_wildcards_matches_exactly_its_own_text(value: str, pattern: str) -> None:
    assert wildcard_match(pattern, pattern)
    assert wildcard_match(value, pattern) == reference(value, pattern) == (value == pattern)
    assert wildcard_match(pattern.replace("/", "\\"), pattern)  # a backslash in the value is a slash

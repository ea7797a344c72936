"""The edit tool's matching: exact match first, then eight fuzzy replacers, in the reference's order.

Each replacer yields candidate substrings of the content; :func:`replace` takes the first candidate that occurs
exactly once (or every occurrence with ``replace_all``). A candidate that occurs several times is ambiguous and the
next one is tried; if every found candidate was ambiguous the edit fails: ambiguity is an error, never a guess.

Order: simple (exact), line-trimmed, block-anchor, whitespace-normalized, indentation-flexible, escape-normalized,
trimmed-boundary, context-aware, multi-occurrence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

__all__ = ["REPLACERS", "AmbiguousMatch", "NoMatch", "SpanTooLarge", "replace"]

SIMILARITY_THRESHOLD = 0.65

Replacer = Callable[[str, str], Iterator[str]]


class NoMatch(Exception):
    """No candidate was found in the content."""


class AmbiguousMatch(Exception):
    """Every candidate found occurs more than once."""


class SpanTooLarge(Exception):
    """A fuzzy candidate spans far more than ``old_string`` (refused rather than risk a large wrong edit)."""


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _join_span(lines: list[str], start: int, count: int) -> str:
    return "\n".join(lines[start : start + count])


def simple(content: str, find: str) -> Iterator[str]:
    yield find


def line_trimmed(content: str, find: str) -> Iterator[str]:
    original = _lines(content)
    search = _lines(find)
    if search and search[-1] == "":
        search.pop()
    n = len(search)
    if n == 0:
        return
    wanted = [s.strip() for s in search]
    for i in range(len(original) - n + 1):
        if all(original[i + j].strip() == wanted[j] for j in range(n)):
            yield _join_span(original, i, n)


def _levenshtein(a: str, b: str) -> int:
    if not a:
        return len(b)
    if not b:
        return len(a)
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _similarity(original: list[str], search: list[str], start: int, end: int, *, early_exit: bool) -> float:
    actual = end - start + 1
    checks = min(len(search) - 2, actual - 2)
    if checks <= 0:
        return 1.0
    total = 0.0
    for j in range(1, min(len(search) - 1, actual - 1)):
        a = original[start + j].strip()
        b = search[j].strip()
        longest = max(len(a), len(b))
        if longest == 0:
            continue
        total += (1 - _levenshtein(a, b) / longest) / checks
        if early_exit and total >= SIMILARITY_THRESHOLD:
            break
    return total


def block_anchor(content: str, find: str) -> Iterator[str]:
    original = _lines(content)
    search = _lines(find)
    if len(search) < 3:
        return
    if search[-1] == "":
        search.pop()
    if len(search) < 3:
        return
    first, last = search[0].strip(), search[-1].strip()
    size = len(search)
    slack = max(1, size // 4)
    candidates: list[tuple[int, int]] = []
    for i, line in enumerate(original):
        if line.strip() != first:
            continue
        for j in range(i + 2, len(original)):
            if original[j].strip() == last:
                if abs((j - i + 1) - size) <= slack:
                    candidates.append((i, j))
                break
    if not candidates:
        return
    if len(candidates) == 1:
        start, end = candidates[0]
        if _similarity(original, search, start, end, early_exit=True) >= SIMILARITY_THRESHOLD:
            yield _join_span(original, start, end - start + 1)
        return
    best: tuple[int, int] | None = None
    best_score = -1.0
    for start, end in candidates:
        score = _similarity(original, search, start, end, early_exit=False)
        if score > best_score:
            best_score, best = score, (start, end)
    if best is not None and best_score >= SIMILARITY_THRESHOLD:
        yield _join_span(original, best[0], best[1] - best[0] + 1)


def _normalize_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def whitespace_normalized(content: str, find: str) -> Iterator[str]:
    wanted = _normalize_ws(find)
    lines = _lines(content)
    words = find.strip().split()
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words)) if words else None
    for line in lines:
        normalized = _normalize_ws(line)
        if normalized == wanted:
            yield line
        elif pattern is not None and wanted in normalized:
            match = pattern.search(line)
            if match:
                yield match.group(0)
    find_lines = _lines(find)
    if len(find_lines) > 1:
        n = len(find_lines)
        for i in range(len(lines) - n + 1):
            block = _join_span(lines, i, n)
            if _normalize_ws(block) == wanted:
                yield block


def _dedent(text: str) -> str:
    lines = _lines(text)
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    if not indents:
        return text
    cut = min(indents)
    return "\n".join(line if not line.strip() else line[cut:] for line in lines)


def indentation_flexible(content: str, find: str) -> Iterator[str]:
    wanted = _dedent(find)
    lines = _lines(content)
    n = len(_lines(find))
    for i in range(len(lines) - n + 1):
        block = _join_span(lines, i, n)
        if _dedent(block) == wanted:
            yield block


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "\n": "\n", "$": "$"}
_ESCAPE = re.compile(r"\\(n|t|r|'|\"|`|\\|\n|\$)")


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], text)


def escape_normalized(content: str, find: str) -> Iterator[str]:
    wanted = _unescape(find)
    if wanted in content:
        yield wanted
    lines = _lines(content)
    n = len(_lines(wanted))
    for i in range(len(lines) - n + 1):
        block = _join_span(lines, i, n)
        if _unescape(block) == wanted:
            yield block


def trimmed_boundary(content: str, find: str) -> Iterator[str]:
    trimmed = find.strip()
    if trimmed == find:
        return
    if trimmed in content:
        yield trimmed
    lines = _lines(content)
    n = len(_lines(find))
    for i in range(len(lines) - n + 1):
        block = _join_span(lines, i, n)
        if block.strip() == trimmed:
            yield block


def context_aware(content: str, find: str) -> Iterator[str]:
    search = _lines(find)
    if len(search) < 3:
        return
    if search[-1] == "":
        search.pop()
    if len(search) < 3:
        return
    lines = _lines(content)
    first, last = search[0].strip(), search[-1].strip()
    for i, line in enumerate(lines):
        if line.strip() != first:
            continue
        for j in range(i + 2, len(lines)):
            if lines[j].strip() != last:
                continue
            block = lines[i : j + 1]
            if len(block) == len(search):
                matching = nonempty = 0
                for k in range(1, len(block) - 1):
                    a, b = block[k].strip(), search[k].strip()
                    if a or b:
                        nonempty += 1
                        matching += a == b
                if nonempty == 0 or matching / nonempty >= 0.5:
                    yield "\n".join(block)
                    return
            break


def multi_occurrence(content: str, find: str) -> Iterator[str]:
    start = 0
    while (index := content.find(find, start)) >= 0:
        yield find
        start = index + len(find)


REPLACERS: tuple[Replacer, ...] = (
    simple,
    line_trimmed,
    block_anchor,
    whitespace_normalized,
    indentation_flexible,
    escape_normalized,
    trimmed_boundary,
    context_aware,
    multi_occurrence,
)


def _too_large(search: str, find: str) -> bool:
    search_lines = len(_lines(search))
    find_lines = len(_lines(find))
    if search_lines >= max(find_lines + 3, 2 * find_lines):
        return True
    wanted = len(find.strip())
    return find_lines > 1 and len(search.strip()) > max(wanted + 500, 4 * wanted)


def replace(content: str, old: str, new: str, *, replace_all: bool = False) -> tuple[str, int]:
    """Replace ``old`` in ``content``; return the new content and the number of replacements.

    Raises:
        NoMatch: no replacer found ``old``.
        AmbiguousMatch: every candidate found occurs more than once (and ``replace_all`` is false).
        SpanTooLarge: a candidate spans much more than ``old``.
    """
    found = False
    for replacer in REPLACERS:
        for search in replacer(content, old):
            if not search:
                continue
            index = content.find(search)
            if index < 0:
                continue
            found = True
            if replacer is not simple and _too_large(search, old):
                raise SpanTooLarge()
            if replace_all:
                count = content.count(search)
                return content.replace(search, new), count
            if content.rfind(search) != index:
                continue
            return content[:index] + new + content[index + len(search) :], 1
    if not found:
        raise NoMatch()
    raise AmbiguousMatch()

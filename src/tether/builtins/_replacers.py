"""The edit tool's matching: strategies from the fewest transformations to the most; each one is all or nothing.

A strategy finds every place where ``old_string`` matches once its transformation is applied (trailing whitespace
ignored, indentation ignored, ...). :func:`replace` takes the first strategy that finds anything: one place is
replaced; several places are refused with their line numbers (:class:`AmbiguousMatch`), never guessed, because a
later, more lenient strategy would find them all again. So an exact match beats a match after trimming trailing
whitespace, which beats an indentation-flexible one.

A match that changed indentation (``old_string`` dedented, doubled, in tabs, or its first line's indentation lost)
applies the same change to ``new_string``, so the result keeps the file's indentation, first line included. When
``new_string``'s indentation cannot be mapped that way, the edit is refused (:class:`IndentationUnclear`).

Order: exact, trailing whitespace, indentation, block anchors (similar middle lines), normalized whitespace,
unescaped escapes, trimmed boundaries, context anchors. The lenient ones follow OpenCode's replacers (reference
§2.4), each refusing rather than choosing between several candidates.

Text is split on ``\\n`` only: a CRLF file keeps its ``\\r`` at the end of each line, and a line span never takes the
``\\r`` of its last line (``new_string`` arrives already converted to the file's line endings).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from fractions import Fraction

from .._record import record

__all__ = [
    "STRATEGIES",
    "AmbiguousMatch",
    "IndentationUnclear",
    "Match",
    "NoMatch",
    "SpanTooLarge",
    "replace",
]

SIMILARITY_THRESHOLD = 0.65


class NoMatch(Exception):
    """No strategy found ``old_string`` in the content."""


class AmbiguousMatch(Exception):
    """The first strategy that found ``old_string`` found it in several places (1-based ``lines``)."""

    def __init__(self, lines: Sequence[int], how: str) -> None:
        super().__init__(lines, how)
        self.lines = tuple(lines)
        self.how = how


class IndentationUnclear(Exception):
    """``old_string`` matched (at 1-based ``line``) only with another indentation, and ``new_string``'s cannot be mapped."""

    def __init__(self, line: int, how: str) -> None:
        super().__init__(line, how)
        self.line = line
        self.how = how


class SpanTooLarge(Exception):
    """A fuzzy candidate spans far more than ``old_string`` (refused rather than risk a large wrong edit)."""


@record
class Match:
    """A place to replace: ``content[start:end]``; ``replacement`` is ``None`` when the indentation cannot be mapped."""

    start: int
    end: int
    replacement: str | None


class _Doc:
    """The content split into lines, with each line's offset."""

    __slots__ = ("lines", "starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        starts = [0]
        for line in self.lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        self.starts = starts

    def line_of(self, offset: int) -> int:
        """The 0-based line holding ``offset``."""
        return bisect_right(self.starts, offset) - 1

    def span(self, first: int, count: int, *, newline: bool) -> tuple[int, int]:
        """The offsets of ``count`` lines from ``first``; with ``newline``, the last line's terminator included."""
        last = first + count - 1
        end = self.starts[last] + len(self.lines[last])
        if newline and last < len(self.lines) - 1:
            end += 1
        elif self.lines[last].endswith("\r"):
            end -= 1
        return self.starts[first], end


Strategy = Callable[[_Doc, str, str], list[Match]]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _find_lines(find: str) -> tuple[list[str], bool]:
    """``find``'s lines, and whether it ends with a line terminator (its empty last element dropped)."""
    lines = find.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
        return lines, True
    return lines, False


# --- indentation mapping -------------------------------------------------------------------------------------------

IndentMap = Callable[[str], "str | None"]


def _identity(indent: str) -> str | None:
    return indent


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _uniform(pairs: list[tuple[str, str]]) -> IndentMap | None:
    """One prefix swapped for another on every line (a dedented or re-based block)."""
    deltas = {(f[: len(f) - c], o[: len(o) - c]) for f, o in pairs for c in [_common_suffix(f, o)]}
    if len(deltas) != 1:
        return None
    (old_prefix, file_prefix) = deltas.pop()
    file_chars = {c for _, o in pairs for c in o}

    def shift(indent: str) -> str | None:
        if not indent.startswith(old_prefix):
            return None
        rest = indent[len(old_prefix) :]
        if file_chars and not set(rest) <= file_chars:
            return None  # a tab where the file has spaces (or the reverse): its width is unknown
        return file_prefix + rest

    return shift


def _linear(pairs: list[tuple[str, str]]) -> IndentMap | None:
    """Widths scaled by one factor in one character each side (tabs for spaces, indentation doubled)."""
    old_chars = {c for f, _ in pairs for c in f}
    file_chars = {c for _, o in pairs for c in o}
    if len(old_chars) != 1 or len(file_chars) != 1:
        return None
    widths = sorted({(len(f), len(o)) for f, o in pairs})
    if len(widths) < 2 or widths[0][0] == widths[-1][0]:
        return None
    (f1, o1), (f2, o2) = widths[0], widths[-1]
    ratio = Fraction(o2 - o1, f2 - f1)
    base = o1 - ratio * f1
    if ratio <= 0 or any(ratio * f + base != o for f, o in widths):
        return None
    old_char, file_char = old_chars.pop(), file_chars.pop()

    def scale(indent: str) -> str | None:
        if indent.strip(old_char):
            return None
        width = ratio * len(indent) + base
        return file_char * int(width) if width.denominator == 1 and width >= 0 else None

    return scale


def _table(pairs: list[tuple[str, str]]) -> IndentMap | None:
    """Each indentation of ``old_string`` stands for exactly one of the file's (and the reverse)."""
    table: dict[str, str] = {}
    for f, o in pairs:
        if table.setdefault(f, o) != o:
            return None
    if len(set(table.values())) != len(table):
        return None
    return table.get


def _indent_map(pairs: list[tuple[str, str]]) -> IndentMap | None:
    if all(f == o for f, o in pairs):
        return _identity
    if len(set(pairs)) == 1 and all(pairs[0]):
        # One indentation each side, neither empty: a shift, a scale (doubled) or tabs for spaces alike. Only that
        # indentation can be mapped; a deeper line of new_string would be a guess.
        return _table(pairs)
    return _uniform(pairs) or _linear(pairs) or _table(pairs)


def _pairs(find_lines: Sequence[str], file_lines: Sequence[str]) -> list[tuple[int, str, str]]:
    """(index in ``old_string``, its indentation, the file's) for each non-blank pair of lines."""
    return [
        (k, _indent(f), _indent(o))
        for k, (f, o) in enumerate(zip(find_lines, file_lines, strict=False))
        if f.strip() and o.strip()
    ]


def _reindent(pairs: list[tuple[int, str, str]], new: str) -> str | None:
    """``new`` with the indentation change that maps ``old_string``'s lines onto the file's; ``None`` if unclear.

    A first line without indentation where the file has some is either part of a shifted block (every line shifted
    by the same prefix) or a lost indentation (the other lines keep their own mapping: the model started
    ``old_string`` at the first character). An unindented first line of ``new_string`` gets the file's indentation
    either way; an indented one is taken as written in the other lines' frame when the indentation was lost, and is
    refused in a shifted block (no way to tell what was meant).
    """
    if all(f == o for _, f, o in pairs):
        return new
    bare_first = pairs[0][0] == 0 and pairs[0][1] == "" and pairs[0][2] != ""
    lost = bare_first
    shifted = _uniform([(f, o) for _, f, o in pairs]) if lost and len(pairs) > 1 else None
    if shifted is not None:
        lost, mapping = False, shifted
    else:
        mapping = _indent_map([(f, o) for _, f, o in (pairs[1:] if lost else pairs)])
    if mapping is None:
        return None
    out: list[str] = []
    for k, line in enumerate(new.split("\n")):
        if not line.strip():
            out.append(line)
            continue
        indent = _indent(line)
        if k == 0 and bare_first:
            if indent == "":
                out.append(pairs[0][2] + line)
                continue
            if not lost:
                return None
            if len(pairs) == 1:
                out.append(line)
                continue
        mapped = mapping(indent)
        if mapped is None:
            return None
        out.append(mapped + line[len(indent) :])
    return "\n".join(out)


# --- strategies ----------------------------------------------------------------------------------------------------


def exact(doc: _Doc, find: str, new: str) -> list[Match]:
    """Every exact occurrence. One that starts after the indentation of its line, with ``old_string``'s first line
    unindented, is taken from the line start with ``new_string`` re-indented (else an indented ``new_string`` would get
    the indentation twice). Nothing after the match is touched (trailing whitespace stays: it can be meaningful)."""
    text = doc.text
    head = find.partition("\n")[0]
    bare_head = bool(head.strip()) and head[0] not in (" ", "\t")
    matches: list[Match] = []
    index = text.find(find)
    while index >= 0:
        start, end, replacement = index, index + len(find), new
        line_start = text.rfind("\n", 0, index) + 1
        prefix = text[line_start:index]
        if bare_head and prefix and not prefix.strip(" \t"):
            first = doc.line_of(index)
            find_lines = find.split("\n")
            file_lines = doc.lines[first : first + len(find_lines)]
            replacement = _reindent(_pairs(find_lines, file_lines), new)
            start = line_start
        matches.append(Match(start=start, end=end, replacement=replacement))
        index = text.find(find, index + len(find))
    return matches


def _line_blocks(doc: _Doc, find: str, new: str, same: Callable[[str, str], bool]) -> list[Match]:
    find_lines, newline = _find_lines(find)
    n = len(find_lines)
    lines = doc.lines
    matches: list[Match] = []
    for i in range(len(lines) - n + 1):
        if all(same(lines[i + j], find_lines[j]) for j in range(n)):
            start, end = doc.span(i, n, newline=newline)
            replacement = _reindent(_pairs(find_lines, lines[i : i + n]), new)
            matches.append(Match(start=start, end=end, replacement=replacement))
    return matches


def trailing_whitespace(doc: _Doc, find: str, new: str) -> list[Match]:
    """Whole lines equal once trailing whitespace is ignored."""
    return _line_blocks(doc, find, new, lambda a, b: a.rstrip() == b.rstrip())


def indentation(doc: _Doc, find: str, new: str) -> list[Match]:
    """Whole lines equal once indentation (and trailing whitespace) is ignored; ``new_string`` re-indented."""
    return _line_blocks(doc, find, new, lambda a, b: a.strip() == b.strip())


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


def _similarity(original: list[str], search: list[str], start: int, end: int) -> float:
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
    return total


def _anchored(doc: _Doc, find: str, new: str, first: int, last: int) -> Match:
    """A block from ``first`` to ``last`` (0-based lines) matched by its anchors; indentation from equal lines."""
    find_lines, newline = _find_lines(find)
    block = doc.lines[first : last + 1]
    if len(block) == len(find_lines):
        pairs = [
            (k, f, o) for k, f, o in _pairs(find_lines, block) if find_lines[k].strip() == block[k].strip()
        ]
    else:
        pairs = [
            (0, _indent(find_lines[0]), _indent(block[0])),
            (len(find_lines) - 1, _indent(find_lines[-1]), _indent(block[-1])),
        ]
    start, end = doc.span(first, last - first + 1, newline=newline)
    return Match(start=start, end=end, replacement=_reindent(pairs, new))


def block_anchor(doc: _Doc, find: str, new: str) -> list[Match]:
    """Blocks whose first and last lines equal ``old_string``'s (trimmed), of about its size, with middle lines at
    least 65 % similar."""
    search, _ = _find_lines(find)
    if len(search) < 3:
        return []
    original = doc.lines
    first, last = search[0].strip(), search[-1].strip()
    size = len(search)
    slack = max(1, size // 4)
    matches: list[Match] = []
    for i, line in enumerate(original):
        if line.strip() != first:
            continue
        for j in range(i + 2, len(original)):
            if original[j].strip() == last:
                if (
                    abs((j - i + 1) - size) <= slack
                    and _similarity(original, search, i, j) >= SIMILARITY_THRESHOLD
                ):
                    matches.append(_anchored(doc, find, new, i, j))
                break
    return matches


def _normalize_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def whitespace_normalized(doc: _Doc, find: str, new: str) -> list[Match]:
    """Whole lines (or blocks) equal once runs of whitespace are collapsed; else the same words inside a line."""
    wanted = _normalize_ws(find)
    if not wanted:
        return []
    lines = doc.lines
    find_lines, newline = _find_lines(find)
    n = len(find_lines)
    matches: list[Match] = []
    for i in range(len(lines) - n + 1):
        block = lines[i : i + n]
        if _normalize_ws("\n".join(block)) == wanted:
            start, end = doc.span(i, n, newline=newline)
            matches.append(Match(start=start, end=end, replacement=_reindent(_pairs(find_lines, block), new)))
    if matches or n > 1:
        return matches
    pattern = re.compile(r"\s+".join(re.escape(w) for w in find.split()))
    for i, line in enumerate(lines):
        found = pattern.search(line)
        if found:
            base = doc.starts[i]
            matches.append(Match(start=base + found.start(), end=base + found.end(), replacement=new))
    return matches


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "\n": "\n", "$": "$"}
_ESCAPE = re.compile(r"\\(n|t|r|'|\"|`|\\|\n|\$)")


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], text)


def escape_normalized(doc: _Doc, find: str, new: str) -> list[Match]:
    """Exact occurrences of ``old_string`` with its backslash escapes (``\\n``, ``\\"``, ...) unescaped."""
    wanted = _unescape(find)
    return exact(doc, wanted, new) if wanted and wanted != find else []


def trimmed_boundary(doc: _Doc, find: str, new: str) -> list[Match]:
    """Exact occurrences of ``old_string`` without its leading and trailing whitespace."""
    trimmed = find.strip()
    return exact(doc, trimmed, new) if trimmed and trimmed != find else []


def context_aware(doc: _Doc, find: str, new: str) -> list[Match]:
    """Blocks of ``old_string``'s size whose first and last lines equal its own (trimmed) and at least half of whose
    non-empty middle lines do."""
    search, _ = _find_lines(find)
    if len(search) < 3:
        return []
    lines = doc.lines
    first, last = search[0].strip(), search[-1].strip()
    n = len(search)
    matches: list[Match] = []
    for i in range(len(lines) - n + 1):
        block = lines[i : i + n]
        if block[0].strip() != first or block[-1].strip() != last:
            continue
        matching = nonempty = 0
        for k in range(1, n - 1):
            a, b = block[k].strip(), search[k].strip()
            if a or b:
                nonempty += 1
                matching += a == b
        if nonempty == 0 or matching / nonempty >= 0.5:
            matches.append(_anchored(doc, find, new, i, i + n - 1))
    return matches


# (strategy, how the model is told what was ignored)
STRATEGIES: tuple[tuple[Strategy, str], ...] = (
    (exact, ""),
    (trailing_whitespace, " after ignoring trailing whitespace"),
    (indentation, " after ignoring indentation"),
    (block_anchor, " by its first and last lines"),
    (whitespace_normalized, " after normalizing whitespace"),
    (escape_normalized, " after unescaping it"),
    (trimmed_boundary, " after trimming it"),
    (context_aware, " by its first and last lines"),
)


def _too_large(search: str, find: str) -> bool:
    search_lines = search.count("\n") + 1
    find_lines = find.count("\n") + 1
    if search_lines >= max(find_lines + 3, 2 * find_lines):
        return True
    wanted = len(find.strip())
    return find_lines > 1 and len(search.strip()) > max(wanted + 500, 4 * wanted)


def replace(content: str, old: str, new: str, *, replace_all: bool = False) -> tuple[str, int]:
    """Replace ``old`` in ``content``; return the new content and the number of replacements.

    Raises:
        NoMatch: no strategy found ``old``.
        AmbiguousMatch: the first strategy that found ``old`` found several places (and ``replace_all`` is false).
        IndentationUnclear: ``old`` matched with another indentation that cannot be carried over to ``new``.
        SpanTooLarge: a lenient match spans much more than ``old``.
    """
    doc = _Doc(content)
    for strategy, how in STRATEGIES:
        found = {(m.start, m.end): m for m in strategy(doc, old, new) if m.end > m.start}
        if not found:
            continue
        matches = sorted(found.values(), key=lambda m: m.start)
        if strategy is not exact and any(_too_large(content[m.start : m.end], old) for m in matches):
            raise SpanTooLarge()
        if len(matches) > 1 and not replace_all:
            raise AmbiguousMatch([doc.line_of(m.start) + 1 for m in matches], how)
        parts: list[str] = []
        position = count = 0
        for m in matches:
            if m.start < position:
                continue  # overlaps the previous one (replace_all)
            if m.replacement is None:
                raise IndentationUnclear(doc.line_of(m.start) + 1, how)
            parts += [content[position : m.start], m.replacement]
            position = m.end
            count += 1
        parts.append(content[position:])
        return "".join(parts), count
    raise NoMatch()

"""The edit tool's matching: strategies from the fewest transformations to the most; each one is all or nothing.

A strategy finds every place where ``old_string`` matches once its transformation is applied (trailing whitespace
ignored, indentation ignored, ...). :func:`replace` takes the first strategy that finds anything: one place is
replaced; several places are refused with their line numbers (:class:`AmbiguousMatch`), never guessed, because a
later, more lenient strategy would find them all again. So an exact match beats a match after trimming trailing
whitespace, which beats an indentation-flexible one.

A match that changed indentation (``old_string`` dedented, doubled, in tabs, or its first line's indentation lost)
leaves a question: is ``new_string`` in ``old_string``'s indentation (re-indent it the same way) or already in the
file's (keep it)? ``_indentation.carry_over`` decides from evidence; when it cannot, the edit is refused
(:class:`IndentationUnclear`, with the reason).

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

from .._record import record
from ._indentation import Style, Unclear, carry_over, indent_of, style_of

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
    """``old_string`` matched (at 1-based ``line``) only with another indentation, and ``new_string``'s is unclear.

    ``old_indent`` and ``file_indent`` are the indentation of that line in ``old_string`` and in the file; ``reason``
    says what was unclear.
    """

    def __init__(self, line: int, how: str, reason: str, old_indent: str, file_indent: str) -> None:
        super().__init__(line, how, reason)
        self.line = line
        self.how = how
        self.reason = reason
        self.old_indent = old_indent
        self.file_indent = file_indent


class SpanTooLarge(Exception):
    """A fuzzy candidate spans far more than ``old_string`` (refused rather than risk a large wrong edit)."""


@record
class Match:
    """A place to replace: ``content[start:end]``; ``replacement`` is :class:`Unclear` when ``new_string``'s
    indentation could not be decided (``old_indent`` is then the indentation ``old_string``'s first line had)."""

    start: int
    end: int
    replacement: str | Unclear
    old_indent: str = ""


class _Doc:
    """The content split into lines, with each line's offset."""

    __slots__ = ("_style", "lines", "starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        starts = [0]
        for line in self.lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        self.starts = starts
        self._style: Style | None = None

    @property
    def style(self) -> Style:
        """The file's indentation (computed on first use: only a match that changed indentation needs it)."""
        if self._style is None:
            self._style = style_of(self.lines)
        return self._style

    def carry(self, find_lines: Sequence[str], file_lines: Sequence[str | None], new: str) -> str | Unclear:
        """``new`` in the file's indentation, ``find_lines`` having matched ``file_lines``."""
        return carry_over(find_lines, file_lines, new, self.style)

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


def _find_lines(find: str) -> tuple[list[str], bool]:
    """``find``'s lines, and whether it ends with a line terminator (its empty last element dropped)."""
    lines = find.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
        return lines, True
    return lines, False


# --- strategies ----------------------------------------------------------------------------------------------------


def exact(doc: _Doc, find: str, new: str) -> list[Match]:
    """Every exact occurrence. One that starts inside the indentation of its line (``old_string``'s first line
    unindented, or less indented than the file's) is an indentation mismatch: it is taken from the line start, with
    ``new_string`` carried over to the file's indentation (else ``new_string`` would land after the file's leading
    whitespace, indented twice). Nothing after the match is touched (trailing whitespace stays: it can be meaningful).
    """
    text = doc.text
    head = find.partition("\n")[0]
    matches: list[Match] = []
    index = text.find(find)
    while index >= 0:
        start, end, replacement = index, index + len(find), new
        line_start = text.rfind("\n", 0, index) + 1
        prefix = text[line_start:index]
        if head.strip() and prefix and not prefix.strip(" \t"):
            first = doc.line_of(index)
            find_lines = find.split("\n")
            replacement = doc.carry(find_lines, doc.lines[first : first + len(find_lines)], new)
            start = line_start
        matches.append(Match(start=start, end=end, replacement=replacement, old_indent=indent_of(head)))
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
            replacement = doc.carry(find_lines, lines[i : i + n], new)
            matches.append(
                Match(start=start, end=end, replacement=replacement, old_indent=indent_of(find_lines[0]))
            )
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
    file_lines: list[str | None]
    if len(block) == len(find_lines):
        file_lines = [o if f.strip() == o.strip() else None for f, o in zip(find_lines, block, strict=True)]
    else:
        file_lines = [block[0], *[None] * (len(find_lines) - 2), block[-1]]
    start, end = doc.span(first, last - first + 1, newline=newline)
    return Match(
        start=start,
        end=end,
        replacement=doc.carry(find_lines, file_lines, new),
        old_indent=indent_of(find_lines[0]),
    )


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
            matches.append(
                Match(
                    start=start,
                    end=end,
                    replacement=doc.carry(find_lines, block, new),
                    old_indent=indent_of(find_lines[0]),
                )
            )
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
            if isinstance(m.replacement, Unclear):
                line = doc.line_of(m.start)
                raise IndentationUnclear(
                    line + 1, how, m.replacement.reason, m.old_indent, indent_of(doc.lines[line])
                )
            parts += [content[position : m.start], m.replacement]
            position = m.end
            count += 1
        parts.append(content[position:])
        return "".join(parts), count
    raise NoMatch()

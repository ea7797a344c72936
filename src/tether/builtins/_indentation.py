"""Which indentation ``new_string`` is written in, when ``old_string`` matched the file only with another one.

A model that sent ``old_string`` with the wrong indentation wrote ``new_string`` in one of two frames: the same wrong
indentation (it works in a shifted frame: both strings dedented, both in tabs, ...), or the file's own (it got only
``old_string`` wrong). The first needs ``new_string`` re-indented the way ``old_string`` maps onto the file; the second
needs it kept as written. The wrong one moves correct code (a method to column 0 outside its class, a ``return`` out of
its function), so :func:`carry_over` builds each reading and keeps the one the evidence supports, else says
:class:`Unclear` (the edit is then refused, the file untouched).

The evidence is ``new_string``'s lines paired with ``old_string``'s (unchanged lines, and changed ones that look
alike), placed against the file's lines that ``old_string`` matched. A paired line sits where the change puts it: in
place at the top of the change; at the same offset under the same parent; under new parents (wrapped), one of them in
its old place; with its parents removed (unwrapped), in the place of one of them; under a parent that replaced its
old one, in place. A reading that puts one elsewhere is ruled out. A new first line (not paired) is in place where the
file's first matched line is: with the paired lines, this is how a single-line edit compares ``new_string``'s
indentation with both ``old_string``'s and the file's. Of several readings left, those with the first line in place,
then the one whose second line follows its first as code does, are kept; and a reading is chosen only if something
puts it ahead of the others (a paired line or the first line in place).

The re-indentation itself (``old_string``'s frame to the file's) is a map of indentation strings learned from the
matched lines: one prefix swapped for another, widths scaled (tabs for spaces, a doubled indentation), or one level of
the model's for one of the file's. Candidate maps that disagree about a line of ``new_string`` leave it unmapped,
unless only one lands on whole levels of the file. A first line without indentation where the file has some (the model
started at the first character) gives two readings: the whole block shifted, or only that line's indentation lost.

Matching (where ``old_string`` is) belongs to ``_replacers``; this module only sees the matched lines.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from fractions import Fraction
from math import gcd

from .._record import record

__all__ = ["Style", "Unclear", "carry_over", "indent_of", "style_of"]

IndentMap = Callable[[str], "str | None"]
# A line ending with one of these continues into a deeper next line (a block, a bracket, an expression).
_OPENERS = (":", "{", "(", "[", "\\", "=", "+", "-", "*", "/", "&&", "||", "and", "or", "=>", "->")


def indent_of(line: str) -> str:
    """The leading spaces and tabs of ``line``."""
    return line[: len(line) - len(line.lstrip(" \t"))]


@record
class Style:
    """How a file indents: the character, and the width of one level in it (1 for tabs)."""

    char: str
    unit: int


@record
class Unclear:
    """No reading of ``new_string``'s indentation is supported by the evidence; ``reason`` says what was unclear
    (a clause about ``new_string``: "its first line is indented like neither ...")."""

    reason: str


def style_of(lines: Sequence[str]) -> Style:
    """The file's indentation: tabs if more lines start with a tab, else the most common step between lines."""
    tabs = spaces = 0
    steps: Counter[int] = Counter()
    previous = 0
    for line in lines:
        if not line.strip():
            continue
        tabs += line.startswith("\t")
        spaces += line.startswith(" ")
        indent = indent_of(line)
        width = len(indent) if "\t" not in indent else previous
        if 2 <= width - previous <= 8:
            steps[width - previous] += 1
        previous = width
    if tabs > spaces:
        return Style(char="\t", unit=1)
    unit = max((2, 3, 4, 8), key=lambda step: (steps[step], step == 4))
    return Style(char=" ", unit=unit)


# --- maps from old_string's indentation to the file's --------------------------------------------------------------

Pairs = list[tuple[str, str]]  # (old_string's indentation, the file's) per matched line


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _uniform(pairs: Pairs) -> IndentMap | None:
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


def _linear(pairs: Pairs) -> IndentMap | None:
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
    return _scaled(old_chars.pop(), file_chars.pop(), ratio, base)


def _scaled(old_char: str, file_char: str, ratio: Fraction, base: Fraction) -> IndentMap:
    def scale(indent: str) -> str | None:
        if indent.strip(old_char):
            return None
        width = ratio * len(indent) + base
        return file_char * int(width) if width.denominator == 1 and width >= 0 else None

    return scale


def _table(pairs: Pairs) -> IndentMap | None:
    """Each indentation of ``old_string`` stands for exactly one of the file's (and the reverse)."""
    table: dict[str, str] = {}
    for f, o in pairs:
        if table.setdefault(f, o) != o:
            return None
    if len(set(table.values())) != len(table):
        return None
    return table.get


def _levels(pairs: Pairs, indents: Sequence[str], style: Style) -> list[IndentMap]:
    """One level of the model's indentation for one of the file's, from a base that fits every pair.

    The model's level is the file's when both use the same character; else (or when every width the model wrote is
    a multiple of another step) the step its widths share. Each plausible step gives one map.
    """
    model_chars = {c for f, _ in pairs for c in f} | {c for i in indents for c in i}
    file_chars = {c for _, o in pairs for c in o}
    if len(model_chars) > 1 or not file_chars <= {style.char}:
        return []
    model_char = model_chars.pop() if model_chars else style.char
    shared = 0
    for width in {len(f) for f, _ in pairs} | {len(i) for i in indents}:
        shared = gcd(shared, width)
    if model_char == style.char:
        own = style.unit if model_char == " " else 1
        steps = {own} | ({shared} if shared >= 2 and shared != own else set())
    elif model_char == "\t":
        steps = {1} | ({shared} if shared >= 2 else set())
    else:
        steps = {shared} if shared in (2, 3, 4, 8) else {4}
    maps: list[IndentMap] = []
    for step in steps:
        ratio = Fraction(style.unit, step)
        bases = {len(o) - ratio * len(f) for f, o in pairs}
        if len(bases) == 1:
            maps.append(_scaled(model_char, style.char, ratio, bases.pop()))
    return maps


def _origin(pairs: Pairs) -> IndentMap | None:
    """Tabs for spaces (or the reverse) counted from column 0: one indentation each side, widths in proportion."""
    if len(set(pairs)) != 1:
        return None
    f, o = pairs[0]
    if not f or not o or len(set(f)) != 1 or len(set(o)) != 1 or f[0] == o[0]:
        return None
    return _scaled(f[0], o[0], Fraction(len(o), len(f)), Fraction(0))


def _mapping(
    pairs: Pairs, indents: Sequence[str], style: Style, *, shift_only: bool = False
) -> IndentMap | None:
    """The map every candidate that fits ``pairs`` agrees on, line by line (a line they disagree on maps to None)."""
    if all(f == o for f, o in pairs):
        return lambda indent: indent
    scales = () if shift_only else (_linear(pairs), _origin(pairs), _table(pairs))
    candidates = [m for m in (_uniform(pairs), *scales) if m is not None]
    candidates += _levels(pairs, indents, style)
    if not candidates:
        return None

    def agreed(indent: str) -> str | None:
        values = {value for m in candidates if (value := m(indent)) is not None}
        if len(values) > 1:
            # Rivals disagree (a deeper line of a one-level block: shifted, or a level of the model's?): only one
            # landing on a whole number of the file's levels is believed.
            values = {v for v in values if _width(v) % _level(style) == 0}
        return values.pop() if len(values) == 1 else None

    return agreed


def _apply(lines: Sequence[str], first: IndentMap, rest: IndentMap) -> list[str] | None:
    out: list[str] = []
    for j, line in enumerate(lines):
        if not line.strip():
            out.append(line)
            continue
        indent = indent_of(line)
        mapped = (first if j == 0 else rest)(indent)
        if mapped is None:
            return None
        out.append(mapped + line[len(indent) :])
    return out


def _old_frame(pairs: list[tuple[int, str, str]], new_lines: list[str], style: Style) -> list[list[str]]:
    """``new_lines`` re-indented as ``old_string`` maps onto the file: every distinct reading (none if unmappable).

    A first line without indentation where the file has some is either part of a shifted block (every line shifted
    alike) or a lost indentation (the other lines keep their own map): both readings are offered, and the evidence
    chooses between them when they differ.
    """
    indents = [indent_of(line) for line in new_lines if line.strip()]
    bare_first = pairs[0][0] == 0 and pairs[0][1] == "" and pairs[0][2] != ""
    # With a bare first line, the whole block is read as shifted only: a scale fitted through the bare line and
    # one other would be a guess.
    whole = _mapping([(f, o) for _, f, o in pairs], indents, style, shift_only=bare_first)
    readings = [_apply(new_lines, whole, whole)] if whole is not None else []
    if bare_first:
        file_first = pairs[0][2]
        rest = _mapping([(f, o) for _, f, o in pairs[1:]], indents, style)
        if rest is not None:
            readings.append(_apply(new_lines, lambda i: file_first if i == "" else rest(i), rest))
    distinct: list[list[str]] = []
    for reading in readings:
        if reading is not None and reading not in distinct:
            distinct.append(reading)
    return distinct


# --- the evidence --------------------------------------------------------------------------------------------------


TAB_WIDTH = 4  # a tab's width when comparing depths (one level: tab-indented files step by one tab)


def _width(indent: str) -> int:
    return len(indent.expandtabs(TAB_WIDTH))


def _level(style: Style) -> int:
    """The width of one level of the file's indentation."""
    return style.unit if style.char == " " else TAB_WIDTH


def _parents(lines: Sequence[str | None]) -> list[int | None]:
    """For each line, the nearest structural line before it with less indentation (``None``: none in the block).

    ``lines`` holds ``None`` for lines to skip. A comment gets a parent but is never one (comments sit anywhere).
    """
    parents: list[int | None] = []
    stack: list[tuple[int, int]] = []  # (width, index) of structural lines, widths increasing
    for i, line in enumerate(lines):
        if line is None or not line.strip():
            parents.append(None)
            continue
        width = _width(indent_of(line))
        if not _structural(line):
            parents.append(next((index for w, index in reversed(stack) if w < width), None))
            continue
        while stack and stack[-1][0] >= width:
            stack.pop()
        parents.append(stack[-1][1] if stack else None)
        stack.append((width, i))
    return parents


def _leading_word(line: str) -> str:
    match = re.match(r"\s*(\w+|\S)", line)
    return match.group(1) if match else ""


def _pair_changed(
    old_lines: Sequence[str], old_range: range, new_lines: Sequence[str], new_range: range
) -> list[tuple[int, int]]:
    """Changed lines paired in order: as many each side one for one; else by the same leading word or like text."""
    if len(old_range) == len(new_range):
        return [(j, k) for j, k in zip(new_range, old_range, strict=True) if new_lines[j].strip()]
    pairs: list[tuple[int, int]] = []
    start = new_range.start
    for k in old_range:
        old = old_lines[k].strip()
        if not old:
            continue
        for j in range(start, new_range.stop):
            new = new_lines[j].strip()
            if new and (
                _leading_word(new) == _leading_word(old) or SequenceMatcher(None, old, new).ratio() >= 0.6
            ):
                pairs.append((j, k))
                start = j + 1
                break
    return pairs


def _structural(line: str) -> bool:
    """Whether ``line`` can be a parent: not blank, not a comment (comments sit at any indentation)."""
    code = line.strip()
    return bool(code) and not code.startswith(("#", "//", "/*", "*"))


@record
class _Reading:
    lines: list[str]
    consistent: bool
    anchored: bool | None  # a new first line in place (None: the first line is paired, judged as such)
    kept: frozenset[int]  # paired lines (indices in new_string) it puts at their right absolute place


class _Evidence:
    """``new_string``'s paired lines and first line against the file's matched lines, for judging each reading.

    ``linked`` maps a line of ``new_string`` to the line of ``old_string`` it stands for: an unchanged line, or a
    changed one that looks alike (one for one in a run of as many changed lines each side, else the same leading word
    or similar text, in order). So an opener changed in place (``if a:`` → ``if b:``) is still its lines' parent.
    """

    def __init__(
        self, old_lines: Sequence[str], file_indents: dict[int, str], new_lines: Sequence[str]
    ) -> None:
        self.file_indents = file_indents
        matcher = SequenceMatcher(
            None, [x.strip() for x in old_lines], [x.strip() for x in new_lines], autojunk=False
        )
        self.linked: dict[int, int] = {}
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                pairs = [(j1 + n, i1 + n) for n in range(i2 - i1) if new_lines[j1 + n].strip()]
            elif tag == "replace":
                pairs = _pair_changed(old_lines, range(i1, i2), new_lines, range(j1, j2))
            else:
                continue
            self.linked.update((j, k) for j, k in pairs if k in file_indents)
        self.survivors = set(self.linked.values())
        self.file_parents = _parents(
            [
                file_indents[k] + old_lines[k].lstrip(" \t") if k in file_indents else None
                for k in range(len(old_lines))
            ]
        )
        self.first = next((j for j, line in enumerate(new_lines) if line.strip()), None)
        self.first_in_file = file_indents[min(file_indents)]

    def first_is_like(self, old_first: str, new_lines: Sequence[str]) -> bool:
        """Whether a new first line is indented exactly like ``old_first`` (old_string's), not like the file's."""
        if self.first is None or self.first in self.linked:
            return False
        indent = indent_of(new_lines[self.first])
        return indent == indent_of(old_first) != self.first_in_file

    def _fits(self, j: int, k: int, indents: Sequence[str], parents: Sequence[int | None]) -> str | None:
        """Whether paired line ``j`` (old line ``k``) sits where the change puts it: ``"placed"`` (its absolute place
        is right), ``"nested"`` (its offset from an unchanged parent is: true in every frame that shifts the block
        alike, so it tells no frame from another), ``"moved"`` (out of a block around the change: allowed, but no
        evidence), ``"wrong"``, or ``None`` (moved under another existing line)."""
        indent, parent, file_parent = indents[j], parents[j], self.file_parents[k]
        if parent is None and file_parent is None:
            # At the top of the change: in place, or moved out of a block that encloses the change (shallower, in
            # the same characters); never deeper without a new parent.
            place = self.file_indents[k]
            return "placed" if indent == place else "moved" if place.startswith(indent) else "wrong"
        if parent is not None and file_parent is not None and self.linked.get(parent) == file_parent:
            offset = _width(indent) - _width(indents[parent])
            file_offset = _width(self.file_indents[k]) - _width(self.file_indents[file_parent])
            return "nested" if offset == file_offset else "wrong"
        added: list[str] = []  # the indentation of its new parents, nearest first
        while parent is not None and parent not in self.linked:
            added.append(indents[parent])
            parent = parents[parent]
        removed: list[str] = []  # the file's indentation of its parents that were removed, nearest first
        while file_parent is not None and file_parent not in self.survivors:
            removed.append(self.file_indents[file_parent])
            file_parent = self.file_parents[file_parent]
        if (
            added and removed
        ):  # its opener replaced by another: that one in the old one's place, the line in its own
            return _verdict(added[0] == removed[0] and indent == self.file_indents[k])
        if added:  # wrapped: a new parent took its place
            return _verdict(self.file_indents[k] in added)
        if removed:  # unwrapped: it took the place of a parent that was removed
            return _verdict(indent in removed)
        return None

    def judge(self, lines: list[str]) -> _Reading:
        """A reading is consistent when no paired line sits elsewhere than the change puts it."""
        indents = [indent_of(line) for line in lines]
        parents = _parents(lines)
        kept: set[int] = set()
        consistent = True
        for j, k in self.linked.items():
            fits = self._fits(j, k, indents, parents)
            if fits == "wrong":
                consistent = False
            elif fits == "placed":
                kept.add(j)
        anchored = None
        if self.first is not None and self.first not in self.linked:
            anchored = indent_of(lines[self.first]) == self.first_in_file
        return _Reading(lines=lines, consistent=consistent, anchored=anchored, kept=frozenset(kept))


def _verdict(right: bool) -> str:
    return "placed" if right else "wrong"


def _opens(line: str) -> str | None:
    """What ``line`` leads into: ``"block"`` (a line one level deeper), ``"more"`` (a deeper continuation),
    ``"item"`` (after a comma: a sibling, or a continuation), ``"statement"`` (a line at the same level), or ``None``
    for a comment (no telling)."""
    code = line.strip()
    if code.startswith(("#", "//", "/*", "*")):
        return None
    if code.endswith((":", "{")):
        return "block"
    if code.endswith(","):
        return "item"
    if code.endswith(_OPENERS) or code.split()[-1] in ("and", "or"):
        return "more"
    return "statement"


def _plausible(lines: Sequence[str], style: Style) -> bool:
    """Whether the second line of ``lines`` follows the first as code most often does: one level deeper after a
    block opener, deeper after an open bracket or operator, not shallower after a comma, at the same level after a
    whole statement."""
    nonblank = [line for line in lines if line.strip()]
    if len(nonblank) < 2:
        return False
    opens = _opens(nonblank[0])
    step = _width(indent_of(nonblank[1])) - _width(indent_of(nonblank[0]))
    if opens == "block":
        return step == _level(style)
    if opens == "more":
        return step > 0
    if opens == "item":
        return step >= 0
    return opens == "statement" and step == 0


def carry_over(
    old_lines: Sequence[str], file_lines: Sequence[str | None], new: str, style: Style
) -> str | Unclear:
    """``new`` in the file's indentation, given the lines ``old_string`` matched.

    Args:
        old_lines: ``old_string``'s lines.
        file_lines: for each of them, the file's line it matched (``None`` where unknown: a fuzzy block's middle).
        new: ``new_string``.
        style: the file's indentation (:func:`style_of`), for mapping a level of the model's onto the file's.
    """
    file_indents = {
        k: indent_of(line)
        for k, line in enumerate(file_lines)
        if line is not None and line.strip() and old_lines[k].strip()
    }
    pairs = [(k, indent_of(old_lines[k]), indent) for k, indent in sorted(file_indents.items())]
    if all(f == o for _, f, o in pairs):
        return new  # old_string has the file's indentation: so has new_string
    new_lines = new.split("\n")
    shifted = _old_frame(pairs, new_lines, style)
    evidence = _Evidence(old_lines, file_indents, new_lines)
    readings: list[_Reading] = []
    for lines in [*shifted, new_lines]:
        if all(r.lines != lines for r in readings):
            readings.append(evidence.judge(lines))
    candidates = [r for r in readings if r.consistent]
    if not candidates:
        return Unclear(reason="its lines fit neither old_string's indentation nor the file's")
    if len(candidates) > 1 and not any(r.anchored is not False for r in candidates):
        return Unclear(
            reason="its first line is indented like neither old_string's first line nor the file's"
        )
    # Preferences, each applied only while it leaves a reading: the first line in place, the second line following
    # it as code does, the most paired lines in place.
    most = max(len(r.kept) for r in candidates)
    for prefer in (
        lambda r: r.anchored is not False,
        lambda r: _plausible(r.lines, style),
        lambda r: len(r.kept) == most,
    ):
        if len(candidates) > 1:
            candidates = [r for r in candidates if prefer(r)] or candidates
    if len(candidates) != 1:
        if not any(r.kept or r.anchored for r in candidates):
            return Unclear(reason="nothing in it shows which indentation it is written in")
        return Unclear(reason="it reads as well in old_string's indentation as in the file's")
    chosen = candidates[0]
    others = [r for r in readings if r is not chosen]
    first_in_old = evidence.first_is_like(old_lines[min(file_indents)], new_lines)
    if chosen.anchored is False and (first_in_old or any(r.anchored for r in others)):
        return Unclear(reason="its first line is in one indentation and its other lines in the other")
    shown = {j for j in chosen.kept if not others or any(j not in r.kept for r in others)}
    if not chosen.anchored and not shown:
        return Unclear(reason="nothing in it shows which indentation it is written in")
    return "\n".join(chosen.lines)

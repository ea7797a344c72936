"""The static value of a shell word, as the shell will expand it (quotes, escapes, ``~``, ``$HOME``, braces, globs).

Pure: ``~user`` is not looked up and globs are not matched against the file system. A value that cannot be known
statically is ``None``; a glob is cut to the directory it starts from, with the pattern kept beside it.
"""

from __future__ import annotations

import itertools
import posixpath
import re
from collections.abc import Iterator

from .._record import record
from ._shell_tree import Node, named, node_text

__all__ = [
    "DEVICES",
    "GLOB",
    "Word",
    "argword",
    "expand",
    "expand_braces",
    "join",
    "static",
    "unescape",
    "values",
]

DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"})
GLOB = "*?["
_MAX_BRACE = 1024


@record(kw_only=False)
class Word:
    """One word of a simple command: source text, static value (quotes removed), path value (``~`` expanded)."""

    raw: str
    value: str | None
    path: str | None
    glob: bool


def argword(node: Node, home: str) -> Word:
    """The :class:`Word` of a command's name or argument node."""
    if node.type == "command_name":
        names = named(node)
        if len(names) != 1:
            return Word(raw=node_text(node), value=None, path=None, glob=False)
        node = names[0]
    raw = node_text(node)
    plain = static(node, first=False, home=home)
    # The path value differs only by ``~`` expansion at the word's start or after ``--opt=``.
    path = static(node, first=True, home=home) if raw.startswith("~") or "=~" in raw else plain
    return Word(
        raw=raw,
        value=None if plain is None else plain[0],
        path=None if path is None else path[0],
        glob=path is not None and path[1],
    )


def values(node: Node, *, first: bool, home: str) -> Iterator[tuple[str | None, str | None]]:
    """The static values of an argument after expansion (``None`` for a dynamic value), globs cut (see
    :func:`expand`)."""
    found = static(node, first=first, home=home)
    if found is None:
        yield None, None
        return
    yield from expand(*found)


def expand(text: str, unquoted_glob: bool) -> Iterator[tuple[str | None, str | None]]:
    """Brace-expand ``text`` and cut globs: ``(value, pattern)`` pairs, ``pattern`` the uncut glob (or ``None``).

    The value is ``None`` (unknown) when the expansion is too large to enumerate.
    """
    if unquoted_glob:
        alternatives = expand_braces(text)
        if alternatives is None:
            yield None, None
            return
    else:
        alternatives = [text]
    for expanded in alternatives:
        cut = min((i for i in (expanded.find(ch) for ch in GLOB) if i >= 0), default=-1)
        if unquoted_glob and cut >= 0:
            pattern = expanded
            expanded = expanded[:cut] or "."
            if not expanded.endswith("/"):
                expanded = posixpath.dirname(expanded) or "."
            yield expanded, pattern
        else:
            yield expanded, None


def static(node: Node, *, first: bool, home: str) -> tuple[str, bool] | None:
    """``(value, has_unquoted_specials)`` for a statically known word, else ``None``.

    With ``first`` (a word's start, as a path), ``~`` and ``~/x`` expand to the home directory and ``~user`` is
    unknown: looking it up would read the password database, and the analysis stays pure.
    """
    kind = node.type
    if kind in ("word", "number"):
        raw = node_text(node)
        if first and (raw == "~" or raw.startswith("~/")):
            raw = home + raw[1:]
        elif first and raw.startswith("~"):
            return None
        elif first and raw.startswith("-") and "=~" in raw:
            option, _, value = raw.partition("=~")
            if not value or value.startswith("/"):  # ``--target-directory=~/x``: bash expands it after ``=``
                raw = f"{option}={home}{value}"
        specials = any(ch in raw for ch in "*?[{")
        return unescape(raw), specials
    if kind == "raw_string":
        return node_text(node)[1:-1], False
    if kind == "ansi_c_string":
        decoded = _ansi_c(node_text(node)[2:-1])
        return None if decoded is None else (decoded, False)
    if kind == "brace_expression":  # ``{1..3}``: expanded by :func:`expand`
        return node_text(node), True
    if kind == "string":
        parts: list[str] = []
        for child in named(node):
            if child.type == "string_content":
                parts.append(_unescape_dquoted(node_text(child)))
            elif _is_home(child):
                parts.append(home)
            else:
                return None
        return "".join(parts), False
    if kind in ("simple_expansion", "expansion") and _is_home(node):
        return home, False
    if kind == "concatenation":
        out: list[str] = []
        specials = False
        for index, child in enumerate(named(node)):
            part = static(child, first=first and index == 0, home=home)
            if part is None:
                return None
            out.append(part[0])
            specials = specials or part[1]
        return "".join(out), specials
    return None


def _is_home(node: Node) -> bool:
    if node.type not in ("simple_expansion", "expansion"):
        return False
    names = named(node)
    return len(names) == 1 and names[0].type == "variable_name" and node_text(names[0]) == "HOME"


def join(cwd: str | None, value: str | None) -> str | None:
    if value is None:
        return None
    if value.startswith("/"):
        return posixpath.normpath(value)
    if cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, value))


def unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    chars = iter(raw)
    for ch in chars:
        out.append(next(chars, "") if ch == "\\" else ch)
    return "".join(out)


_ANSI_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSI_SIMPLE.update({"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"})


def _ansi_c(body: str) -> str | None:
    """The value of a ``$'...'`` string: C escapes, ``\\xHH`` and octal; ``None`` for what this does not decode.

    ``\\xHH`` and octal escapes are bytes, as bash makes them: the value is decoded with ``surrogateescape``, so a
    byte that is not UTF-8 (``$'\\xff'``) names the same file (``os.fsencode``) as the one bash opens.
    """
    out = bytearray()
    index = 0
    while index < len(body):
        ch = body[index]
        if ch != "\\":
            try:
                out += ch.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate in the text itself: uncertain rather than wrong
                return None
            index += 1
            continue
        nxt = body[index + 1 : index + 2]
        if nxt in _ANSI_SIMPLE:
            out += _ANSI_SIMPLE[nxt].encode()
            index += 2
        elif nxt == "x":
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[index + 2 :])
            if digits is None:
                return None
            out.append(int(digits.group(), 16))
            index += 2 + len(digits.group())
        elif nxt.isdigit() and nxt < "8":
            digits = re.match(r"[0-7]{1,3}", body[index + 1 :])
            assert digits is not None
            out.append(int(digits.group(), 8) & 0xFF)
            index += 1 + len(digits.group())
        else:
            return None  # \\u, \\c and others: uncertain rather than wrong
    return out.decode("utf-8", "surrogateescape")


def _unescape_dquoted(raw: str) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    index = 0
    while index < len(raw):
        ch = raw[index]
        if ch == "\\" and index + 1 < len(raw) and raw[index + 1] in '$`"\\\n':
            out.append(raw[index + 1])
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)


def expand_braces(text: str) -> list[str] | None:
    """Bash brace expansion of ``a{b,c}d`` and ``{1..3}`` style words; unmatched braces stay literal.

    ``None`` when the expansion would exceed :data:`_MAX_BRACE` words: never a truncated list, whose missing words
    would go unchecked.
    """
    results = [text]
    while True:
        changed = False
        expanded: list[str] = []
        for item in results:
            try:
                parts = _split_brace(item)
            except _BraceOverflow:
                return None
            if parts is None:
                expanded.append(item)
            else:
                changed = True
                expanded.extend(parts)
            if len(expanded) > _MAX_BRACE:
                return None
        results = expanded
        if not changed:
            return results


class _BraceOverflow(Exception):
    pass


def _split_brace(text: str) -> list[str] | None:
    start = text.find("{")
    while start >= 0:
        depth, commas, end = 0, list[int](), -1
        for index in range(start, len(text)):
            ch = text[index]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = index
                    break
            elif ch == "," and depth == 1:
                commas.append(index)
        if end < 0:
            return None
        head, body, tail = text[:start], text[start + 1 : end], text[end + 1 :]
        if commas:
            bounds = [start, *commas, end]
            return [head + text[a + 1 : b] + tail for a, b in itertools.pairwise(bounds)]
        if ".." in body:
            lo, _, hi = body.partition("..")
            if lo.lstrip("-").isdigit() and hi.lstrip("-").isdigit():
                a, b = int(lo), int(hi)
                step = 1 if b >= a else -1
                if abs(b - a) >= _MAX_BRACE:
                    raise _BraceOverflow
                return [head + str(n) + tail for n in range(a, b + step, step)]
            return [head + body + tail]
        start = text.find("{", start + 1)
    return None

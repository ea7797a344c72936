"""Glob patterns with ripgrep's (globset's) semantics, compiled to Python regular expressions.

The glob tool filters ripgrep's file listing with these matchers instead of passing the pattern as ``--glob``:
a ripgrep ``--glob`` whitelist overrides every ignore rule, so ``**/*.py`` would list gitignored and hidden files.

Semantics (checked against ripgrep's own globset test cases): ``?`` one character, ``*`` any run, ``**`` as a whole
path component is recursive (``**/x``, ``x/**``, ``a/**/b``; elsewhere it is ``*``), ``[a-z]``/``[!x]``/``[^x]``
classes, ``{a,b}`` alternates (nestable), ``\\`` escapes. With ``literal_separator`` ``*`` and ``?`` never match
``/`` (ripgrep's ``--glob`` behaves so).
"""

from __future__ import annotations

import re

from .._record import record

__all__ = ["GlobError", "GlobOptions", "compile_glob", "glob_regex", "path_matcher", "required_literal"]


class GlobError(ValueError):
    """The glob pattern is malformed (unclosed class or alternates, dangling escape, inverted range)."""


@record
class GlobOptions:
    literal_separator: bool = False
    case_insensitive: bool = False
    backslash_escape: bool = True
    empty_alternates: bool = False


# No pattern ever matches a newline: that lets one multi-line regex scan a whole batch of listed paths at once.
_RECURSIVE_PREFIX = "(?:/?|[^\n]*/)"
_RECURSIVE_SUFFIX = "/[^\n]*"
_RECURSIVE_MIDDLE = "(?:/|/[^\n]*/)"


class _Parser:
    def __init__(self, glob: str, options: GlobOptions) -> None:
        self.glob = glob
        self.opts = options
        self.pos = 0
        # A stack of alternates being built: each level holds the alternatives, each a token list.
        self.stack: list[list[list[str]]] = [[[]]]
        self.prev: str | None = None
        self.cur: str | None = None

    def peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def bump(self) -> str | None:
        # Like globset: ``prev`` is the character consumed before the one returned.
        c = self.peek()
        self.prev = self.cur
        self.cur = c
        if c is not None:
            self.pos += 1
        return c

    @property
    def tokens(self) -> list[str]:
        return self.stack[-1][-1]

    def any_char(self) -> str:
        return "[^/\n]" if self.opts.literal_separator else "[^\n]"

    def star(self) -> str:
        return "[^/\n]*" if self.opts.literal_separator else "[^\n]*"

    def parse(self) -> str:
        while (c := self.bump()) is not None:
            if c == "?":
                self.tokens.append(self.any_char())
            elif c == "*":
                self.parse_star()
            elif c == "[":
                self.parse_class()
            elif c == "{":
                self.stack.append([[]])
            elif c == "}" and len(self.stack) > 1:
                alternatives = self.stack.pop()
                parts = ["".join(a) for a in alternatives]
                if not self.opts.empty_alternates:
                    parts = [p for p in parts if p]
                self.tokens.append("(?:" + "|".join(parts) + ")" if parts else "")
            elif c == "," and len(self.stack) > 1:
                self.stack[-1].append([])
            elif c == "\\" and self.opts.backslash_escape:
                escaped = self.bump()
                if escaped is None:
                    raise GlobError("dangling '\\'")
                self.tokens.append(re.escape(escaped))
            else:
                self.tokens.append(re.escape(c))
        if len(self.stack) > 1:
            raise GlobError("unclosed alternates")
        return "".join(self.stack[0][0])

    def parse_star(self) -> None:
        prev = self.prev
        if self.peek() != "*":
            self.tokens.append(self.star())
            return
        self.bump()
        if not self.tokens and len(self.stack) == 1:
            nxt = self.peek()
            if nxt is not None and nxt != "/":
                self.tokens.append(self.star())
                return
            self.bump()
            self.tokens.append(_RECURSIVE_PREFIX)
            return
        if prev != "/" and (len(self.stack) <= 1 or prev not in (",", "{")):
            self.tokens.append(self.star())
            return
        nxt = self.peek()
        if nxt is None or (nxt in (",", "}") and len(self.stack) >= 2):
            if nxt is None:
                self.bump()
            is_suffix = True
        elif nxt == "/":
            self.bump()
            is_suffix = False
        else:
            self.tokens.append(self.star())
            return
        last = self.tokens.pop() if self.tokens else ""
        if last in (_RECURSIVE_PREFIX, _RECURSIVE_SUFFIX):
            self.tokens.append(last)
        elif last not in (re.escape("/"), _RECURSIVE_MIDDLE):
            # "{**": the "**" follows an alternates opener, not a separator: keep what preceded.
            if last:
                self.tokens.append(last)
            self.tokens.append(_RECURSIVE_PREFIX if not is_suffix else "[^\n]*")
        else:
            self.tokens.append(_RECURSIVE_SUFFIX if is_suffix else _RECURSIVE_MIDDLE)

    def parse_class(self) -> None:
        negated = False
        if self.peek() in ("!", "^"):
            self.bump()
            negated = True
        ranges: list[tuple[str, str]] = []
        first = True
        in_range = False
        while True:
            c = self.bump()
            if c is None:
                raise GlobError("unclosed character class")
            if c == "]":
                if first:
                    ranges.append(("]", "]"))
                else:
                    break
            elif c == "-":
                if first:
                    ranges.append(("-", "-"))
                elif in_range:
                    self._extend(ranges, "-")
                    in_range = False
                else:
                    in_range = True
            else:
                if in_range:
                    self._extend(ranges, c)
                else:
                    ranges.append((c, c))
                in_range = False
            first = False
        if in_range:
            ranges.append(("-", "-"))
        body = "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in ranges)
        self.tokens.append("[^\n" + body + "]" if negated else "[" + body + "]")

    def _extend(self, ranges: list[tuple[str, str]], end: str) -> None:
        start = ranges[-1][0]
        if start > end:
            raise GlobError(f"invalid range {start}-{end}")
        ranges[-1] = (start, end)


def glob_regex(glob: str, options: GlobOptions | None = None) -> str:
    """The unanchored regular expression for ``glob`` (it never matches a newline).

    Raises:
        GlobError: the glob is malformed.
    """
    opts = options or GlobOptions()
    body = "[^\n]*" if glob == "**" else _Parser(glob, opts).parse()
    return f"(?i:{body})" if opts.case_insensitive else body


def compile_glob(glob: str, options: GlobOptions | None = None) -> re.Pattern[str]:
    """Compile ``glob`` to an anchored regular expression with globset's semantics.

    Raises:
        GlobError: the glob is malformed.
    """
    return re.compile(f"^{glob_regex(glob, options)}$")


def path_matcher(pattern: str) -> re.Pattern[str]:
    """A matcher for ripgrep ``--glob`` semantics over ripgrep's ``--files`` output, one path per line.

    Use ``finditer`` on a block of lines: group 1 of each match is a matching path (a leading ``./`` is not part of
    it). A pattern without ``/`` matches the file name at any depth; with ``/`` it matches the whole relative path (a
    leading ``/`` anchors it at the search root, as in gitignore). ``*`` and ``?`` never cross ``/``.

    Raises:
        GlobError: the pattern is malformed.
    """
    opts = GlobOptions(literal_separator=True)
    stripped = pattern.removeprefix("/")
    glob = "**/" + stripped if "/" not in pattern.rstrip("/") else stripped
    return re.compile(rf"^(?:\./)?({glob_regex(glob, opts)})\r?$", re.MULTILINE)


def required_literal(pattern: str) -> str:
    """The longest run of plain characters every path matching ``pattern`` must contain ("" if none).

    Text inside ``[...]`` and ``{...}`` is optional or variable, so it is never part of the result; an escaped
    character ends a run. Used to skip listed paths cheaply before running the regular expression.
    """
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    in_class = False
    for c in pattern:
        if in_class:
            in_class = c != "]"
            continue
        if c == "[":
            in_class = True
        elif c == "{":
            depth += 1
        elif c == "}" and depth:
            depth -= 1
        elif depth == 0 and c not in "*?\\":
            run.append(c)
            continue
        runs.append("".join(run))
        run = []
    runs.append("".join(run))
    # A "/" next to "**" may match nothing ("**/x" matches "x"), so runs never keep their edge slashes.
    return max((r.strip("/") for r in runs), key=len, default="")

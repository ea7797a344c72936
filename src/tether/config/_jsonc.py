"""JSONC: JSON with ``//`` and ``/* */`` comments and trailing commas, as ``opencode.jsonc`` and editors write it.

:func:`strip_jsonc` turns JSONC text into JSON text *of the same length, line for line*: every comment character
becomes a space (a newline inside a block comment stays a newline) and a trailing comma becomes a space. The result is
then parsed by the strict, bounded JSON path (``_json.parse_json``), so the hostile-input bounds stay where they are,
and a line or column in an error, or found by ``key_lines``, is the line and column of the file the user edits.

Strings are matched first, so ``"https://host"`` and ``"/* not a comment */"`` survive. The scan is a few regular
expressions whose alternatives cannot overlap, and each one matches wherever it starts (a string without its closing
quote is taken to the end of its line and left for the JSON parser to report), so no position is scanned twice: linear
time on the 4 MiB the reader allows. A pattern that could fail after scanning ahead (a string that must end in ``"``)
would be retried from every following ``"``, quadratic on ``"\"\"\"...``. A leading byte order mark (some Windows
editors write one) becomes a space as well.
"""

from __future__ import annotations

import re

from .._regex import lazy
from ..errors import ConfigError

__all__ = ["strip_jsonc"]

# A JSON string (no raw newline inside: JSON forbids it; one never closed ends at its line, and its closing quote is
# optional so the match never fails and is never retried from a later quote), a line comment, a block comment, or an
# unterminated one (reported, the scan stops there).
_STRING = r'"(?:[^"\\\n]|\\.)*"?'


_comments = lazy(_STRING + r"|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/|/\*")


# A string, or a comma followed only by JSON whitespace and a closing bracket (the comments are spaces by now).
_trailing = lazy(_STRING + r"|,(?=[ \t\r\n]*[\]}])")


_not_newline = lazy(r"[^\n]")


def strip_jsonc(text: str, where: str) -> str:
    """Blank out the comments and trailing commas of ``text`` (named ``where`` in errors); keep every position.

    Raises:
        ConfigError: a ``/*`` comment is never closed (naming its line).
    """
    if text.startswith("\ufeff"):  # a byte order mark, as some Windows editors write: white space here
        text = " " + text[1:]
    if "/" not in text and "," not in text:
        return text

    def comment(match: re.Match[str]) -> str:
        found = match.group()
        if found[0] == '"':
            return found
        if found == "/*":  # the last alternative: a block comment that never ends
            line = text.count("\n", 0, match.start()) + 1
            raise ConfigError("invalid JSON: a /* comment is never closed", file=where, line=line)
        return _not_newline().sub(" ", found)

    def comma(match: re.Match[str]) -> str:
        found = match.group()
        if found[0] == '"':
            return found
        before = match.start() - 1
        while before >= 0 and plain[before] in " \t\r\n":
            before -= 1
        # only a comma after a value trails; "[,]" and "{,}" stay invalid, as in JSON5
        return found if before < 0 or plain[before] in ",[{" else " "

    plain = _comments().sub(comment, text) if "/" in text else text
    return _trailing().sub(comma, plain)

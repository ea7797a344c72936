"""The apply_patch format: parsing (``*** Begin Patch`` ... ``*** End Patch``) and applying update chunks to text.

Pure functions only: no filesystem, no permissions (``apply_patch.py`` does those). The grammar::

    [(cat )?<<['"]?TAG['"]?            optional heredoc wrapper, closed by TAG]
    *** Begin Patch
    *** Add File: <path>       then "+line" lines
    *** Delete File: <path>
    *** Update File: <path>    then optionally "*** Move to: <path>", then chunks:
        @@ [context line]      then " ctx" / "-old" / "+new" lines, optionally "*** End of File"
    *** End Patch

Leniency, as models need it: markers and headers may carry surrounding whitespace; an empty line inside a chunk is
an empty context line; the first chunk may omit its ``@@``. Unknown headers are errors (never silently skipped).

Applying keeps every untouched line's own ending (LF, CRLF or a lone CR); inserted lines take the file's first
ending (LF when it has none); every line ends with a terminator afterwards. Matching tries exact, then trailing
whitespace ignored, then both ends trimmed, then Unicode punctuation folded to ASCII.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import field
from typing import Literal

from .._record import record

__all__ = ["Chunk", "Hunk", "PatchError", "apply_chunks", "parse_patch"]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File:"
DELETE = "*** Delete File:"
UPDATE = "*** Update File:"
MOVE = "*** Move to:"
EOF_MARKER = "*** End of File"

_HEREDOC = re.compile(r"^(?:cat\s+)?<<\s*['\"]?(\w+)['\"]?[ \t]*\n(.*)\n[ \t]*\1[ \t]*$", re.DOTALL)


class PatchError(Exception):
    """The patch text is malformed, or a chunk does not apply to the file it names."""


@record
class Chunk:
    """One ``@@`` section: optional context line, the old and new lines, and whether it is anchored at EOF."""

    context: str | None
    old: tuple[str, ...]
    new: tuple[str, ...]
    end_of_file: bool = False


@record
class Hunk:
    """One file operation of a patch."""

    kind: Literal["add", "delete", "update"]
    path: str
    move_to: str | None = None
    contents: str = ""
    chunks: tuple[Chunk, ...] = field(default=())


def _strip_heredoc(text: str) -> str:
    match = _HEREDOC.match(text)
    return match.group(2) if match else text


def parse_patch(text: str) -> list[Hunk]:
    """Parse patch text into hunks, in order.

    Raises:
        PatchError: the markers are missing or a hunk is malformed (the message names the line).
    """
    body = _strip_heredoc(text.strip()).strip()
    lines = [line[:-1] if line.endswith("\r") else line for line in body.split("\n")]
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"The first line of the patch must be '{BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != END:
        raise PatchError(f"The last line of the patch must be '{END}'")
    hunks: list[Hunk] = []
    i = 1
    last = len(lines) - 1
    while i < last:
        header = lines[i].strip()
        if not header:
            i += 1
            continue
        if header.startswith(ADD):
            path = _header_path(header, ADD, i)
            i += 1
            added: list[str] = []
            while i < last and lines[i].startswith("+"):
                added.append(lines[i][1:])
                i += 1
            hunks.append(Hunk(kind="add", path=path, contents="".join(line + "\n" for line in added)))
        elif header.startswith(DELETE):
            hunks.append(Hunk(kind="delete", path=_header_path(header, DELETE, i)))
            i += 1
        elif header.startswith(UPDATE):
            path = _header_path(header, UPDATE, i)
            i += 1
            move_to = None
            if i < last and lines[i].strip().startswith(MOVE):
                move_to = _header_path(lines[i].strip(), MOVE, i)
                i += 1
            chunks, i = _parse_chunks(lines, i, last)
            if not chunks:
                raise PatchError(f"Update file hunk for path '{path}' is empty")
            hunks.append(Hunk(kind="update", path=path, move_to=move_to, chunks=tuple(chunks)))
        else:
            raise PatchError(
                f"'{header}' is not a valid hunk header (line {i + 1}). Valid hunk headers: "
                f"'{ADD} {{path}}', '{DELETE} {{path}}', '{UPDATE} {{path}}'"
            )
    return hunks


def _header_path(header: str, marker: str, index: int) -> str:
    path = header[len(marker) :].strip()
    if not path:
        raise PatchError(f"Missing path after '{marker}' (line {index + 1})")
    return path


def _parse_chunks(lines: list[str], i: int, last: int) -> tuple[list[Chunk], int]:
    chunks: list[Chunk] = []
    while i < last:
        line = lines[i]
        stripped = line.strip()
        if not stripped and not chunks:
            i += 1
            continue
        if stripped.startswith("***") and stripped != EOF_MARKER:
            break
        context: str | None = None
        start = i
        if stripped.startswith("@@"):
            context = stripped[2:].strip() or None
            i += 1
        elif chunks:
            # Only the first chunk may start without "@@"; anything else ends the hunk.
            break
        old: list[str] = []
        new: list[str] = []
        end_of_file = False
        while i < last:
            line = lines[i]
            stripped = line.strip()
            if stripped == EOF_MARKER:
                end_of_file = True
                i += 1
                break
            if stripped.startswith("@@") or stripped.startswith("***"):
                break
            if line == "":
                old.append("")
                new.append("")
            elif line[0] == " ":
                old.append(line[1:])
                new.append(line[1:])
            elif line[0] == "-":
                old.append(line[1:])
            elif line[0] == "+":
                new.append(line[1:])
            else:
                raise PatchError(
                    f"Unexpected line found in update hunk (line {i + 1}): '{line}'. Every line should start "
                    "with ' ' (context line), '+' (added line), or '-' (removed line)"
                )
            i += 1
        # Blank lines at the end of a chunk usually separate sections; they are not content.
        while old and new and old[-1] == "" and new[-1] == "" and lines[i - 1] == "":
            old.pop()
            new.pop()
            break
        if not old and not new:
            raise PatchError(f"Update hunk does not contain any lines (line {start + 1})")
        chunks.append(Chunk(context=context, old=tuple(old), new=tuple(new), end_of_file=end_of_file))
    return chunks, i


_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys(
            "\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "
        ),
        "\u2026": "...",
    }
)


def _exact(line: str) -> str:
    return line


def _rstrip(line: str) -> str:
    return line.rstrip()


def _strip(line: str) -> str:
    return line.strip()


def _fold(line: str) -> str:
    return line.strip().translate(_PUNCTUATION)


def _seek(lines: list[str], pattern: list[str], start: int, eof: bool) -> int:
    n = len(pattern)
    if n == 0:
        return start
    if n > len(lines):
        return -1
    for norm in (_exact, _rstrip, _strip, _fold):
        want = [norm(p) for p in pattern]
        if eof:
            at = len(lines) - n
            if at >= start and all(norm(lines[at + j]) == want[j] for j in range(n)):
                return at
        for at in range(start, len(lines) - n + 1):
            if all(norm(lines[at + j]) == want[j] for j in range(n)):
                return at
    return -1


_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n|$)")


def _split(text: str) -> list[tuple[str, str]]:
    """Split into ``(text, ending)`` pairs; the ending is ``\\n``, ``\\r\\n``, ``\\r`` or ``""`` (last line)."""
    out: list[tuple[str, str]] = []
    pos = 0
    size = len(text)
    while pos < size:
        match = _LINE.match(text, pos)
        assert match is not None
        out.append((match.group(1), match.group(2)))
        pos = match.end()
    return out


def apply_chunks(text: str, chunks: tuple[Chunk, ...], path: str) -> str:
    """Apply update chunks to ``text`` (BOM already removed) and return the new text.

    Raises:
        PatchError: a context line or the old lines of a chunk cannot be found.
    """
    source = _split(text)
    preferred = next((ending for _, ending in source if ending), "\n")
    lines = [line for line, _ in source]
    replacements: list[tuple[int, int, tuple[str, ...]]] = []
    index = 0
    for chunk in chunks:
        if chunk.context is not None:
            found = _seek(lines, [chunk.context], index, False)
            if found < 0:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}")
            index = found + 1
        if not chunk.old:
            # A pure insertion goes to the end of the file, whatever the context said (as upstream does).
            replacements.append((len(lines), 0, chunk.new))
            continue
        old = list(chunk.old)
        new = chunk.new
        found = _seek(lines, old, index, chunk.end_of_file)
        if found < 0 and old[-1] == "":
            old = old[:-1]
            if new and new[-1] == "":
                new = new[:-1]
            found = _seek(lines, old, index, chunk.end_of_file)
        if found < 0:
            raise PatchError(f"Failed to find expected lines in {path}:\n" + "\n".join(chunk.old))
        # Lines the chunk keeps (context) stay byte-identical: only the changed runs are replaced, so the
        # untouched lines keep their own text and line endings.
        matcher = difflib.SequenceMatcher(None, old, list(new), autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                replacements.append((found + i1, i2 - i1, new[j1:j2]))
        index = found + len(old)
    replacements.sort(key=lambda r: r[0])
    result: list[tuple[str, str]] = []
    cursor = 0
    for start, length, new in replacements:
        result.extend(source[cursor:start])
        result.extend((line, preferred) for line in new)
        cursor = start + length
    result.extend(source[cursor:])
    return "".join(line + (ending or preferred) for line, ending in result)

"""The ``edit`` tool: replace one exact (or carefully fuzzy-matched) occurrence of a string in a file.

Checks, in order: identical strings, empty ``old_string``, resolve, permissions (``external_directory`` then
``edit``), then read. Nothing is read before approval, so a denied edit reveals neither the file nor whether
``old_string`` matches. Matching runs on the text without its BOM, with ``old_string``/``new_string`` converted to the
file's line-ending style; the result is written only if the file still holds the bytes read (write-if-unchanged).
Read → match → write holds the file's lock, so parallel edits of one file apply one after the other and none is lost.
The answer shows the change as written: a diff of the file before and after, not of the model's strings, so a line that
landed elsewhere than meant is visible.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from .._record import record
from ..errors import ToolFailure
from ..location import (
    authorize_edit,
    decode_text,
    encode_text,
    line_ending,
    lock_files,
    read_bytes_sync,
    write_if_unchanged_sync,
)
from ..tools import Tool, ToolContext, ToolResponse
from ._common import METADATA_DIFF_BUDGET, file_diff, resolve_or_fail
from ._deps import BuiltinDeps
from ._replacers import AmbiguousMatch, IndentationUnclear, NoMatch, SpanTooLarge, replace
from ._schemas import committed_codec

__all__ = ["EditInput", "make"]

DESCRIPTION = """Replace text in an existing file.

- `path` is relative to the working directory, or absolute (paths outside the project need approval).
- `old_string` must match the file's text, including whitespace and indentation (read the file first; do not
  include the `N: ` line-number prefixes of the read output). It must be unique in the file unless `replace_all`.
- `new_string` replaces it, written in the file's indentation; it must differ from `old_string`.
- `replace_all` replaces every occurrence (for renames).
- To create a file or replace all of its content, use `write`."""

MAX_DIFF_LINES = 16
MAX_DIFF_CHARS = 240


class EditInput(BaseModel):
    """Input of the edit tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    path: str = Field(description="The file to edit (relative to the working directory, or absolute)")
    old_string: str = Field(description="The exact text to replace")
    new_string: str = Field(description="The text to replace it with (must differ from old_string)")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old_string")


_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _written_diff(before: str, after: str) -> str:
    """The change as written to the file: each hunk with one line of context and its line numbers, so the model sees
    where its lines landed and how deep. At most :data:`MAX_DIFF_LINES` lines of :data:`MAX_DIFF_CHARS` characters.

    Only the lines between the unchanged head and tail of the file (and one line each side) are compared.
    """
    a = before.replace("\r\n", "\n").split("\n")
    b = after.replace("\r\n", "\n").split("\n")
    shortest = min(len(a), len(b))
    head = 0
    while head < shortest and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shortest - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start, tail = max(head - 1, 0), max(tail - 1, 0)
    window = difflib.unified_diff(a[start : len(a) - tail], b[start : len(b) - tail], n=1, lineterm="")
    lines = [
        _HUNK.sub(lambda m: f"@@ -{int(m[1]) + start}{m[2] or ''} +{int(m[3]) + start}{m[4] or ''} @@", line)
        if line.startswith("@@")
        else line
        for line in list(window)[2:]  # without the ---/+++ file header
    ]
    shown = [
        line[:MAX_DIFF_CHARS] + "..." if len(line) > MAX_DIFF_CHARS else line
        for line in lines[:MAX_DIFF_LINES]
    ]
    if len(lines) > MAX_DIFF_LINES:
        shown.append(f"... ({len(lines) - MAX_DIFF_LINES} more diff lines)")
    return "```diff\n" + "\n".join(shown) + "\n```"


def _describe(indent: str) -> str:
    """``indent`` in words: "8 spaces", "1 tab and 2 spaces", "no indentation"."""
    tabs, spaces = indent.count("\t"), indent.count(" ")
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((tabs, "tab"), (spaces, "space")) if n]
    return " and ".join(parts) or "no indentation"


def _unclear_message(exc: IndentationUnclear) -> str:
    return (
        f"old_string matches line {exc.line}{exc.how}, but indented differently: the file indents that line with "
        f"{_describe(exc.file_indent)}, old_string with {_describe(exc.old_indent)}. It is unclear which indentation "
        f"new_string is written in: {exc.reason}. Nothing was changed. Call edit again with old_string copied exactly "
        "as `read` shows it (indentation included, without the line-number prefix) and new_string in the file's "
        "indentation."
    )


def _ambiguous_message(exc: AmbiguousMatch) -> str:
    more = len(exc.lines) - 10
    shown = ", ".join(str(n) for n in exc.lines[:10]) + (f", and {more} more" if more > 0 else "")
    return (
        f"old_string matches {len(exc.lines)} places{exc.how} (lines {shown}). Add more surrounding lines to "
        "old_string to make it unique, or set replace_all to true to replace every one."
    )


@record
class _Edited:
    count: int
    diff: dict[str, Any]
    written: str  # the short diff of the file before and after, for the answer


def _edit(path: Path, label: str, input: EditInput) -> _Edited:
    """:func:`_edit_locked` holding the file's lock (other tether calls on this file wait). Blocking.

    Raises:
        ToolFailure: as :func:`_edit_locked`, or the lock cannot be taken.
    """
    try:
        with lock_files([path]):
            return _edit_locked(path, label, input)
    except OSError as exc:  # the lock itself: _edit_locked turns its own OSErrors into failures
        raise ToolFailure(f"Unable to edit {input.path.strip()}: {exc.strerror or exc}") from exc


def _edit_locked(path: Path, label: str, input: EditInput) -> _Edited:
    """Read the approved file, replace, write if unchanged, diff. Blocking: runs in a worker thread.

    Raises:
        ToolFailure: the file is missing, not text, changed meanwhile (also: a directory of its path is now a
            symlink), or ``old_string`` does not match once.
    """
    try:
        raw = read_bytes_sync(path)
    except IsADirectoryError:
        raise ToolFailure(f"Path is a directory, not a file: {label}") from None
    except OSError as exc:
        raise ToolFailure(f"Unable to edit {input.path.strip()}: {exc.strerror or exc}") from exc
    if raw is None:
        raise ToolFailure(f"File not found: {input.path.strip()}")
    try:
        decoded = decode_text(raw)
    except UnicodeDecodeError:
        raise ToolFailure(f"File is not valid UTF-8: {label}") from None
    text = decoded.text
    eol = line_ending(text)
    old = input.old_string.replace("\r\n", "\n")
    new = input.new_string.replace("\r\n", "\n")
    if eol == "\r\n":
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    try:
        updated, count = replace(text, old, new, replace_all=input.replace_all)
    except NoMatch:
        raise ToolFailure(
            "Could not find old_string in the file. It must match exactly, including whitespace and "
            "indentation. Read the file again and copy the text exactly."
        ) from None
    except AmbiguousMatch as exc:
        raise ToolFailure(_ambiguous_message(exc)) from None
    except IndentationUnclear as exc:
        raise ToolFailure(_unclear_message(exc)) from None
    except SpanTooLarge:
        raise ToolFailure(
            "Refusing replacement because the matched span is much larger than old_string. Re-read the file "
            "and provide the full exact old_string for the intended replacement."
        ) from None
    try:
        write_if_unchanged_sync(path, raw, encode_text(updated, bom=decoded.bom))
    except OSError as exc:
        raise ToolFailure(f"Unable to edit {input.path.strip()}: {exc.strerror or exc}") from exc
    # The patch appears twice (``diff`` and ``files[0].patch``): half the budget each.
    return _Edited(
        count=count,
        diff=file_diff(text, updated, label, budget=METADATA_DIFF_BUDGET // 2),
        written=_written_diff(text, updated),
    )


def make(deps: BuiltinDeps) -> Tool[EditInput, Any]:
    """Build the edit tool bound to ``deps`` (permission action ``edit``)."""
    return Tool(
        description=DESCRIPTION, input=committed_codec(EditInput), execute=executor(deps), permission="edit"
    )


def executor(deps: BuiltinDeps) -> Callable[[EditInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the edit tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    location = deps.location
    permissions = deps.permissions

    async def execute(input: EditInput, ctx: ToolContext) -> ToolResponse[Any]:
        if input.old_string == input.new_string:
            raise ToolFailure("No changes to apply: old_string and new_string are identical.")
        if input.old_string == "":
            raise ToolFailure("old_string must not be empty. Use write to create or overwrite a file.")
        resolved = await resolve_or_fail(location, input.path)
        await authorize_edit(permissions, ctx, resolved, metadata={"filepath": str(resolved.path)})
        # Read, match (the fuzzy replacers can take seconds on a large file), write and diff in one worker thread
        # (law 9): the event loop keeps serving other calls meanwhile.
        edited = await anyio.to_thread.run_sync(_edit, resolved.path, resolved.resource, input)
        label, count, diff = resolved.resource, edited.count, edited.diff
        return ToolResponse(
            content=f"Edited file successfully: {label}\nReplacements: {count}\n{edited.written}",
            metadata={"diff": diff["patch"], "files": [diff], "replacements": count, "resource": label},
            title=label,
        )

    return execute

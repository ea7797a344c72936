"""The ``write`` tool: create or overwrite a file with the given content.

Order: resolve → ``external_directory`` (if outside) → ``edit`` with save ``["*"]`` → only then read the old bytes
(for the BOM, the line-ending style and the diff) → write-if-unchanged, atomically, keeping the file's mode. Read →
write holds the file's lock, so a parallel call on the same file runs before or after this one, never in between.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolFailure
from ..location import (
    adapt_line_endings,
    authorize_edit,
    decode_text,
    encode_text,
    lock_files,
    read_bytes_sync,
    write_if_unchanged_sync,
)
from ..tools import Tool, ToolContext, ToolResponse
from ._common import file_diff, resolve_or_fail
from ._deps import BuiltinDeps
from ._schemas import committed_codec

__all__ = ["WriteInput", "make"]

DESCRIPTION = """Write a file in the project, creating it (and its parent directories) or replacing its content.

- `path` is relative to the working directory, or absolute (paths outside the project need approval).
- `content` is the complete new content of the file.
- Prefer `edit` or `apply_patch` to change part of an existing file; read a file before overwriting it.
- An existing file keeps its byte-order mark, its CRLF line endings and its permissions."""


class WriteInput(BaseModel):
    """Input of the write tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    path: str = Field(description="The file to write (relative to the working directory, or absolute)")
    content: str = Field(description="The complete content to write")


def _write(path: Path, label: str, input: WriteInput) -> tuple[bool, dict[str, Any]]:
    """:func:`_write_locked` holding the file's lock (other tether calls on this file wait). Blocking.

    Raises:
        ToolFailure: as :func:`_write_locked`, or the lock cannot be taken.
    """
    try:
        with lock_files([path]):
            return _write_locked(path, label, input)
    except OSError as exc:  # the lock itself: _write_locked turns its own OSErrors into failures
        raise ToolFailure(f"Unable to write {input.path.strip()}: {exc.strerror or exc}") from exc


def _write_locked(path: Path, label: str, input: WriteInput) -> tuple[bool, dict[str, Any]]:
    """Write the approved file (keeping BOM and CRLF), return whether it existed and its diff. Blocking.

    Raises:
        ToolFailure: the path is a directory, the file changed meanwhile (also: a directory of its path is now a
            symlink), or the write failed.
    """
    try:
        old_raw = read_bytes_sync(path)
    except IsADirectoryError:
        raise ToolFailure(f"Path is a directory, not a file: {label}") from None
    except OSError as exc:
        raise ToolFailure(f"Unable to write {input.path.strip()}: {exc.strerror or exc}") from exc
    old_text: str | None = None
    bom = input.content.startswith("\ufeff")
    if old_raw is not None:
        try:
            old = decode_text(old_raw)
            old_text, bom = old.text, bom or old.bom
        except UnicodeDecodeError:
            old_text = None
    content = input.content.removeprefix("\ufeff")
    new_text = adapt_line_endings(content, old_text)
    try:
        write_if_unchanged_sync(path, old_raw, encode_text(new_text, bom=bom))
    except OSError as exc:
        raise ToolFailure(f"Unable to write {input.path.strip()}: {exc.strerror or exc}") from exc
    existed = old_raw is not None
    return existed, file_diff(old_text if existed else None, new_text, label)


def make(deps: BuiltinDeps) -> Tool[WriteInput, Any]:
    """Build the write tool bound to ``deps`` (permission action ``edit``)."""
    return Tool(
        description=DESCRIPTION, input=committed_codec(WriteInput), execute=executor(deps), permission="edit"
    )


def executor(deps: BuiltinDeps) -> Callable[[WriteInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the write tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    location = deps.location
    permissions = deps.permissions

    async def execute(input: WriteInput, ctx: ToolContext) -> ToolResponse[Any]:
        resolved = await resolve_or_fail(location, input.path)
        await authorize_edit(permissions, ctx, resolved, metadata={"filepath": str(resolved.path)})
        # Read, write and diff in one worker thread (law 9): difflib on a large file takes a while.
        existed, diff = await anyio.to_thread.run_sync(_write, resolved.path, resolved.resource, input)
        verb = "Wrote" if existed else "Created"
        return ToolResponse(
            content=f"{verb} file successfully: {resolved.resource}",
            metadata={
                "operation": "write",
                "target": str(resolved.path),
                "resource": resolved.resource,
                "existed": existed,
                "files": [diff],
            },
            title=resolved.resource,
        )

    return execute

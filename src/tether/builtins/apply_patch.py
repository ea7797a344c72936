"""The ``apply_patch`` tool: add, delete, update and move files with one ``*** Begin Patch`` text.

Order: parse (nothing touched on a format error) → resolve every target (sources and move destinations) → ask
``external_directory`` once per directory, then one ``edit`` over all resources → lock every file (sorted) and check
every path again without following symlinks (a directory swapped for a symlink meanwhile fails the patch before
anything is written) → only then read and write, one hunk after another. Each hunk is verified against the file as it is when its turn comes (a later hunk sees the
earlier ones); a failure after earlier hunks reports what was applied, and those changes stay (there is no rollback,
matching the upstream scenario suite). Adds and moves overwrite an existing destination, as upstream does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from .._record import record
from ..errors import ToolFailure
from ..location import (
    ResolvedPath,
    authorize_edit,
    check_path_sync,
    decode_text,
    encode_text,
    lock_files,
    read_bytes_sync,
    remove_if_unchanged_sync,
    write_if_unchanged_sync,
)
from ..tools import Text, Tool, ToolContext, ToolResponse
from ._common import cap_diffs, file_diff, resolve_or_fail
from ._deps import BuiltinDeps
from ._patch import Hunk, PatchError, apply_chunks, parse_patch
from ._schemas import committed_codec

__all__ = ["ApplyPatchInput", "make"]

DESCRIPTION = """Apply a patch that adds, deletes, updates or moves files. The format:

*** Begin Patch
*** Add File: path/to/new.txt
+every line of the new file, prefixed with +
*** Delete File: path/to/old.txt
*** Update File: path/to/file.py
*** Move to: path/to/renamed.py      (optional)
@@ def some_function():              (optional context line to locate the change)
 an unchanged line (prefixed with a space)
-a removed line
+an added line
*** End of File                      (optional: the change is at the end of the file)
*** End Patch

Paths are relative to the working directory (or absolute; paths outside the project need approval). Include about
three lines of unchanged context around each change so it can be located. Hunks apply in order."""


class ApplyPatchInput(BaseModel):
    """Input of the apply_patch tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    patch_text: str = Field(description="The full patch text, from *** Begin Patch to *** End Patch")


@record
class _Planned:
    hunk: Hunk
    target: ResolvedPath
    move_to: ResolvedPath | None


@record
class _Applied:
    kind: Literal["add", "update", "delete"]
    resource: str
    target: str
    diff: dict[str, Any]

    @property
    def line(self) -> str:
        return f"{'A' if self.kind == 'add' else 'D' if self.kind == 'delete' else 'M'} {self.resource}"


class _HunkError(Exception):
    pass


@record
class _Outcome:
    """What :func:`_apply_all` did: the hunks applied, and the hunk that failed with its reason (if one did)."""

    applied: list[_Applied]
    failed: tuple[_Planned, str] | None = None


def _decoded_or_none(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return decode_text(raw).text
    except UnicodeDecodeError:
        return None


def _apply_one(item: _Planned) -> _Applied:
    hunk = item.hunk
    target = item.target
    path = target.path
    if hunk.kind == "add":
        try:
            old_raw = read_bytes_sync(path)
        except IsADirectoryError:
            raise _HunkError("a directory exists at this path") from None
        old_text = _decoded_or_none(old_raw)
        write_if_unchanged_sync(path, old_raw, encode_text(hunk.contents, bom=False))
        return _Applied(
            kind="add",
            resource=target.resource,
            target=str(path),
            diff=file_diff(old_text, hunk.contents, target.resource),
        )
    if hunk.kind == "delete":
        try:
            raw = read_bytes_sync(path)
        except IsADirectoryError:
            raise _HunkError("not a regular file") from None
        if raw is None:
            raise _HunkError("file does not exist")
        old_text = _decoded_or_none(raw)
        remove_if_unchanged_sync(path, raw)
        return _Applied(
            kind="delete",
            resource=target.resource,
            target=str(path),
            diff=file_diff("" if old_text is None else old_text, None, target.resource),
        )
    try:
        raw = read_bytes_sync(path)
    except IsADirectoryError:
        raw = None
    if raw is None:
        raise _HunkError(f"Failed to read file to update: {target.resource}")
    try:
        decoded = decode_text(raw)
    except UnicodeDecodeError:
        raise _HunkError("file is not valid UTF-8") from None
    try:
        new_text = apply_chunks(decoded.text, hunk.chunks, target.resource)
    except PatchError as exc:
        raise _HunkError(str(exc)) from None
    data = encode_text(new_text, bom=decoded.bom)
    destination = item.move_to
    if destination is None or destination.path == path:
        write_if_unchanged_sync(path, raw, data)
        resource = target.resource
    else:
        try:
            existing = read_bytes_sync(destination.path)
        except IsADirectoryError:
            raise _HunkError(f"a directory exists at the move destination {destination.resource}") from None
        write_if_unchanged_sync(destination.path, existing, data)
        remove_if_unchanged_sync(path, raw)
        resource = destination.resource
    return _Applied(
        kind="update",
        resource=resource,
        target=str(destination.path if destination else path),
        diff=file_diff(decoded.text, new_text, resource),
    )


def _apply_all(planned: list[_Planned]) -> _Outcome:
    """Apply the hunks in order, holding every file's lock (sorted, so patches never deadlock). Blocking.

    Before the first hunk, every path is checked again without following symlinks: a directory swapped for a symlink
    while approval was pending fails the patch before anything is written.
    """
    paths = [p.path for item in planned for p in (item.target, item.move_to) if p is not None]
    applied: list[_Applied] = []
    current = planned[0]
    try:
        with lock_files(paths):
            for item in planned:
                current = item
                for resolved in (item.target, item.move_to):
                    if resolved is not None:
                        check_path_sync(resolved.path)
            for item in planned:
                current = item
                applied.append(_apply_one(item))
    except (_HunkError, ToolFailure, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return _Outcome(applied=applied, failed=(current, reason))
    return _Outcome(applied=applied)


def make(deps: BuiltinDeps) -> Tool[ApplyPatchInput, Any]:
    """Build the apply_patch tool bound to ``deps`` (permission action ``edit``)."""
    return Tool(
        description=DESCRIPTION,
        input=committed_codec(ApplyPatchInput),
        execute=executor(deps),
        permission="edit",
    )


def executor(deps: BuiltinDeps) -> Callable[[ApplyPatchInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the apply_patch tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    location = deps.location
    permissions = deps.permissions

    async def execute(input: ApplyPatchInput, ctx: ToolContext) -> ToolResponse[Any]:
        text = input.patch_text
        if not text.strip():
            raise ToolFailure("patch_text is required")
        try:
            hunks = parse_patch(text)
        except PatchError as exc:
            raise ToolFailure(f"apply_patch verification failed: {exc}") from None
        if not hunks:
            raise ToolFailure("patch rejected: empty patch")
        planned: list[_Planned] = []
        for hunk in hunks:
            target = await resolve_or_fail(location, hunk.path)
            move_to = await resolve_or_fail(location, hunk.move_to) if hunk.move_to else None
            planned.append(_Planned(hunk=hunk, target=target, move_to=move_to))
        everything = [p for item in planned for p in (item.target, item.move_to) if p is not None]
        await authorize_edit(
            permissions,
            ctx,
            everything,
            metadata={"filepath": ", ".join(dict.fromkeys(p.resource for p in everything))},
        )
        # Check, read and write in one worker thread under the locks (law 9).
        outcome = await anyio.to_thread.run_sync(_apply_all, planned)
        applied = outcome.applied
        if outcome.failed is not None:
            item, reason = outcome.failed
            where = item.target.resource
            metadata = {
                "applied": [_record(a) for a in applied],
                "files": cap_diffs([a.diff for a in applied]),
            }
            if not applied:
                raise ToolFailure(f"Unable to apply patch at {where}: {reason}", metadata=metadata)
            done = ", ".join(a.resource for a in applied)
            summary = "Applied patch sequentially:\n" + "\n".join(a.line for a in applied)
            raise ToolFailure(
                f"Patch partially applied before failing at {where}. Applied: {done}\n{reason}",
                partial=[Text(summary)],
                metadata=metadata,
            )
        return ToolResponse(
            content="Applied patch sequentially:\n" + "\n".join(a.line for a in applied),
            metadata={
                "applied": [_record(a) for a in applied],
                "files": cap_diffs([a.diff for a in applied]),
            },
            title=", ".join(a.resource for a in applied),
        )

    return execute


def _record(applied: _Applied) -> dict[str, str]:
    return {"type": applied.kind, "resource": applied.resource, "target": applied.target}

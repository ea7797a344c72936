"""What a pending permission request would do, for the inspector's ask bar: the call, and the change it would write.

The change is computed from the file as it is now, the way the tool computes it (``edit`` runs the tool's own
matching, ``builtins._replacers.replace``; ``write`` compares the new content with the file; ``apply_patch`` applies
each hunk in memory, ``builtins._patch``), with the paths resolved through the session's Location as the tool
resolves them; a file outside the project is never read. Nothing is written. When it cannot be computed (no such file, not UTF-8 text, larger than 4 MiB,
``old_string`` not matching once, a patch that does not apply) ``patch`` is ``None`` and ``reason`` says why: the
person still sees the call's own input, and the tool reports the mismatch when it runs. The terminal's approval
prompt computes the same (``cli/_preview.py``); the tool recomputes everything when it runs, so a preview is never
what is acted on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread

from .._record import record
from ..errors import PathError, ToolFailure
from ..storable import printable

if TYPE_CHECKING:
    from ..location import Location, ResolvedPath

__all__ = ["EDIT_TOOLS", "Change", "change_of"]

EDIT_TOOLS = frozenset({"edit", "write", "apply_patch"})
_MAX_FILE = 4 << 20
"""Bytes of a file read to preview a change."""


@record
class Change:
    """The unified diff a call would write (``patch``), or why it is not shown (``reason``)."""

    patch: str | None = None
    reason: str | None = None


class _NoPreview(Exception):
    """The change cannot be computed from the file; the message says why."""


def _text_of(path: Path) -> str | None:
    """The file's text as the file tools read it (``None``: no such file). Blocking.

    Raises:
        _NoPreview: not a regular UTF-8 text file, or too large.
    """
    from ..location import decode_text, read_bytes_sync

    try:
        if os.stat(path).st_size > _MAX_FILE:
            raise _NoPreview(f"the file is larger than {_MAX_FILE >> 20} MiB")
        raw = read_bytes_sync(path)
    except FileNotFoundError:
        return None
    except (OSError, ToolFailure) as exc:
        raise _NoPreview(f"the file cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if raw is None:
        return None
    try:
        return decode_text(raw).text.replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise _NoPreview("the file is not UTF-8 text") from None


def _edit_patch(path: Path, resource: str, args: Mapping[str, Any]) -> str:
    from ..builtins._common import unified_diff
    from ..builtins._replacers import AmbiguousMatch, IndentationUnclear, NoMatch, SpanTooLarge, replace

    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise _NoPreview("the call has no old_string and new_string")
    text = _text_of(path)
    if text is None:
        raise _NoPreview("the file does not exist")
    try:
        updated, _ = replace(
            text,
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
            replace_all=args.get("replace_all") is True,
        )
    except (NoMatch, AmbiguousMatch, IndentationUnclear, SpanTooLarge):
        raise _NoPreview("old_string does not match the file once") from None
    return unified_diff(text, updated, resource)


def _write_patch(path: Path, resource: str, args: Mapping[str, Any]) -> str:
    from ..builtins._common import unified_diff

    content = args.get("content")
    if not isinstance(content, str):
        raise _NoPreview("the call has no content")
    return unified_diff(_text_of(path) or "", content.removeprefix("\ufeff").replace("\r\n", "\n"), resource)


async def _inside(location: Location, path: str) -> ResolvedPath:
    """``path`` resolved as the tool resolves it; a file outside the project is never read for a preview (the call
    has not been allowed to touch it, and a page must not show what it holds).

    Raises:
        _NoPreview: the path does not resolve, or lies outside the project.
    """
    try:
        resolved = await location.aresolve(path)
    except PathError as exc:
        raise _NoPreview(exc.message) from None
    if not resolved.internal:
        raise _NoPreview(
            f"{printable(resolved.resource)} is outside the project: its content is not read for a preview"
        )
    return resolved


async def _apply_patch(location: Location, text: str) -> str:
    from ..builtins._common import unified_diff
    from ..builtins._patch import PatchError, apply_chunks, parse_patch

    try:
        hunks = parse_patch(text)
    except PatchError as exc:
        raise _NoPreview(f"the patch does not parse: {exc}") from None
    patches: list[str] = []
    for hunk in hunks:
        resolved = await _inside(location, hunk.path)
        resource = resolved.resource
        if hunk.kind == "add":
            patches.append(unified_diff("", hunk.contents, resource))
            continue
        old = await anyio.to_thread.run_sync(_text_of, resolved.path)
        if old is None:
            raise _NoPreview(f"{printable(resource)} does not exist")
        if hunk.kind == "delete":
            patches.append(unified_diff(old, "", resource))
            continue
        try:
            new = apply_chunks(old, hunk.chunks, resource)
        except PatchError as exc:
            raise _NoPreview(f"the patch does not apply to {printable(resource)}: {exc}") from None
        if hunk.move_to:
            resource = f"{resource} -> {hunk.move_to}"
        patches.append(unified_diff(old, new, resource))
    return "".join(patches)


async def change_of(location: Location, tool: str, tool_input: Any) -> Change:
    """The change ``tool`` would write with ``tool_input`` in ``location`` (an empty :class:`Change` for a tool that
    writes no file, or an input that is not an object)."""
    if tool not in EDIT_TOOLS or not isinstance(tool_input, Mapping):
        return Change()
    args = cast(Mapping[str, Any], tool_input)
    try:
        if tool == "apply_patch":
            text = args.get("patch_text")
            if not isinstance(text, str):
                raise _NoPreview("the call has no patch")
            return Change(patch=await _apply_patch(location, text))
        path = args.get("path")
        if not isinstance(path, str):
            raise _NoPreview("the call has no path")
        resolved = await _inside(location, path)
        compute = _edit_patch if tool == "edit" else _write_patch
        return Change(patch=await anyio.to_thread.run_sync(compute, resolved.path, resolved.resource, args))
    except _NoPreview as exc:
        return Change(reason=str(exc))

"""The change a file-writing call would make, computed from the file as it is now: shared by the two edges that show
one before it is approved (the terminal's approval prompt, ``cli/_preview.py``; the inspector's ask bar,
``server/_preview.py``).

The change is computed the way the tool will compute it: ``edit`` runs the tool's own matching
(``builtins._replacers.replace``) on the file's text, ``write`` compares the new content with the file,
``apply_patch`` applies each hunk to its file in memory (``builtins._patch``). Paths resolve through the Location, as
the tool resolves them; with ``inside=True`` (the server's) a file outside the project is never read, since the call
has not been allowed to touch it and a page must not show what it holds. Nothing is written. When the change cannot be
computed (no such file, not UTF-8 text, larger than 4 MiB, ``old_string`` not matching once, a patch that does not
apply), :class:`NoPreview` says why. The tool recomputes everything when it runs, so a preview is never what is acted
on. Files are read in a worker thread (law 9).

Which argument names a call's path or patch, and what to show when there is none, is each edge's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio.to_thread

from .errors import PathError, ToolFailure
from .storable import printable

if TYPE_CHECKING:
    from .location import Location, ResolvedPath

__all__ = ["NoPreview", "patch_diff", "write_diff"]

_MAX_FILE = 4 << 20
"""Bytes of a file read to preview a change (a larger one is not previewed)."""


class NoPreview(Exception):
    """The change cannot be computed from the file; the message says why."""


def _text_of(path: Path) -> str | None:
    """The text of ``path`` as the file tools read it (``None``: no such file). Blocking.

    Raises:
        NoPreview: not a regular UTF-8 text file, or too large.
    """
    from .location import decode_text, read_bytes_sync

    try:
        if os.stat(path).st_size > _MAX_FILE:
            raise NoPreview(f"the file is larger than {_MAX_FILE >> 20} MiB")
        raw = read_bytes_sync(path)
    except FileNotFoundError:
        return None
    except (OSError, ToolFailure) as exc:
        raise NoPreview(f"the file cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if raw is None:
        return None
    try:
        return decode_text(raw).text.replace("\r\n", "\n")
    except UnicodeDecodeError:
        raise NoPreview("the file is not UTF-8 text") from None


def _edit_patch(path: Path, resource: str, args: Mapping[str, Any]) -> str:
    from .builtins.internal import (
        AmbiguousMatch,
        IndentationUnclear,
        NoMatch,
        SpanTooLarge,
        replace,
        unified_diff,
    )

    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        raise NoPreview("the call has no old_string and new_string")
    text = _text_of(path)
    if text is None:
        raise NoPreview("the file does not exist")
    try:
        updated, _ = replace(
            text,
            old.replace("\r\n", "\n"),
            new.replace("\r\n", "\n"),
            replace_all=args.get("replace_all") is True,
        )
    except (NoMatch, AmbiguousMatch, IndentationUnclear, SpanTooLarge):
        raise NoPreview("old_string does not match the file once") from None
    return unified_diff(text, updated, resource)


def _write_patch(path: Path, resource: str, args: Mapping[str, Any]) -> str:
    from .builtins.internal import unified_diff

    content = args.get("content")
    if not isinstance(content, str):
        raise NoPreview("the call has no content")
    return unified_diff(_text_of(path) or "", content.removeprefix("\ufeff").replace("\r\n", "\n"), resource)


async def _resolve(location: Location, path: str, *, inside: bool) -> ResolvedPath:
    """``path`` resolved as the tool resolves it.

    Raises:
        NoPreview: the path does not resolve, or (``inside``) lies outside the project.
    """
    try:
        resolved = await location.aresolve(path)
    except PathError as exc:
        raise NoPreview(exc.message) from None
    if inside and not resolved.internal:
        raise NoPreview(
            f"{printable(resolved.resource)} is outside the project: its content is not read for a preview"
        )
    return resolved


async def write_diff(
    location: Location, tool: Literal["edit", "write"], path: str, args: Mapping[str, Any], *, inside: bool
) -> str:
    """The unified diff an ``edit`` or ``write`` call with ``args`` would make to ``path``.

    Raises:
        NoPreview: it cannot be computed (the message says why).
    """
    resolved = await _resolve(location, path, inside=inside)
    compute = _edit_patch if tool == "edit" else _write_patch
    return await anyio.to_thread.run_sync(compute, resolved.path, resolved.resource, args)


async def patch_diff(location: Location, text: str, *, inside: bool) -> str:
    """The unified diff an ``apply_patch`` call with the patch ``text`` would make, file by file.

    Raises:
        NoPreview: it cannot be computed (the message says why).
    """
    from .builtins.internal import PatchError, apply_chunks, parse_patch, unified_diff

    try:
        hunks = parse_patch(text)
    except PatchError as exc:
        raise NoPreview(f"the patch does not parse: {exc}") from None
    patches: list[str] = []
    for hunk in hunks:
        resolved = await _resolve(location, hunk.path, inside=inside)
        resource = resolved.resource
        if hunk.kind == "add":
            patches.append(unified_diff("", hunk.contents, resource))
            continue
        old = await anyio.to_thread.run_sync(_text_of, resolved.path)
        if old is None:
            raise NoPreview(f"{printable(resource)} does not exist")
        if hunk.kind == "delete":
            patches.append(unified_diff(old, "", resource))
            continue
        try:
            new = apply_chunks(old, hunk.chunks, resource)
        except PatchError as exc:
            raise NoPreview(f"the patch does not apply to {printable(resource)}: {exc}") from None
        if hunk.move_to:
            resource = f"{resource} -> {hunk.move_to}"
        patches.append(unified_diff(old, new, resource))
    return "".join(patches)

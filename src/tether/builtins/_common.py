"""Helpers shared by the file tools: path resolution with model-facing errors, diffs, the permission asserter type."""

from __future__ import annotations

import difflib
from typing import Any

from ..errors import PathError, ToolFailure
from ..location import Location, PathKind, ResolvedPath

__all__ = ["file_diff", "resolve_or_fail", "unified_diff"]


async def resolve_or_fail(location: Location, path: str, kind: PathKind = "file") -> ResolvedPath:
    """Resolve ``path``; a :class:`PathError` becomes a :class:`ToolFailure` whose message tells the model why.

    Raises:
        ToolFailure: the path is empty, escapes the Location through a symlink, or has a file as an ancestor.
    """
    try:
        return await location.aresolve(path, kind)
    except PathError as exc:
        raise ToolFailure(exc.message) from exc


def unified_diff(old: str, new: str, name: str) -> str:
    """A two-file unified diff of ``old`` → ``new`` labelled with ``name`` (line endings normalised to LF)."""
    a = old.replace("\r\n", "\n").splitlines(keepends=True)
    b = new.replace("\r\n", "\n").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def file_diff(old: str | None, new: str | None, name: str) -> dict[str, Any]:
    """The ``FileDiff`` record for metadata: file, patch, status, additions, deletions."""
    patch = unified_diff(old or "", new or "", name)
    additions = deletions = 0
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            additions += 1
        elif line.startswith("-") and not line.startswith("---"):
            deletions += 1
    status = "added" if old is None else "deleted" if new is None else "modified"
    return {"file": name, "patch": patch, "status": status, "additions": additions, "deletions": deletions}

"""Helpers shared by the file tools: path resolution with model-facing errors, diffs, the permission asserter type."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from typing import Any

from ..errors import PathError, ToolFailure
from ..location import Location, PathKind, ResolvedPath

__all__ = [
    "LINE_SUFFIX",
    "MAX_LINE_CHARS",
    "METADATA_DIFF_BUDGET",
    "cap_diffs",
    "cap_patch",
    "cut_line",
    "file_diff",
    "resolve_or_fail",
    "unified_diff",
]

MAX_LINE_CHARS = 2000
"""Characters of one line that ``read`` and ``grep`` show; the rest is cut with :data:`LINE_SUFFIX`."""
LINE_SUFFIX = f"... (line truncated to {MAX_LINE_CHARS} chars)"

METADATA_DIFF_BUDGET = 8 * 1024
"""Bytes of diff text (JSON-encoded) one call puts in its metadata.

Settle drops metadata over 16 KiB as a whole; capping the diffs well below that keeps the rest of the record (the
file list, the counts, the status) for every file size. The model's content never depends on it."""
_MARKER_RESERVE = 96


def cut_line(line: str) -> str:
    """``line`` cut to :data:`MAX_LINE_CHARS` characters, with :data:`LINE_SUFFIX` when something was cut."""
    return line[:MAX_LINE_CHARS] + LINE_SUFFIX if len(line) > MAX_LINE_CHARS else line


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


def _json_size(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2


def cap_patch(patch: str, budget: int) -> tuple[str, bool]:
    """``patch`` cut at a line boundary so its JSON encoding fits ``budget`` bytes, with a marker; and whether cut."""
    if _json_size(patch) <= budget:
        return patch, False
    lines = patch.splitlines(keepends=True)
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = _json_size(line)
        if used + cost > budget - _MARKER_RESERVE:
            break
        kept.append(line)
        used += cost
    return "".join(kept) + f"... (diff truncated: {len(lines) - len(kept)} more lines)\n", True


def file_diff(
    old: str | None, new: str | None, name: str, *, budget: int = METADATA_DIFF_BUDGET
) -> dict[str, Any]:
    """The ``FileDiff`` record for metadata: file, patch, status, additions, deletions, diffTruncated.

    The counts cover the whole change; ``patch`` is capped to ``budget`` bytes (``diffTruncated`` says so).
    Blocking for large files (difflib): call it from a worker thread.
    """
    full = unified_diff(old or "", new or "", name)
    additions = deletions = 0
    for line in full.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            additions += 1
        elif line.startswith("-") and not line.startswith("---"):
            deletions += 1
    patch, truncated = cap_patch(full, budget)
    status = "added" if old is None else "deleted" if new is None else "modified"
    return {
        "file": name,
        "patch": patch,
        "status": status,
        "additions": additions,
        "deletions": deletions,
        "diffTruncated": truncated,
    }


def cap_diffs(diffs: Sequence[dict[str, Any]], budget: int = METADATA_DIFF_BUDGET) -> list[dict[str, Any]]:
    """Share ``budget`` between several ``FileDiff`` records (each already capped by :func:`file_diff`).

    Earlier files keep their patch while it fits; later ones get what is left, possibly only the marker.
    """
    out: list[dict[str, Any]] = []
    left = budget
    for diff in diffs:
        patch, truncated = cap_patch(diff["patch"], max(left, _MARKER_RESERVE))
        left -= _json_size(patch)
        out.append({**diff, "patch": patch, "diffTruncated": bool(diff.get("diffTruncated")) or truncated})
    return out

"""The ``glob`` tool: files whose path matches a glob pattern, newest first, via ripgrep's file listing.

ripgrep lists the files (respecting ``.gitignore``/``.ignore``/``.rgignore``, skipping hidden files); the pattern is
matched here with ripgrep's glob semantics. The tool keeps at most ``limit + 1`` matches (the extra one only detects
truncation), stops ripgrep, and sorts what it kept by modification
time, newest first (so with truncation the order covers the files returned, as in the reference).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ToolFailure
from ..location import require_external
from ..permissions import PermissionRequest
from ..tools import Tool, ToolContext, ToolResponse
from ._deps import BuiltinDeps
from ._globset import GlobError, path_matcher, required_literal
from ._rg import rg_lines
from ._schemas import committed_codec
from ._search import BASE_FLAGS, DEFAULT_LIMIT, GIT_EXCLUDES, check_directory, mtime, search_root
from .grep import no_nul

__all__ = ["GlobInput", "glob_args", "make"]

DESCRIPTION = """Find files by name with a glob pattern such as `**/*.py` or `src/**/test_*.ts`.

- `path` is the directory to search (default: the working directory).
- Files ignored by .gitignore/.ignore and hidden files are skipped.
- Returns absolute paths, most recently modified first, at most `limit` (default 100).
- To search file contents, use `grep`."""


class GlobInput(BaseModel):
    """Input of the glob tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    pattern: str = Field(min_length=1, description="The glob pattern to match file paths against")
    path: str | None = Field(
        default=None, description="The directory to search (default: the working directory)"
    )
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=10_000, description="The maximum number of results")

    @field_validator("pattern")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        # no file path holds a NUL: say so instead of answering "No files found"
        no_nul(value)
        return value


def glob_args() -> list[str]:
    """ripgrep's arguments for listing the (not ignored, not hidden) files under the working directory.

    The pattern is not passed as ``--glob``: a ripgrep whitelist glob overrides the ignore files and hidden-file
    filtering. It is matched here, with ripgrep's glob semantics (``_globset.path_matcher``).
    """
    return [*BASE_FLAGS, "--files", *GIT_EXCLUDES, "."]


def _matches(matcher: re.Pattern[str], literal: str, block: str) -> list[str]:
    """The paths in ``block`` (one per line) that match; lines without ``literal`` are skipped cheaply."""
    if not literal:
        return [m.group(1) for m in matcher.finditer(block)]
    out: list[str] = []
    find = block.find
    pos = find(literal)
    while pos >= 0:
        start = block.rfind("\n", 0, pos) + 1
        end = find("\n", pos)
        if end < 0:
            end = len(block)
        match = matcher.match(block, start, end)
        if match is not None and match.end() == end:
            out.append(match.group(1))
        pos = find(literal, end)
    return out


def _sorted(root: Path, names: list[str]) -> list[str]:
    paths = [root / name for name in names]
    keyed = sorted((-mtime(p), str(p)) for p in paths)
    return [p for _, p in keyed]


def make(deps: BuiltinDeps) -> Tool[GlobInput, Any]:
    """Build the glob tool bound to ``deps``."""
    return Tool(description=DESCRIPTION, input=committed_codec(GlobInput), execute=executor(deps))


def executor(deps: BuiltinDeps) -> Callable[[GlobInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the glob tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    location = deps.location
    permissions = deps.permissions

    async def execute(input: GlobInput, ctx: ToolContext) -> ToolResponse[Any]:
        resolved = await search_root(location, input.path)
        await require_external(permissions, ctx, resolved)
        await permissions.assert_(
            PermissionRequest.from_context(
                ctx,
                action="glob",
                resources=[input.pattern],
                save=["*"],
                metadata={"root": str(location.root), "path": resolved.resource, "limit": input.limit},
            )
        )
        await check_directory(resolved, input.path)
        try:
            matcher = path_matcher(input.pattern)
            literal = required_literal(input.pattern)
        except GlobError as exc:
            raise ToolFailure(f"Invalid glob pattern: {input.pattern} ({exc})") from None
        names: list[str] = []
        want = input.limit + 1
        async with rg_lines(glob_args(), cwd=resolved.path) as rg:
            async for batch in rg.batches():
                names.extend(_matches(matcher, literal, b"\n".join(batch).decode("utf-8", "surrogateescape")))
                if len(names) >= want:
                    break
            code = None if len(names) >= want else await rg.wait()
            errors = rg.stderr
        if code == 2 and not names:
            message = errors.decode("utf-8", "replace").strip()
            raise ToolFailure(f"Unable to find files matching {input.pattern}: {message}")
        truncated = len(names) > input.limit
        paths = await anyio.to_thread.run_sync(_sorted, resolved.path, names[: input.limit])
        if not paths:
            text = "No files found"
        else:
            text = "\n".join(paths)
            if truncated:
                text += (
                    f"\n\n(Results are truncated: showing first {input.limit} results. "
                    "Consider using a more specific path or pattern.)"
                )
        return ToolResponse(
            content=text,
            metadata={"count": len(paths), "truncated": truncated},
            title=resolved.resource,
        )

    return execute

"""The ``grep`` tool: lines matching a regular expression, grouped per file, files newest first, via ripgrep.

The tool reads at most ``limit + 1`` matching lines (the extra one only detects truncation), then stops ripgrep. A
file path searches exactly that file; a FIFO, device or socket is refused at once (ripgrep would read it until a
writer closes it, or forever). Hidden files are searched (as the reference does); ``.git`` never is, whatever the
include glob. ripgrep prints at most ``MAX_LINE_BYTES`` of a matching line, so a line of any length costs linear
time and bounded memory.

Showing a file's lines is reading it, so ``read`` rules apply too (``.env`` files ask under the default agents):

- a file target asks ``read`` on it (after ``grep``) before it is searched, so the answer never depends on content
  the user has not allowed;
- a directory search asks ``read`` once, after matching and before anything is shown, over the files whose lines
  would be shown (resources: their paths as the read tool names them; save: those paths). Allowed by the rules (the
  usual case) it is silent; otherwise a person decides, and a refusal fails the call like any permission outcome.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ToolFailure
from ..location import Location, PermissionAsserter, ResolvedPath, require_external
from ..permissions import PermissionRequest
from ..tools import Tool, ToolContext, ToolResponse
from ._common import LINE_SUFFIX, MAX_LINE_CHARS, cut_line
from ._deps import BuiltinDeps
from ._rg import rg_lines
from ._schemas import committed_codec
from ._search import BASE_FLAGS, DEFAULT_LIMIT, GIT_EXCLUDES, mtime, path_kind, search_root

__all__ = ["GrepInput", "grep_args", "make", "no_nul"]

MAX_LINE_BYTES = 4 * MAX_LINE_CHARS
_RG_LONG_LINE = " [... omitted end of long line]"

DESCRIPTION = """Search file contents with a regular expression (ripgrep syntax, e.g. `def \\w+\\(` or `TODO|FIXME`).

- `path` is a directory to search (default: the working directory) or a single file.
- `include` restricts the files searched with a glob, e.g. `*.py` or `*.{ts,tsx}`.
- `literal: true` searches for the text as is; `case_sensitive: false` ignores case.
- Returns matching lines with their line numbers, grouped per file, most recently modified files first, at most
  `limit` lines (default 100). Files ignored by .gitignore/.ignore are skipped.
- To find files by name, use `glob`."""


class GrepInput(BaseModel):
    """Input of the grep tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    pattern: str = Field(
        min_length=1, description="The regular expression (or text, with literal) to search for"
    )
    path: str | None = Field(default=None, description="A directory or file to search (default: the project)")
    include: str | None = Field(
        default=None, description='A glob restricting the files searched, e.g. "*.py"'
    )
    literal: bool = Field(default=False, description="Treat the pattern as literal text, not a regex")
    case_sensitive: bool = Field(default=True, description="Match case exactly (default true)")
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, le=10_000, description="The maximum number of matching lines"
    )

    @field_validator("pattern", "include")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        return no_nul(value)


def no_nul(value: str | None) -> str | None:
    """Refuse a NUL byte in a pattern: no argument of a process can hold one (the model is told, not a traceback)."""
    if value is not None and "\0" in value:
        raise ValueError("must not contain a NUL character (\\u0000); remove it")
    return value


def grep_args(
    pattern: str,
    *,
    target: str = ".",
    include: str | None = None,
    literal: bool = False,
    case_sensitive: bool = True,
) -> list[str]:
    """ripgrep's arguments for a grep call (output: ``path NUL line:text`` per matching line)."""
    args = [
        *BASE_FLAGS,
        "--hidden",
        "--no-messages",
        "--null",
        "--line-number",
        "--with-filename",
        "--no-heading",
        "--color=never",
        # ripgrep prints at most this many bytes of a matching line, then its marker: the output stays small and
        # linear for a line of any length (every character the model can see fits: 4 bytes at most each).
        f"--max-columns={MAX_LINE_BYTES}",
        "--max-columns-preview",
    ]
    if include:
        args.append(f"--glob={include}")
    # Last: a later glob wins in ripgrep, so no include glob (even ``*``) can bring .git back.
    args += GIT_EXCLUDES
    if literal:
        args.append("--fixed-strings")
    args.append("--case-sensitive" if case_sensitive else "--ignore-case")
    args += ["--regexp", pattern, "--", target]
    return args


def _group(root: Path, records: list[tuple[str, int, str]]) -> list[tuple[Path, list[tuple[int, str]]]]:
    files: dict[str, list[tuple[int, str]]] = {}
    for name, number, text in records:
        files.setdefault(name, []).append((number, text))
    grouped = [(root / name.removeprefix("./"), sorted(lines)) for name, lines in files.items()]
    grouped.sort(key=lambda item: (-mtime(item[0]), str(item[0])))
    return grouped


def _parse(line: bytes) -> tuple[str, int, str] | None:
    name, sep, rest = line.partition(b"\0")
    if not sep:
        return None
    number, sep, text = rest.partition(b":")
    if not sep or not number.isdigit():
        return None
    decoded = text.decode("utf-8", "replace").removesuffix("\r")
    preview = decoded.removesuffix(_RG_LONG_LINE)
    if len(preview) < len(decoded) and len(preview) >= MAX_LINE_CHARS:
        # ripgrep cut it (its preview always holds more than MAX_LINE_CHARS characters)
        decoded = preview[:MAX_LINE_CHARS] + LINE_SUFFIX
    else:
        decoded = cut_line(decoded)
    return name.decode("utf-8", "surrogateescape"), int(number), decoded


def _resource(location: Location, root: ResolvedPath, file: Path) -> str:
    """The ``read`` resource of a file found under the search root: as the read tool would name it."""
    if not root.internal:
        return location.display(file)
    return Path(os.path.relpath(file, location.root)).as_posix()


async def _ask_read(
    permissions: PermissionAsserter, ctx: ToolContext, resources: list[str], pattern: str
) -> None:
    await permissions.assert_(
        PermissionRequest.from_context(
            ctx,
            action="read",
            resources=resources,
            save=resources,
            metadata={"tool": "grep", "pattern": pattern},
        )
    )


def make(deps: BuiltinDeps) -> Tool[GrepInput, Any]:
    """Build the grep tool bound to ``deps``."""
    return Tool(description=DESCRIPTION, input=committed_codec(GrepInput), execute=executor(deps))


def executor(deps: BuiltinDeps) -> Callable[[GrepInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the grep tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    location = deps.location
    permissions = deps.permissions

    async def execute(input: GrepInput, ctx: ToolContext) -> ToolResponse[Any]:
        resolved = await search_root(location, input.path)
        await require_external(permissions, ctx, resolved)
        await permissions.assert_(
            PermissionRequest.from_context(
                ctx,
                action="grep",
                resources=[input.pattern],
                save=["*"],
                metadata={"pattern": input.pattern, "path": resolved.resource, "include": input.include},
            )
        )
        path = resolved.path
        kind = await anyio.to_thread.run_sync(path_kind, path)
        if kind == "missing":
            raise ToolFailure(f"Search path not found: {(input.path or '.').strip()}")
        if kind != "directory" and kind != "file":
            raise ToolFailure(
                f"Search path is {kind}, not a regular file or a directory: {(input.path or '.').strip()}. "
                "grep searches regular files only (reading this would never end or block)."
            )
        if kind == "directory":
            cwd, target = path, "."
        else:
            cwd, target = path.parent, path.name
            await _ask_read(permissions, ctx, [resolved.resource], input.pattern)
        args = grep_args(
            input.pattern,
            target=target,
            include=input.include,
            literal=input.literal,
            case_sensitive=input.case_sensitive,
        )
        records: list[tuple[str, int, str]] = []
        want = input.limit + 1
        async with rg_lines(args, cwd=cwd) as rg:
            async for batch in rg.batches():
                for line in batch:
                    parsed = _parse(line)
                    if parsed is not None:
                        records.append(parsed)
                if len(records) >= want:
                    break
            code = None if len(records) >= want else await rg.wait()
            errors = rg.stderr.decode("utf-8", "replace").strip()
        if code == 2 and not records:
            if "regex" in errors or "parse error" in errors:
                raise ToolFailure(f"Invalid regex pattern: {errors}")
            raise ToolFailure(f"Unable to grep for {input.pattern}: {errors or 'ripgrep failed'}")
        truncated = len(records) > input.limit
        kept = records[: input.limit]
        if not kept:
            return ToolResponse(
                content="No matches found", metadata={"matches": 0, "truncated": False}, title=input.pattern
            )
        grouped = await anyio.to_thread.run_sync(_group, cwd, kept)
        if kind == "directory":
            await _ask_read(
                permissions, ctx, [_resource(location, resolved, f) for f, _ in grouped], input.pattern
            )
        out = [f"Found {len(kept)} matches"]
        for file, lines in grouped:
            out.append("")
            out.append(f"{file}:")
            out.extend(f"  Line {number}: {text}" for number, text in lines)
        if truncated:
            out.append("")
            out.append(
                f"(Results truncated: showing first {input.limit} matches. "
                "Consider using a more specific path or pattern.)"
            )
        return ToolResponse(
            content="\n".join(out),
            metadata={"matches": len(kept), "truncated": truncated},
            title=input.pattern,
        )

    return execute

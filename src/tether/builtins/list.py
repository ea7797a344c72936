"""The ``list`` tool: a tree view of a directory (ripgrep's file listing), common build and VCS folders skipped.

At most 100 files are listed; the tree shows the directories that lead to them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolFailure
from ..location import authorize
from ..tools import Tool, ToolContext, ToolResponse
from ._deps import BuiltinDeps
from ._rg import rg_lines
from ._schemas import committed_codec
from ._search import BASE_FLAGS, check_directory, search_root

__all__ = ["IGNORED_DIRECTORIES", "LIMIT", "ListInput", "make"]

LIMIT = 100
IGNORED_DIRECTORIES = (
    "node_modules",
    "__pycache__",
    ".git",
    "dist",
    "build",
    "target",
    "vendor",
    "bin",
    "obj",
    ".idea",
    ".vscode",
    ".zig-cache",
    "zig-out",
    ".coverage",
    "coverage",
    "tmp",
    "temp",
    ".cache",
    "cache",
    "logs",
    ".venv",
    "venv",
    "env",
)

DESCRIPTION = """List the files under a directory as a tree (default: the working directory).

- Common build, dependency and VCS folders (node_modules, .git, dist, build, .venv, ...) and files ignored by
  .gitignore are skipped; `ignore` adds more glob patterns to skip.
- At most 100 files are shown. Prefer `glob` or `grep` when you know what you are looking for."""


class ListInput(BaseModel):
    """Input of the list tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    path: str | None = Field(
        default=None, description="The directory to list (default: the working directory)"
    )
    ignore: list[str] | None = Field(default=None, description="Glob patterns of files or folders to skip")


def _tree(root: str, files: list[str]) -> str:
    dirs: set[str] = set()
    by_dir: dict[str, list[str]] = {}
    for file in files:
        parent, _, name = file.rpartition("/")
        by_dir.setdefault(parent, []).append(name)
        while parent:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    children: dict[str, list[str]] = {}
    for d in dirs:
        children.setdefault(d.rpartition("/")[0], []).append(d)
    lines = [root.rstrip("/") + "/"]

    def render(directory: str, depth: int) -> None:
        indent = "  " * depth
        for sub in sorted(children.get(directory, [])):
            lines.append(f"{indent}{sub.rpartition('/')[2]}/")
            render(sub, depth + 1)
        for name in sorted(by_dir.get(directory, [])):
            lines.append(f"{indent}{name}")

    render("", 1)
    return "\n".join(lines)


def make(deps: BuiltinDeps) -> Tool[ListInput, Any]:
    """Build the list tool bound to ``deps``."""
    return Tool(description=DESCRIPTION, input=committed_codec(ListInput), execute=executor(deps))


def executor(deps: BuiltinDeps) -> Callable[[ListInput, ToolContext], Awaitable[ToolResponse[Any]]]:
    """What a call of the list tool runs, bound to ``deps`` (a Location loads this module at the tool's first
    call: ``builtins/_deferred.py``)."""
    location = deps.location
    permissions = deps.permissions

    async def execute(input: ListInput, ctx: ToolContext) -> ToolResponse[Any]:
        resolved = await search_root(location, input.path)
        await authorize(permissions, ctx, resolved, action="list", save=("*",))
        await check_directory(resolved, input.path)
        args = [*BASE_FLAGS, "--files"]
        args += [f"--glob=!**/{name}/**" for name in IGNORED_DIRECTORIES]
        args += [f"--glob=!{pattern}" for pattern in input.ignore or ()]
        args.append(".")
        files: list[str] = []
        async with rg_lines(args, cwd=resolved.path) as rg:
            async for batch in rg.batches():
                files.extend(
                    line.decode("utf-8", "surrogateescape").removeprefix("./") for line in batch if line
                )
                if len(files) > LIMIT:
                    break
            code = None if len(files) > LIMIT else await rg.wait()
            errors = rg.stderr.decode("utf-8", "replace").strip()
        if code == 2 and not files:
            raise ToolFailure(f"Unable to list {(input.path or '.').strip()}: {errors}")
        truncated = len(files) > LIMIT
        files = files[:LIMIT]
        text = _tree(location.display(resolved.path), files)
        if truncated:
            text += (
                f"\n\n(Showing the first {LIMIT} files. Use a more specific path or the ignore parameter.)"
            )
        return ToolResponse(
            content=text, metadata={"count": len(files), "truncated": truncated}, title=resolved.resource
        )

    return execute

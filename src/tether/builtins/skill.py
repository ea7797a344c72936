"""The ``skill`` tool: load an Agent Skill (its ``SKILL.md`` instructions and the list of its files) on demand.

The skills are found when the Location is opened (``_skills.discover_skills``, in a worker thread) and listed in the
tool's description, name and description each (OpenCode puts the list in the system prompt instead; the description
keeps it with the one tool that uses it, and out of agents that cannot call it). A call asks ``skill`` with the
skill's name (save: the name, as OpenCode), then reads ``SKILL.md`` again (it may have changed since) through a
descriptor that never follows a symlink, and lists the folder's files: at most :data:`MAX_FILES`, sorted, relative
to the folder, hidden files included, symlinks only when they lead to a file inside the folder (OpenCode lists 10
absolute paths; relative paths are shorter and the base directory is given once).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolFailure
from ..permissions import PermissionRequest
from ..tools import Tool, ToolContext, ToolResponse
from ._deps import BuiltinDeps
from ._schemas import committed_codec
from ._skills import SKILL_FILE, FrontMatterError, Skill, Skills, discover_skills, parse_skill, read_limited

__all__ = ["MAX_BODY_BYTES", "MAX_FILES", "MAX_LISTED", "SkillInput", "discover_skills", "make"]

MAX_FILES = 50
"""The most files of a skill's folder listed when it is loaded."""
MAX_LISTED = 100
"""The most skills the tool's description lists (the rest are loadable by name, and counted)."""
MAX_BODY_BYTES = 1024 * 1024
"""The bytes of ``SKILL.md`` read when a skill is loaded (the rest is said to be left out)."""
_LISTED_DESCRIPTION = 300
_MAX_SCANNED = 5000


class SkillInput(BaseModel):
    """Input of the skill tool."""

    model_config = ConfigDict(defer_build=True)  # built at the first call (_schemas)

    name: str = Field(
        description="The name of the skill to load, as the list in this tool's description gives it"
    )


def _description(skills: Skills) -> str:
    lines = [
        "Load a skill: a folder with instructions (SKILL.md) and files for a specialised task. When the task at hand",
        "matches a skill's description, load it first and follow its instructions; its files are read with the usual",
        "tools, relative to the base directory the result gives.",
        "",
        "Available skills:",
    ]
    for skill in skills.found[:MAX_LISTED]:
        text = skill.description
        if len(text) > _LISTED_DESCRIPTION:
            text = text[: _LISTED_DESCRIPTION - 3].rstrip() + "..."
        lines.append(f"- {skill.name}: {text}")
    hidden = len(skills.found) - MAX_LISTED
    if hidden > 0:
        lines.append(f"- ... and {hidden} more, not listed (load one by its exact name)")
    return "\n".join(lines)


def _files(directory: Path) -> tuple[list[str], int]:
    """Up to :data:`MAX_FILES` files of the skill folder (relative, sorted, ``SKILL.md`` left out) and the count of
    the others. Symlinks are never walked; a symlink is listed only when it leads to a file inside the folder."""
    root = str(directory)
    found: list[str] = []
    scanned = 0
    for current, dirs, files in os.walk(directory, followlinks=False):
        scanned += len(dirs) + len(files)
        names = list(files) + [d for d in dirs if os.path.islink(os.path.join(current, d))]
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(current, d)))
        for name in names:
            path = os.path.join(current, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            if relative == SKILL_FILE:
                continue
            if os.path.islink(path):
                target = os.path.realpath(path)
                if not target.startswith(root + os.sep) or not os.path.isfile(target):
                    continue
            found.append(relative)
        if scanned > _MAX_SCANNED:
            break
    found.sort()
    return found[:MAX_FILES], max(0, len(found) - MAX_FILES)


def _load(skill: Skill) -> str:
    """The model text of a loaded skill. Blocking.

    Raises:
        ToolFailure: ``SKILL.md`` is gone, unreadable, or no longer this skill.
    """
    try:
        raw = read_limited(skill.file, MAX_BODY_BYTES + 1)
    except OSError as exc:
        raise ToolFailure(
            f"Unable to load skill {skill.name!r}: {skill.file} cannot be read ({exc.strerror or exc}). "
            "It may have been removed; pick another skill or continue without it."
        ) from exc
    cut = len(raw) > MAX_BODY_BYTES
    try:
        name, _, body = parse_skill(raw[:MAX_BODY_BYTES].decode("utf-8", errors="replace"))
    except FrontMatterError as exc:
        raise ToolFailure(
            f"Unable to load skill {skill.name!r}: {skill.file} is no longer valid: {exc}"
        ) from exc
    if name != skill.name:
        raise ToolFailure(
            f"Unable to load skill {skill.name!r}: {skill.file} now names the skill {name!r}; it changed since this "
            "session started"
        )
    files, more = _files(skill.directory)
    parts = [f'<skill_content name="{name}">', f"# Skill: {name}", "", body]
    if cut:
        parts.append(f"\n(SKILL.md is larger than {MAX_BODY_BYTES // 1024} KiB: the rest was not read)")
    parts += [
        "",
        f"Base directory for this skill: {skill.directory}",
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.",
        "",
        "<skill_files>",
        *(f"<file>{file}</file>" for file in files),
        "</skill_files>",
    ]
    if more:
        parts.append(f"({more} more files not listed: use glob in the base directory to see them)")
    parts.append("</skill_content>")
    return "\n".join(parts)


def make(deps: BuiltinDeps) -> Tool[SkillInput, Any]:
    """Build the skill tool over the skills discovered for ``deps`` (``deps.skills`` must hold at least one).

    Raises:
        ValueError: ``deps.skills`` is unset or empty.
    """
    skills = deps.skills
    if skills is None or not skills.found:
        raise ValueError("the skill tool needs the discovered skills (BuiltinDeps.skills)")
    permissions = deps.permissions

    async def execute(input: SkillInput, ctx: ToolContext) -> ToolResponse[Any]:
        name = input.name.strip()
        skill = skills.get(name)
        if skill is None:
            names = ", ".join(s.name for s in skills.found[:MAX_LISTED])
            raise ToolFailure(f'Skill "{name[:80]}" not found. Available skills: {names}')
        await permissions.assert_(
            PermissionRequest.from_context(ctx, action="skill", resources=(name,), save=(name,))
        )
        text = await anyio.to_thread.run_sync(_load, skill)
        return ToolResponse(
            content=text, title=f"Loaded skill: {name}", metadata={"name": name, "dir": str(skill.directory)}
        )

    return Tool(description=_description(skills), input=committed_codec(SkillInput), execute=execute)

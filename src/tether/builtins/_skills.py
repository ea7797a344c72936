"""Agent Skills: finding ``SKILL.md`` folders and reading their front matter, without executing anything.

Where skills are found, in this order (the first skill of a name wins; a later one of the same name is refused with
a line saying which one it lost to):

1. the user's own: ``<config dir>/skills/`` (``tether.paths.default_config_dir()``);
2. the project's, from the working directory up to the project root, in each directory ``.tether/skills/``, then,
   for compatibility, ``.opencode/skills/``, ``.opencode/skill/`` and ``.claude/skills/``.

OpenCode lets the last skill of a name win and reads the project's after the global ones, so a cloned repository's
``deploy`` skill replaces the user's own; here the user's skills come first (law 11: what a repository brings
tightens, never replaces, what the user set up). The user's global ``~/.claude/skills`` is not read: it is Claude
Code's configuration (as ``config._instructions`` does not read ``~/.claude/CLAUDE.md``); link it into the config
directory to use it.

A skill is text for the model, like an ``AGENTS.md``: a project's skills are read whether the project is trusted or
not, under the same rules as its instruction files: a ``SKILL.md`` (or skills folder) whose symlinks lead outside the
project, or that another user owns or may write (``config._discover.foreign``), is refused with a line. Nothing in a
skill folder is run, imported or parsed beyond the front matter.

The front matter is the block between a first ``---`` line and the next ``---`` line: ``key: value`` lines, read by
a small strict parser (no YAML library is installed, and a YAML loader would be more than this needs): plain,
single- and double-quoted scalars, ``|`` / ``>`` block scalars and indented continuation lines. Keys other than
``name`` and ``description`` are skipped (nested values included). ``name`` follows the Agent Skills rule (lowercase
letters, digits and single hyphens, at most 64 characters; it is a permission resource and shown in the tool's
description), ``description`` is 1 to 1024 characters. A malformed file is refused with a line naming the problem.

Blocking (walks and reads files): call from a worker thread.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from .._record import record
from .._regex import lazy
from ..config.internal import foreign
from ..errors import PathError
from ..location import Location

__all__ = [
    "MAX_DEPTH",
    "MAX_DESCRIPTION",
    "MAX_HEAD_BYTES",
    "PROJECT_DIRS",
    "SKILL_FILE",
    "FrontMatterError",
    "Skill",
    "Skills",
    "discover_skills",
    "parse_skill",
]

SKILL_FILE = "SKILL.md"
PROJECT_DIRS = (".tether/skills", ".opencode/skills", ".opencode/skill", ".claude/skills")
"""The skills folders of a project directory, in the order they are searched."""
MAX_DESCRIPTION = 1024
MAX_NAME = 64
MAX_DEPTH = 4
"""How deep under a skills folder a ``SKILL.md`` is looked for (``skills/<group>/<name>/SKILL.md`` is depth 2)."""
MAX_HEAD_BYTES = 64 * 1024
"""The bytes of a ``SKILL.md`` read to find its front matter while discovering."""
MAX_SKILLS = 500
"""The most skills kept (the rest are refused with one line)."""
_MAX_SCANNED = 5000  # directory entries one skills folder may walk through


_name = lazy(r"[a-z0-9]+(?:-[a-z0-9]+)*")


_key = lazy(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$")


Origin = Literal["user", "project"]


class FrontMatterError(ValueError):
    """A ``SKILL.md`` whose front matter is missing or malformed (the message says what and where)."""


@record
class Skill:
    """A skill found on disk: ``directory`` and ``file`` are canonical paths (symlinks followed)."""

    name: str
    description: str
    directory: Path
    file: Path
    origin: Origin


@record
class Skills:
    """The skills found (first of each name, in search order) and one line per ``SKILL.md`` refused."""

    found: tuple[Skill, ...] = ()
    refused: tuple[str, ...] = ()

    def get(self, name: str) -> Skill | None:
        return next((skill for skill in self.found if skill.name == name), None)


def _unquote_double(text: str, where: str) -> str:
    out: list[str] = []
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "/": "/", "r": "\r", "0": "\0", " ": " "}
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = text[i + 1 : i + 2]
        if code in escapes:
            out.append(escapes[code])
            i += 2
        elif code == "u" and re.fullmatch(r"[0-9A-Fa-f]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
        else:
            raise FrontMatterError(f"{where}: unsupported escape \\{code} in a double-quoted value")
    return "".join(out)


def _scalar(raw: str, where: str) -> str:
    """One line's value: quoted (closed on the same line) or plain (a `` #`` comment cut)."""
    if raw.startswith('"'):
        match = re.fullmatch(r'"((?:[^"\\]|\\.)*)"[ \t]*(?:#.*)?', raw)
        if match is None:
            raise FrontMatterError(f"{where}: a double-quoted value must close on its line")
        return _unquote_double(match.group(1), where)
    if raw.startswith("'"):
        match = re.fullmatch(r"'((?:[^']|'')*)'[ \t]*(?:#.*)?", raw)
        if match is None:
            raise FrontMatterError(f"{where}: a single-quoted value must close on its line")
        return match.group(1).replace("''", "'")
    if raw[:1] in ("&", "*", "!", "[", "{", "@", "`"):
        raise FrontMatterError(f"{where}: anchors, aliases, tags and flow values are not supported here")
    return re.split(r"[ \t]#", raw, maxsplit=1)[0].rstrip()


def _block(style: str, lines: list[str], where: str) -> str:
    """A ``|`` / ``>`` block scalar from its indented lines (chomping ``-``/``+`` honoured, clip by default)."""
    match = re.fullmatch(r"([|>])([+-]?)[ \t]*(?:#.*)?", style)
    if match is None:
        raise FrontMatterError(f"{where}: unsupported block scalar header {style!r}")
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    indent = min(indents, default=0)
    body = [line[indent:] if line.strip() else "" for line in lines]
    if match.group(1) == "|":
        text = "\n".join(body)
    else:  # folded: lines of one paragraph are joined with spaces, a blank line is a newline
        paragraphs: list[str] = []
        current: list[str] = []
        for line in body:
            if line:
                current.append(line.strip())
            else:
                paragraphs.append(" ".join(current))
                current = []
        paragraphs.append(" ".join(current))
        text = "\n".join(paragraphs)
    chomp = match.group(2)
    stripped = text.rstrip("\n")
    if chomp == "-":
        return stripped
    if chomp == "+":
        return text + "\n"
    return stripped + "\n" if stripped else ""


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """The top-level scalar keys of the front matter of ``text`` and the body after it.

    Raises:
        FrontMatterError: no front matter, no closing ``---``, tab indentation, or a line that is not ``key: value``.
    """
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise FrontMatterError("it does not start with a front matter block (a first line '---')")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "..."))
    except StopIteration:
        raise FrontMatterError("its front matter has no closing '---' line") from None
    values: dict[str, str] = {}
    i = 1
    while i < end:
        line = lines[i]
        where = f"line {i + 1}"
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        if line[0] in " \t":
            raise FrontMatterError(f"{where}: an indented line outside a value")
        match = _key().match(line)
        if match is None:
            raise FrontMatterError(f"{where}: expected 'key: value'")
        key, raw = match.group(1), (match.group(2) or "").strip()
        if key in values:
            raise FrontMatterError(f"{where}: the key {key!r} appears twice")
        j = i + 1
        while j < end and (not lines[j].strip() or lines[j][0] in " \t"):
            if lines[j][:1] == "\t":
                raise FrontMatterError(f"line {j + 1}: tabs cannot indent front matter")
            j += 1
        nested = lines[i + 1 : j]
        while nested and not nested[-1].strip():
            nested.pop()
        if key in ("name", "description"):
            if raw[:1] in ("|", ">"):
                values[key] = _block(raw, nested, where)
            elif not raw and not nested:
                values[key] = ""
            elif not raw:
                raise FrontMatterError(f"{where}: {key} must be a text, not a nested value")
            else:
                first = _scalar(raw, where)
                rest = [_scalar(part.strip(), f"line {i + 2}") for part in nested if part.strip()]
                if rest and raw[:1] in ("'", '"'):
                    raise FrontMatterError(f"{where}: a quoted value must close on its line")
                values[key] = " ".join([first, *rest])
        else:
            values[key] = raw  # kept unparsed: only name and description are read
        i = j
    return values, "\n".join(lines[end + 1 :])


def parse_skill(text: str) -> tuple[str, str, str]:
    """``(name, description, body)`` of a ``SKILL.md`` text.

    Raises:
        FrontMatterError: malformed front matter, or a missing or invalid name or description.
    """
    values, body = parse_front_matter(text)
    name = values.get("name", "").strip()
    description = " ".join(values.get("description", "").split())
    if not name:
        raise FrontMatterError("its front matter has no name")
    if len(name) > MAX_NAME or not _name().fullmatch(name):
        raise FrontMatterError(
            f"its name {name[:80]!r} is not a skill name (lowercase letters, digits and single hyphens, at most "
            f"{MAX_NAME} characters)"
        )
    if not description:
        raise FrontMatterError(f"skill {name!r} has no description")
    if len(description) > MAX_DESCRIPTION:
        raise FrontMatterError(
            f"the description of skill {name!r} is longer than {MAX_DESCRIPTION} characters"
        )
    return name, description, body.strip()


def read_limited(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file at the canonical ``path``, never through a symlink.

    Raises:
        OSError: the path is missing, a symlink, not a regular file, or unreadable.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return handle.read(limit)


def _candidates(folder: Path, *, follow: bool) -> Iterator[Path]:
    """The ``SKILL.md`` files under ``folder`` (at most :data:`MAX_DEPTH` deep; a skill's own subfolders are its
    files, not more skills). ``follow``: symlinked folders are walked (the user's own folder only)."""
    seen: set[str] = set()
    scanned = 0
    stack = [(folder, 0)]
    while stack:
        directory, depth = stack.pop()
        real = os.path.realpath(directory)
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        scanned += len(entries)
        if any(e.name == SKILL_FILE for e in entries) and directory != folder:
            yield directory / SKILL_FILE
            continue
        if depth >= MAX_DEPTH or scanned > _MAX_SCANNED:
            continue
        for entry in reversed(entries):
            try:
                if entry.is_dir(follow_symlinks=follow) and (follow or not entry.is_symlink()):
                    stack.append((Path(entry.path), depth + 1))
            except OSError:
                continue


def _chain(root: Path, directory: Path) -> list[Path]:
    """The directories from ``directory`` up to ``root`` (nearest first)."""
    chain = [directory]
    while chain[-1] != root and root in chain[-1].parents:
        chain.append(chain[-1].parent)
    return chain


class _Finder:
    def __init__(self, location: Location) -> None:
        self.location = location
        self.found: dict[str, Skill] = {}
        self.refused: list[str] = []

    def inside(self, path: Path) -> Path | None:
        """The canonical path of a project path, or ``None`` (refused) when its symlinks lead outside."""
        try:
            resolved = self.location.resolve(str(path))
        except PathError as exc:
            self.refused.append(f"refused skill folder {path}: {exc.message}")
            return None
        if not resolved.internal:
            self.refused.append(f"refused skill {path}: it leads outside the project through a symlink")
            return None
        return resolved.path

    def add_folder(self, folder: Path, origin: Origin) -> None:
        if not folder.is_dir():
            return
        if origin == "project":
            if self.inside(folder) is None:
                return
            why = foreign(folder)
            if why is not None:
                self.refused.append(f"refused skill folder {folder}: {why}")
                return
        for file in _candidates(folder, follow=origin == "user"):
            self.add_file(file, origin)

    def add_file(self, file: Path, origin: Origin) -> None:
        if origin == "project":
            real = self.inside(file)
            if real is None:
                return
            why = foreign(file) or foreign(file.parent)
            if why is not None:
                self.refused.append(f"refused skill {file}: {why}")
                return
        else:
            real = Path(os.path.realpath(file))
        try:
            head = read_limited(real, MAX_HEAD_BYTES)
            name, description, _ = parse_skill(head.decode("utf-8", errors="replace"))
        except OSError as exc:
            self.refused.append(f"refused skill {file}: {exc.strerror or exc}")
            return
        except FrontMatterError as exc:
            self.refused.append(f"refused skill {file}: {exc}")
            return
        first = self.found.get(name)
        if first is not None:
            self.refused.append(
                f"ignored skill {name!r} in {file}: {first.file} has the same name (first found wins)"
            )
            return
        if len(self.found) >= MAX_SKILLS:
            self.refused.append(f"ignored skill {name!r} in {file}: at most {MAX_SKILLS} skills are loaded")
            return
        self.found[name] = Skill(
            name=name, description=description, directory=real.parent, file=real, origin=origin
        )


def discover_skills(location: Location, user_dir: Path | None) -> Skills:
    """The skills of ``location``: the user's (``<user_dir>/skills``), then the project's (see the module docstring).

    ``user_dir`` is the tether config directory (``None``: no user skills). Blocking.
    """
    finder = _Finder(location)
    if user_dir is not None:
        finder.add_folder(user_dir / "skills", "user")
    for directory in _chain(location.root, location.directory):
        for name in PROJECT_DIRS:
            finder.add_folder(directory / name, "project")
    return Skills(found=tuple(finder.found.values()), refused=tuple(finder.refused))

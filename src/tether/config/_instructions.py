"""Instructions for the model: ``AGENTS.md`` files and the config's ``instructions`` entries, as system texts.

Found, in this order: the user's ``AGENTS.md`` (in the tether config directory), the instruction file of every
directory from the project root down to the working directory, then each path or glob of every config layer's
``instructions`` (relative to the project root). Each becomes one system text headed by its path, so the model (and a
person reading the request) can tell where an instruction came from.

A directory's instruction file is its ``AGENTS.md``, else its ``CLAUDE.md`` (so a repository written for Claude Code
works unchanged); never both. OpenCode picks the name once for the whole walk (``CLAUDE.md`` files only when no
directory has an ``AGENTS.md``); tether decides per directory, so a package's ``CLAUDE.md`` is not dropped because
the repository root has an ``AGENTS.md``. The user's global ``~/.claude/CLAUDE.md``, which OpenCode reads when there
is no global ``AGENTS.md``, is not read: it is Claude Code's configuration, written for its tools; name it in your
own ``instructions`` to use it.

The project root is the one the config was loaded for (:attr:`Config.root`, found by walking up from the working
directory), so a run started in ``repo/pkg`` reads ``repo/AGENTS.md`` too.

What the project brings is resolved through its :class:`~tether.location.Location`, as the ``read`` tool resolves a
path: a file in the project whose symlinks lead outside it (a committed ``AGENTS.md`` linked to ``~/.ssh/id_rsa``) is
refused with a warning, and so is an entry from the project's config that names a file outside. Only the user's own
config (or a project the user trusted) may name files outside the project. This reads files: call it from a worker
thread.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import PathError
from ..location import Location
from ..paths import default_config_dir
from ._discover import foreign
from ._load import Config, Instruction

__all__ = ["AGENTS_FILE", "CLAUDE_FILE", "Instructions", "load_instructions"]

AGENTS_FILE = "AGENTS.md"
CLAUDE_FILE = "CLAUDE.md"
_MAX_BYTES = 256 * 1024


@dataclass(frozen=True, kw_only=True, slots=True)
class Instructions:
    """The system texts to send, and one warning line per instruction file that was refused."""

    texts: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


def _chain(root: Path, directory: Path) -> list[Path]:
    chain = [directory]
    while chain[-1] != root and chain[-1].parent != chain[-1] and root in chain[-1].parents:
        chain.append(chain[-1].parent)
    return list(reversed(chain))


class _Collector:
    def __init__(self, location: Location, config: Config) -> None:
        self.location = location
        self.trusted = config.project_trusted
        self.files: dict[Path, None] = {}
        self.refused: list[str] = []

    def refuse(self, shown: object, why: str, *, hint: bool = True) -> None:
        line = f"refused instruction file {shown}: {why}"
        if hint:
            line += (
                "; only your own config can name files outside the project "
                f"(or trust the project: tether trust {self.location.root})"
            )
        self.refused.append(line)

    def add_folder(self, folder: Path) -> None:
        """The folder's ``AGENTS.md``, else its ``CLAUDE.md``."""
        agents = folder / AGENTS_FILE
        self.add_project(agents if os.path.lexists(agents) else folder / CLAUDE_FILE, may_leave=False)

    def add_own(self, path: Path) -> None:
        """A file the user named in their own config, or found in the config directory: taken as is."""
        if path.is_file():
            self.files.setdefault(path.resolve(), None)

    def add_project(self, path: Path, *, may_leave: bool) -> None:
        """A file reached through the project: it must stay inside once symlinks are followed.

        ``may_leave``: the user's own entry spelled a path outside the project (``../shared/*.md``); only a path
        spelled inside whose symlinks lead out is refused then.
        """
        if not os.path.lexists(path):
            return
        why = foreign(path)
        if why is not None:  # another user wrote it (in a shared directory): theirs, trusted project or not
            self.refuse(path, why, hint=False)
            return
        if self.trusted:
            self.add_own(path)
            return
        try:
            resolved = self.location.resolve(str(path))
        except PathError as exc:
            self.refuse(
                path,
                "it leads outside the project through a symlink"
                if exc.reason == "location_escape"
                else exc.message,
            )
            return
        if not resolved.internal and not may_leave:
            self.refuse(path, "it is outside the project")
            return
        if resolved.path.is_file():
            self.files.setdefault(resolved.path, None)

    def add_entry(self, item: Instruction) -> None:
        entry = os.path.expanduser(item.entry) if item.own else item.entry
        if os.path.isabs(entry):
            if item.own:
                self.add_own(Path(entry))
            else:
                self.add_project(Path(entry), may_leave=False)
            return
        root = self.location.root
        try:
            matches = sorted(root.glob(entry)) or [root / entry]
        except (ValueError, NotImplementedError) as exc:  # an empty or malformed glob
            self.refused.append(f"ignored instructions entry {item.entry!r} in {item.file}: {exc}")
            return
        for path in matches:
            self.add_project(path, may_leave=item.own)


def _project(location: Location, config: Config) -> Location:
    """The Location of the project root: ``location`` itself, or the config's root above it."""
    root = config.root
    if root is None or root == location.root or root not in location.root.parents:
        return location
    return Location(root)


def _read(path: Path) -> str | None:
    # O_NOFOLLOW: the path was resolved (no symlinks left); one swapped in since is not followed. O_NONBLOCK: a FIFO
    # named AGENTS.md must not hang the run.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            body = handle.read(_MAX_BYTES)
        except OSError:
            return None
    return body.decode("utf-8", errors="replace")


def load_instructions(
    location: Location,
    config: Config,
    *,
    directory: Path | None = None,
    user_dir: Path | None = None,
) -> Instructions:
    """The system texts for the instruction files (see the module docstring).

    Args:
        location: the Location the session runs in: the project root, or a directory inside it (``repo/pkg``).
        config: the merged config (its ``instructions`` entries, whether the project is trusted, and its ``root``:
            when the Location lies inside that root, the root is the project whose files are read).
        directory: the working directory inside the project (instruction files from the root down to it are read);
            defaults to the Location's working directory.
        user_dir: where the user's own ``AGENTS.md`` lives; defaults to the tether config directory.
    """
    project = _project(location, config)
    found = _Collector(project, config)
    found.add_own((user_dir or default_config_dir()) / AGENTS_FILE)
    for folder in _chain(project.root, directory or location.directory):
        found.add_folder(folder)
    for item in config.instructions:
        found.add_entry(item)
    texts: list[str] = []
    for path in found.files:
        body = _read(path)
        if body is not None:
            texts.append(f"Instructions from: {path}\n{body}")
    return Instructions(texts=tuple(texts), refused=tuple(found.refused))

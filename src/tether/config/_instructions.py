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
config (or a project the user trusted) may name files outside the project.

What the project's config names, and an ``AGENTS.md``/``CLAUDE.md`` whose symlinks lead to a file of another name,
must also pass the agent's ``read`` rules (the caller's ``readable``: this package never imports
``tether.permissions``), as the ``read`` tool's paths do: ``"instructions": [".env"]`` or ``sub/AGENTS.md -> ../.env``
would otherwise send what a ``read .env`` call is denied. A rule that denies or asks refuses the file (nobody is asked
while the prompt is built). A file another user owns, or others may write, is refused too (``_discover.foreign``).
A glob brings at most :data:`MAX_MATCHES` files and all texts together at most :data:`MAX_TOTAL_BYTES`; what is left
out is said in the refused lines, never dropped silently. This reads files: call it from a worker thread.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable
from pathlib import Path

from .._record import record
from ..errors import PathError
from ..location import Location
from ..paths import default_config_dir
from ._discover import foreign
from ._load import Config, Instruction

__all__ = [
    "AGENTS_FILE",
    "CLAUDE_FILE",
    "MAX_MATCHES",
    "MAX_TOTAL_BYTES",
    "Instructions",
    "Readable",
    "load_instructions",
]

AGENTS_FILE = "AGENTS.md"
CLAUDE_FILE = "CLAUDE.md"
MAX_MATCHES = 50
"""The most files one ``instructions`` glob brings (``"**/*"`` over a large tree would fill the prompt)."""
MAX_TOTAL_BYTES = 256 * 1024
"""The most bytes all instruction texts together bring; the files past it are left out, and said so."""
_MAX_SCANNED = 20 * MAX_MATCHES  # directory entries one glob may walk through before it stops

Readable = Callable[[str], bool]
"""Whether the agent's ``read`` rules allow a permission resource (a path relative to the project root, as the
``read`` tool asks it) without asking; the caller builds it from ``tether.permissions``."""


def _env_readable(resource: str) -> bool:
    """When the caller passes no ``readable``: the built-in agents' default ``read`` rules for dotenv files
    (``*.env`` and ``*.env.*`` ask, ``*.env.example`` is allowed; ``permissions._agents._ENV_READS``)."""
    name = resource.rsplit("/", 1)[-1]
    if name.endswith(".env.example"):
        return True
    return not (name.endswith(".env") or ".env." in name)


@record
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
    def __init__(self, location: Location, config: Config, readable: Readable) -> None:
        self.location = location
        self.trusted = config.project_trusted
        self.readable = readable
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
        self.add_project(
            agents if os.path.lexists(agents) else folder / CLAUDE_FILE, may_leave=False, check=False
        )

    def add_own(self, path: Path) -> None:
        """A file the user named in their own config, or found in the config directory: taken as is."""
        if path.is_file():
            self.files.setdefault(path.resolve(), None)

    def add_project(self, path: Path, *, may_leave: bool, check: bool) -> None:
        """A file reached through the project: it must stay inside once symlinks are followed.

        ``may_leave``: the user's own entry spelled a path outside the project (``../shared/*.md``); only a path
        spelled inside whose symlinks lead out is refused then. ``check``: the file must pass the ``read`` rules (an
        entry of the project's config); any file whose symlinks lead to another file name must as well.
        """
        if not os.path.lexists(path):
            return
        why = foreign(path)
        if why is not None:  # another user wrote it (in a shared directory): theirs, trusted project or not
            self.refuse(path, why, hint=False)
            return
        if self.trusted:
            real = path.resolve()
            if (check or real.name != path.name) and not self.may_read(path, self.resource(real)):
                return
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
        if (check or resolved.path.name != path.name) and not self.may_read(path, resolved.resource):
            return
        if resolved.path.is_file():
            self.files.setdefault(resolved.path, None)

    def resource(self, real: Path) -> str:
        """The ``read`` resource of a real path: relative to the project root, else the absolute path."""
        try:
            return self.location.resolve(str(real)).resource
        except PathError:
            return real.as_posix()

    def may_read(self, shown: Path, resource: str) -> bool:
        if self.readable(resource):
            return True
        self.refuse(
            shown,
            f"the read rules do not allow reading {resource!r} without asking "
            f"(see: tether permissions --explain read {resource})",
            hint=False,
        )
        return False

    def glob(self, root: Path, entry: str, item: Instruction) -> list[Path]:
        """The files ``entry`` matches under ``root``: at most :data:`MAX_MATCHES`, the rest said in a line.

        Raises:
            ValueError: an empty or malformed glob (``NotImplementedError`` for a non-relative one).
        """
        walked = root.glob(entry)
        scanned = itertools.islice(walked, _MAX_SCANNED)
        files = list(itertools.islice((path for path in scanned if not path.is_dir()), MAX_MATCHES + 1))
        kept = sorted(files[:MAX_MATCHES])
        if len(files) > MAX_MATCHES or next(walked, None) is not None:
            self.refused.append(
                f"instructions entry {item.entry!r} in {item.file} matches too many files; only the first "
                f"{len(kept)} are read (at most {MAX_MATCHES} per entry: name the files you mean)"
            )
        return kept

    def add_entry(self, item: Instruction) -> None:
        entry = os.path.expanduser(item.entry) if item.own else item.entry
        check = item.project
        if os.path.isabs(entry):
            if item.own and not item.project:
                self.add_own(Path(entry))
            else:
                self.add_project(Path(entry), may_leave=item.own, check=check)
            return
        root = self.location.root
        try:
            matches = self.glob(root, entry, item) or [root / entry]
        except (ValueError, NotImplementedError) as exc:  # an empty or malformed glob
            self.refused.append(f"ignored instructions entry {item.entry!r} in {item.file}: {exc}")
            return
        for path in matches:
            self.add_project(path, may_leave=item.own, check=check)


def _project(location: Location, config: Config) -> Location:
    """The Location of the project root: ``location`` itself, or the config's root above it."""
    root = config.root
    if root is None or root == location.root or root not in location.root.parents:
        return location
    return Location(root)


def _read(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file at ``path``; ``None`` when it cannot be read."""
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
            return handle.read(limit)
        except OSError:
            return None


def load_instructions(
    location: Location,
    config: Config,
    *,
    directory: Path | None = None,
    user_dir: Path | None = None,
    readable: Readable | None = None,
) -> Instructions:
    """The system texts for the instruction files (see the module docstring).

    Args:
        location: the Location the session runs in: the project root, or a directory inside it (``repo/pkg``).
        config: the merged config (its ``instructions`` entries, whether the project is trusted, and its ``root``:
            when the Location lies inside that root, the root is the project whose files are read).
        directory: the working directory inside the project (instruction files from the root down to it are read);
            defaults to the Location's working directory.
        user_dir: where the user's own ``AGENTS.md`` lives; defaults to the tether config directory.
        readable: whether the session's agent may read a permission resource without asking (its ``read`` rules,
            the built-in defaults included: ``Runtime.readable(agent)``); the files the project's config names, and
            those reached through a symlink to another file name, must pass it. Default: the built-in defaults for
            dotenv files only (``*.env`` and ``*.env.*`` ask).
    """
    project = _project(location, config)
    found = _Collector(project, config, readable or _env_readable)
    found.add_own((user_dir or default_config_dir()) / AGENTS_FILE)
    for folder in _chain(project.root, directory or location.directory):
        found.add_folder(folder)
    for item in config.instructions:
        found.add_entry(item)
    texts: list[str] = []
    budget = MAX_TOTAL_BYTES
    cut: Path | None = None
    left_out: list[Path] = []
    for path in found.files:
        if budget == 0:
            if os.path.isfile(path):
                left_out.append(path)
            continue
        body = _read(path, budget + 1)
        if body is None:
            continue
        if len(body) > budget:
            body, cut = body[:budget], path
        budget -= len(body)
        texts.append(f"Instructions from: {path}\n{body.decode('utf-8', errors='replace')}")
    if cut is not None:
        names = ", ".join(str(path) for path in left_out[:3])
        more = f" and {len(left_out) - 3} more" if len(left_out) > 3 else ""
        found.refused.append(
            f"instruction files bring at most {MAX_TOTAL_BYTES // 1024} KiB together: left out the end of {cut}"
            + (f" and all of {names}{more}" if left_out else "")
        )
    return Instructions(texts=tuple(texts), refused=tuple(found.refused))

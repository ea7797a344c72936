"""Path resolution for one Location: canonical paths, resources, symlink escapes and external directories.

This module decides *where* a path lands and *what* a permission request names. A Location has two directories,
as OpenCode's instance has ``directory`` and ``worktree``: the **working directory** (where a session runs, the
shell's cwd), against which relative paths are joined, and the **project root** (the discovered root above it),
which decides what is inside the project and what permission resources are relative to. From ``repo/pkg``,
``../README.md`` is ``README.md`` of the project (no external approval), ``x.txt`` is ``pkg/x.txt``, and a rule on
``pkg/secret*`` means the same from any directory of the project. It never reads file content and
never asks permissions (``_authorize`` does). It follows the canonical variant of the reference (b9a872b5, with the
1339248e input sanitising and the 3edda282 ``~`` expansion):

- the path is resolved against the Location and canonicalised with every symlink followed (also dangling ones, so
  a dangling link cannot smuggle a write outside);
- a lexically internal path whose canonical form leaves the real root is a ``location_escape``;
- classification uses the canonical path: a path spelled from outside that lands inside the root is internal (the
  write lands in the project, so no external approval is needed), and everything landing outside is external and
  carries the ``external_directory`` request parts.

Every file operation a tool performs afterwards must use :attr:`ResolvedPath.path` (the canonical path), never the
string the model sent: that is what makes the check and the action agree. Mutations go through ``_files``, which
reaches that path through directory descriptors without following symlinks, so a symlink swapped in after this
resolution is refused instead of followed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .._blocking import run_batched
from .._record import record
from ..errors import PathError, UsageError
from ._protected import extra_protected, protected_anchor

__all__ = ["ExternalDirectory", "Location", "PathKind", "ResolvedPath", "sanitize_path"]

PathKind = Literal["file", "directory"]


@record
class ExternalDirectory:
    """The parts of an ``external_directory`` request: the approved ``directory``, ``<dir>/*`` and the save pattern."""

    directory: str
    resource: str
    save: str


@record
class ResolvedPath:
    """A path resolved against a Location.

    Attributes:
        path: the canonical absolute path (every symlink followed); all file operations use it.
        original: the string the model sent, unchanged (used in messages).
        resource: the permission resource: the canonical path relative to the real root with ``/`` separators
            (``"."`` for the root) when internal, else the canonical absolute path with ``/`` separators.
        internal: whether the canonical path lies inside the real Location root.
        external: the ``external_directory`` request parts, ``None`` for internal paths.
        protected: the protected anchor when writing the path must always be asked (``protected_anchor``, with the
            Location's extra protected resources), else ``None``.
    """

    path: Path
    original: str
    resource: str
    internal: bool
    external: ExternalDirectory | None = None
    protected: str | None = None


def sanitize_path(path: str) -> str:
    """Strip the surrounding whitespace and trailing newlines some models add to paths."""
    return path.strip()


def _contains(parent: str, child: str) -> bool:
    if child == parent:
        return True
    prefix = parent if parent.endswith(os.sep) else parent + os.sep
    return child.startswith(prefix)


def _expand_home(path: str) -> str:
    # Only "~" and "~/..." expand; "~draft.md" and "~user" stay literal (a file may really be named like that).
    if path == "~" or path.startswith("~/") or (os.sep != "/" and path.startswith("~" + os.sep)):
        return str(Path.home()) + path[1:]
    return path


def _posix(path: str) -> str:
    return path.replace(os.sep, "/") if os.sep != "/" else path


_O_PATH: int | None = getattr(os, "O_PATH", None)
_PROC_FD = "/proc/self/fd/"
_fd_links = _O_PATH is not None and os.path.isdir(_PROC_FD)
"""Whether the kernel names what a descriptor opened (Linux's ``/proc/self/fd``): see :func:`_existing_real`."""


def _existing_real(path: str) -> str | None:
    """The canonical path of ``path`` when it exists, as the kernel resolved it, else ``None``.

    ``os.path.realpath`` walks the path in Python, one ``lstat`` (and a ``readlink`` per symlink) per component:
    ~12 µs for a file seven directories deep, on every call of a file tool. Opening the path with ``O_PATH`` (no
    read permission needed, nothing read, a FIFO does not block) follows every symlink in the kernel, and the
    descriptor's ``/proc/self/fd`` link names the file it reached: the same canonical path in three system calls
    (~2 µs). Whatever this cannot answer plainly (a missing or dangling path, a loop, a search permission refused,
    a file deleted meanwhile, no ``/proc``) is left to ``realpath``, which keeps the missing tail.
    """
    if not _fd_links or path.startswith("//"):  # POSIX leaves a leading "//" to the system: realpath keeps it
        return None
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)  # pyright: ignore[reportOptionalOperand]
    except OSError:
        return None
    try:
        real = os.readlink(f"{_PROC_FD}{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    if not real.startswith("/") or real.endswith(" (deleted)"):
        return None
    return real


class Location:
    """One project directory: resolves the paths tools receive.

    Args:
        root: the project root. It must exist and be a directory; symlinks in it are resolved. Containment (what is
            external) and permission resources are judged against it.
        directory: the working directory (absolute, or relative to ``root``), which must be the root or lie inside
            it once symlinks are followed (default: the root). Relative paths are joined with its real path; the
            shell starts in it.
        protected: further paths whose writes are always asked, like ``AGENTS.md``: the instruction files the config
            names (relative to the root, absolute or globs) and tether's own directories (ending with ``/``). See
            ``extra_protected``; it also reads the root's ``.git`` file, so build a Location off the event loop.

    Raises:
        UsageError: ``root`` or ``directory`` does not exist or is not a directory, or ``directory`` lies outside
            ``root``.
    """

    __slots__ = ("_base", "_directory", "_lexical_root", "_protected", "_root", "_root_str")

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        directory: str | os.PathLike[str] | None = None,
        protected: Iterable[str] = (),
    ) -> None:
        given = os.path.abspath(os.fspath(root))
        real = os.path.realpath(given)
        if not os.path.isdir(real):
            raise UsageError(f"Location root is not a directory: {given}")
        self._lexical_root = given
        self._root = Path(real)
        self._root_str = real
        if directory is None:
            base, real_directory = given, real
        else:
            spelled = os.path.abspath(os.path.join(given, os.fspath(directory)))
            real_directory = os.path.realpath(spelled)
            if not os.path.isdir(real_directory):
                raise UsageError(f"Working directory is not a directory: {spelled}")
            if not _contains(real, real_directory):
                raise UsageError(f"Working directory {spelled} is outside the project root {real}")
            # Joined from its real path, as the shell's cwd is: ``../x`` is the same file for bash and for read, and
            # a path spelled inside the project is lexically inside (a symlink leading out is still an escape).
            base = real_directory
        self._base = base
        self._directory = Path(real_directory)
        self._protected = extra_protected(real, protected)

    def __repr__(self) -> str:
        if self._directory == self._root:
            return f"Location({self._root_str!r})"
        return f"Location({self._root_str!r}, directory={str(self._directory)!r})"

    @property
    def root(self) -> Path:
        """The real (symlink-free) project root: containment and permission resources are relative to it."""
        return self._root

    @property
    def lexical_root(self) -> Path:
        """The root as given (absolute, possibly through symlinks); a path spelled below it is lexically inside."""
        return Path(self._lexical_root)

    @property
    def protected(self) -> frozenset[str]:
        """The extra protected resources (``extra_protected``): the sandbox holds those inside the project read-only."""
        return self._protected

    @property
    def directory(self) -> Path:
        """The real working directory (the root or inside it): relative paths and the shell start here."""
        return self._directory

    def display(self, path: Path) -> str:
        """An absolute canonical path as shown to the model (absolute, ``/`` separators)."""
        return _posix(str(path))

    async def aresolve(self, path: str, kind: PathKind = "file") -> ResolvedPath:
        """:meth:`resolve` in a worker thread (it stats the filesystem; law 9), batched with the other short
        filesystem work waiting at that moment (``tether._blocking``: one hand-off for a parallel step's calls).

        Raises:
            PathError: as :meth:`resolve`.
        """
        return await run_batched(self.resolve, path, kind)

    def resolve(self, path: str, kind: PathKind = "file") -> ResolvedPath:
        """Resolve ``path`` (relative to the working directory, absolute, or ``~``-prefixed).

        ``kind`` only selects the external approval boundary: for ``"directory"`` an existing directory is itself
        the boundary; otherwise the containing directory is.

        Raises:
            PathError: ``invalid`` (empty path or NUL byte), ``location_escape`` (a path inside the Location whose
                symlinks lead outside it) or ``non_directory_ancestor`` (a parent component is a file).
        """
        cleaned = sanitize_path(path)
        if not cleaned or "\0" in cleaned:
            raise PathError(f"Invalid path: {path!r}", reason="invalid", path=path)
        expanded = _expand_home(cleaned)
        absolute = os.path.normpath(os.path.join(self._base, expanded))
        lexically_internal = _contains(self._lexical_root, absolute) or _contains(self._root_str, absolute)
        # realpath (non-strict) follows every symlink it can, dangling ones included, and keeps the missing tail.
        real = _existing_real(absolute)
        canonical = os.path.realpath(absolute) if real is None else real
        existing = canonical
        while real is None and not os.path.lexists(existing):
            parent = os.path.dirname(existing)
            if parent == existing:
                raise PathError(
                    f"No existing parent directory for {cleaned}", reason="non_directory_ancestor", path=path
                )
            existing = parent
        is_missing = existing != canonical
        if is_missing and not os.path.isdir(existing):
            raise PathError(
                f"A parent of {cleaned} is not a directory: {_posix(existing)}",
                reason="non_directory_ancestor",
                path=path,
            )
        internal = _contains(self._root_str, canonical)
        if lexically_internal and not internal:
            raise PathError(
                f"{cleaned} resolves outside the project through a symlink ({_posix(canonical)}). "
                "Use the real path instead.",
                reason="location_escape",
                path=path,
            )
        if internal:
            # canonical is normalized and inside the (normalized) root: its text after the root's is relpath's answer
            root = self._root_str
            rel = "." if canonical == root else _posix(canonical[len(root.rstrip(os.sep)) + 1 :])
            return ResolvedPath(
                path=Path(canonical),
                original=path,
                resource=rel,
                internal=True,
                protected=protected_anchor(rel, self._protected),
            )
        if not is_missing and kind == "directory" and os.path.isdir(canonical):
            boundary = canonical
        elif is_missing:
            boundary = existing
        else:
            boundary = os.path.dirname(canonical)
        directory = _posix(boundary)
        resource = directory.rstrip("/") + "/*"
        project = _project_root(boundary)
        save = _posix(project).rstrip("/") + "/*" if project is not None else resource
        return ResolvedPath(
            path=Path(canonical),
            original=path,
            resource=_posix(canonical),
            internal=False,
            external=ExternalDirectory(directory=directory, resource=resource, save=save),
            protected=protected_anchor(_posix(canonical), self._protected),
        )


def _project_root(directory: str) -> str | None:
    """The nearest ancestor of ``directory`` (itself included) holding a ``.git`` entry, if any."""
    current = directory
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent

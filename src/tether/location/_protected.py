"""Protected paths: files that change what tether itself trusts, asked before any write whatever the rules say.

A model that may edit the project must not be able to widen its own permissions (law 11): writing
``.tether/tether.json`` with ``{"permission": "allow"}``, or ``.git/config`` with ``core.fsmonitor = "<command>"``
(run by the next ``git status``), turns an edit into more than an edit. So every tool that writes (write, edit,
apply_patch, bash redirects and path-taking commands) asks ``edit`` for a protected path, and only a rule that
*names* the protected path can allow it: a broad ``edit: *`` allow or a saved "always" for ``*`` does not.

Protected, matched on the path's components as a folding file system may see them (case-insensitively, so
``.GIT/config`` is ``.git/config``; without the code points HFS+ ignores; without NTFS's trailing dots and spaces,
and ``GIT~1`` as ``.git``), for relative resources and absolute paths alike:

- ``.tether/**`` (project config, plans, skills, tool files);
- the other folders skills are discovered from, at any depth (``builtins/_skills.PROJECT_DIRS``, pinned equal by a
  test): ``.opencode/skills/``, ``.opencode/skill/`` and ``.claude/skills/``: a skill planted there reaches every later
  session (its description is in the ``skill`` tool's, its body is what the model is told to follow);
- ``.git`` itself (as a file, ``gitdir: <dir>`` redirects git to a directory the model could fill) and everything in a
  git directory except its data (``objects/``, ``refs/``, ``logs/``, ``lfs/``, ``HEAD``, ``index``, ``packed-refs``,
  ...): ``config``, ``config.worktree``, ``commondir`` (another redirect), ``hooks/``, ``info/``, an in-progress
  rebase's todo, ...; the git directories of submodules and worktrees (``.git/modules/<name>/``,
  ``.git/worktrees/<name>/``) the same way; ``.gitmodules``;
- a file named ``config`` at any depth (an embedded git directory needs no ``.git`` in its path);
- the files the config and instruction loaders read: ``tether.json``, ``tether.jsonc``, ``opencode.json``,
  ``opencode.jsonc``, ``AGENTS.md`` and ``CLAUDE.md`` at any depth, plus the extra resources a Location is given
  (exact files, or directories as ``dir/`` prefixes).

Resources are canonical (``..`` and symlinks are resolved before a resource exists), so matching path text is enough.
Git's own writes under ``.git`` (commit, checkout, ...) are not file-tool writes and are not affected.
:func:`protected_anchor` is pure: it looks at path text only. :func:`extra_protected`, run once when a Location is
made, reads the root's ``.git`` file: a worktree or submodule checkout keeps its git directory elsewhere (``gitdir:
<dir>``, and that directory's ``commondir``), and those directories are protected as a whole.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable

from ..permissions import names_protected_path, wildcard_match

__all__ = ["PROTECTED_NAMES", "SKILL_DIRS", "extra_protected", "names_protected_path", "protected_anchor"]

PROTECTED_NAMES = frozenset(
    {
        "AGENTS.md",
        "CLAUDE.md",
        ".gitmodules",
        "config",
        "tether.json",
        "tether.jsonc",
        "opencode.json",
        "opencode.jsonc",
    }
)
"""File names protected at any depth (compared case-insensitively).

``config`` is there because any directory holding ``HEAD``, ``objects/`` and ``refs/`` is a git directory to git
(an embedded repository): ``cd evil && git status`` reads ``evil/config``, and its ``core.fsmonitor`` runs.
"""

SKILL_DIRS = (".opencode/skills", ".opencode/skill", ".claude/skills")
"""The skills folders protected besides ``.tether/skills`` (under ``.tether/``): the skills loader's other folders."""

_NAMES = frozenset(name.casefold() for name in PROTECTED_NAMES)
_PROTECTED_DIRS = frozenset({".tether"})
_SKILL_PAIRS = frozenset(tuple(d.casefold().split("/")) for d in SKILL_DIRS)
_SKILL_PARENTS = frozenset(parent for parent, _ in _SKILL_PAIRS)
_GIT_DATA = frozenset(
    name.casefold()
    for name in (
        "objects",
        "refs",
        "logs",
        "lfs",
        "HEAD",
        "ORIG_HEAD",
        "FETCH_HEAD",
        "index",
        "packed-refs",
        "COMMIT_EDITMSG",
        "description",
    )
)
"""What git stores as data in a git directory: writing it cannot make git run anything."""
_NESTED_GIT_DIRS = frozenset({"modules", "worktrees"})


# Code points HFS+ ignores in file names (as git's is_hfs_dotgit lists them): ".g\u200cit" is ".git" there.
_IGNORABLE = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF], None
)


def _fold(name: str) -> str:
    """How a file system that folds names may see ``name``: case-folded, HFS+-ignorable code points dropped,
    NTFS's trailing dots and spaces dropped, and NTFS's short name of ``.git`` read as ``.git``."""
    folded = name.translate(_IGNORABLE).casefold().rstrip(". ") or name
    return ".git" if folded == "git~1" else folded


def _anchor(parts: list[str], end: int) -> str:
    text = "/".join(parts[: end + 1])
    return f"{text}/" if end < len(parts) - 1 else text


def _git_end(folded: list[str], start: int) -> int | None:
    """The index of the anchoring component of a path inside a git directory whose entries start at ``start``."""
    name = folded[start]
    if name in _GIT_DATA:
        return None
    if name in _NESTED_GIT_DIRS and start + 2 < len(folded):  # .git/modules/<name>/ is a git directory too
        return _git_end(folded, start + 2)
    return start


def protected_anchor(resource: str, extra: Collection[str] = ()) -> str | None:
    """The protected prefix of ``resource``, or ``None`` when the path is not protected.

    The anchor is what a rule must spell out literally to allow the write: ``.git/hooks/`` for
    ``.git/hooks/pre-commit``, ``.tether/`` for ``.tether/tether.json``, the whole path for ``pkg/AGENTS.md``.

    Args:
        resource: a permission resource: a path relative to the Location with ``/`` separators, or an absolute path.
        extra: further resources to protect (see :func:`extra_protected`): exact resources, directories ending with
            ``/`` that protect everything under them, or wildcard patterns (``docs/*.md``) protecting each match.
    """
    path = resource.replace("\\", "/")
    if extra:
        best: str | None = None  # the longest directory prefix, so that the answer never depends on set order
        for entry in extra:
            if path == entry:
                return path
            if entry.endswith("/"):
                if path.startswith(entry) and (best is None or len(entry) > len(best)):
                    best = entry
            elif ("*" in entry or "?" in entry) and wildcard_match(path, entry):
                return path
        if best is not None:
            return best
    parts = path.split("/")
    folded = [_fold(part) for part in parts]
    last = len(parts) - 1
    for index, name in enumerate(folded):
        if name in _PROTECTED_DIRS:
            return _anchor(parts, index)
        if name in _SKILL_PARENTS and index < last and (name, folded[index + 1]) in _SKILL_PAIRS:
            return _anchor(parts, index + 1)
        if name == ".git":
            if index == last:
                return path
            end = _git_end(folded, index + 1)
            if end is not None:
                return _anchor(parts, end)
    if folded[last] in _NAMES:
        return path
    return None


def _resource(root: str, path: str) -> str:
    """``path`` as a permission resource of the Location at real ``root`` (as ``Location.resolve`` spells it)."""
    canonical = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    if canonical == root or canonical.startswith(root.rstrip(os.sep) + os.sep):
        return os.path.relpath(canonical, root).replace(os.sep, "/")
    return canonical.replace(os.sep, "/")


def _read_pointer(path: str, key: str) -> str | None:
    """The value of a git pointer file (``gitdir: <dir>``; ``commondir`` holds the bare path), if it is one."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(4096).strip()
    except OSError:
        return None
    if not key:
        return text or None
    prefix = f"{key}:"
    if not text.startswith(prefix):
        return None
    return text[len(prefix) :].strip() or None


def extra_protected(root: str, paths: Iterable[str] = ()) -> frozenset[str]:
    """The extra protected resources of the Location whose real root is ``root``. Reads the file system.

    - each of ``paths`` as a resource: a file (relative to ``root``, absolute or ``~/...``; the instruction files the
      config names), a directory when it ends with ``/`` (tether's data and config directories: everything in it),
      or a glob, kept as a wildcard pattern;
    - when ``<root>/.git`` is a file (a worktree or submodule checkout), the git directory it points at and that
      directory's ``commondir``, as ``dir/`` prefixes: everything in them is protected.
    """
    out: set[str] = set()
    for entry in paths:
        if "*" in entry or "?" in entry:
            out.add(entry.replace("\\", "/"))
        elif entry.endswith(("/", os.sep)):
            out.add(_resource(root, entry).rstrip("/") + "/")
        elif entry.strip():
            out.add(_resource(root, entry))
    dotgit = os.path.join(root, ".git")
    if os.path.isfile(dotgit):
        gitdir = _read_pointer(dotgit, "gitdir")
        if gitdir is not None:
            real = os.path.realpath(os.path.join(root, gitdir))
            out.add(_resource(root, real).rstrip("/") + "/")
            common = _read_pointer(os.path.join(real, "commondir"), "")
            if common is not None:
                out.add(_resource(root, os.path.join(real, common)).rstrip("/") + "/")
    return frozenset(out)

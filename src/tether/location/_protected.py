"""Protected paths: files that change what tether itself trusts, asked before any write whatever the rules say.

A model that may edit the project must not be able to widen its own permissions (law 11): writing
``.tether/tether.json`` with ``{"permission": "allow"}``, or ``.git/config`` with ``core.fsmonitor = "<command>"``
(run by the next ``git status``), turns an edit into more than an edit. So every tool that writes (write, edit,
apply_patch, bash redirects and path-taking commands) asks ``edit`` for a protected path, and only a rule that
*names* the protected path can allow it: a broad ``edit: *`` allow or a saved "always" for ``*`` does not.

Protected, matched on the path's components, case-insensitively (a case-insensitive file system writes
``.GIT/config`` to ``.git/config``), for relative resources and absolute paths alike:

- ``.tether/**`` (project config, plans, skills);
- ``.git`` itself (as a file, ``gitdir: <dir>`` redirects git to a directory the model could fill) and everything in a
  git directory except its data (``objects/``, ``refs/``, ``logs/``, ``lfs/``, ``HEAD``, ``index``, ``packed-refs``,
  ...): ``config``, ``config.worktree``, ``commondir`` (another redirect), ``hooks/``, ``info/``, an in-progress
  rebase's todo, ...; the git directories of submodules and worktrees (``.git/modules/<name>/``,
  ``.git/worktrees/<name>/``) the same way; ``.gitmodules``;
- the files the config and instruction loaders read: ``tether.json``, ``tether.jsonc``, ``opencode.json``,
  ``opencode.jsonc`` and ``AGENTS.md`` at any depth, plus the extra resources a Location is given (exact files, or
  directories as ``dir/`` prefixes).

Resources are canonical (``..`` and symlinks are resolved before a resource exists), so matching path text is enough.
Git's own writes under ``.git`` (commit, checkout, ...) are not file-tool writes and are not affected. This module is
pure: it looks at path text only and never touches the file system.
"""

from __future__ import annotations

from collections.abc import Collection

from ..permissions import names_protected_path

__all__ = ["PROTECTED_NAMES", "names_protected_path", "protected_anchor"]

PROTECTED_NAMES = frozenset(
    {"AGENTS.md", ".gitmodules", "tether.json", "tether.jsonc", "opencode.json", "opencode.jsonc"}
)
"""File names protected at any depth (compared case-insensitively)."""

_NAMES = frozenset(name.casefold() for name in PROTECTED_NAMES)
_PROTECTED_DIRS = frozenset({".tether"})
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
        extra: further resources to protect (instruction files named by the user's config): exact resources, or
            directories ending with ``/`` that protect everything under them.
    """
    path = resource.replace("\\", "/")
    for entry in extra:
        if path == entry:
            return path
        if entry.endswith("/") and path.startswith(entry):
            return entry
    parts = path.split("/")
    folded = [part.casefold() for part in parts]
    last = len(parts) - 1
    for index, name in enumerate(folded):
        if name in _PROTECTED_DIRS:
            return _anchor(parts, index)
        if name == ".git":
            if index == last:
                return path
            end = _git_end(folded, index + 1)
            if end is not None:
                return _anchor(parts, end)
    if folded[last] in _NAMES:
        return path
    return None

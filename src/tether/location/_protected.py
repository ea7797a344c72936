"""Protected paths: files that change what tether itself trusts, asked before any write whatever the rules say.

A model that may edit the project must not be able to widen its own permissions (law 11): writing
``.tether/tether.json`` with ``{"permission": "allow"}``, or ``.git/config`` with ``core.fsmonitor = "<command>"``
(run by the next ``git status``), turns an edit into more than an edit. So every tool that writes (write, edit,
apply_patch, bash redirects and path-taking commands) asks ``edit`` for a protected path, and only a rule that
*names* the protected path can allow it: a broad ``edit: *`` allow or a saved "always" for ``*`` does not.

Protected, matched on the path's components (relative resources and absolute paths alike):

- ``.tether/**`` (project config, plans, skills);
- ``.git/config``, ``.git/hooks/**``, ``.git/info/**`` (what git executes or trusts), ``.gitmodules``;
- the files the config and instruction loaders read: ``tether.json``, ``tether.jsonc``, ``opencode.json``,
  ``opencode.jsonc`` and ``AGENTS.md`` at any depth, plus the extra instruction paths a Location is given.

Git's own writes under ``.git`` (commit, checkout, ...) are not file-tool writes and are not affected. This module is
pure: it looks at path text only and never touches the file system.
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["PROTECTED_NAMES", "names_protected_path", "protected_anchor"]

PROTECTED_NAMES = frozenset(
    {"AGENTS.md", ".gitmodules", "tether.json", "tether.jsonc", "opencode.json", "opencode.jsonc"}
)
"""File names protected at any depth."""

_PROTECTED_DIRS = (".tether",)
_GIT_DIRS = ("hooks", "info")
_GIT_FILES = ("config",)
_WILDCARDS = "*?"


def protected_anchor(resource: str, extra: Collection[str] = ()) -> str | None:
    """The protected prefix of ``resource``, or ``None`` when the path is not protected.

    The anchor is what a rule must spell out literally to allow the write: ``.git/hooks/`` for
    ``.git/hooks/pre-commit``, ``.tether/`` for ``.tether/tether.json``, the whole path for ``pkg/AGENTS.md``.

    Args:
        resource: a permission resource: a path relative to the Location with ``/`` separators, or an absolute path.
        extra: further exact resources to protect (instruction files named by the user's config).
    """
    path = resource.replace("\\", "/")
    if path in extra:
        return path
    parts = path.split("/")
    for index, part in enumerate(parts):
        prefix = "/".join(parts[:index])
        lead = f"{prefix}/" if prefix else ""
        if part in _PROTECTED_DIRS and index < len(parts) - 1:
            return f"{lead}{part}/"
        if part == ".git" and index < len(parts) - 1:
            child = parts[index + 1]
            if child in _GIT_DIRS and index + 1 < len(parts) - 1:
                return f"{lead}.git/{child}/"
            if child in _GIT_FILES and index + 1 == len(parts) - 1:
                return f"{lead}.git/{child}"
            if child in _GIT_DIRS:  # the directory itself (mkdir .git/hooks, rm -r .git/hooks)
                return f"{lead}.git/{child}"
    if parts[-1] in PROTECTED_NAMES:
        return path
    if parts[-1] in _PROTECTED_DIRS:  # the directory itself
        return path
    return None


def names_protected_path(pattern: str, anchor: str) -> bool:
    """Whether a rule's resource ``pattern`` names the protected ``anchor`` literally (so it may allow the write).

    The pattern's literal prefix (up to its first wildcard) must contain the whole anchor: ``.git/hooks/*`` names
    ``.git/hooks/``; ``*``, ``.git/*`` and ``*/AGENTS.md`` do not.
    """
    pattern = pattern.replace("\\", "/")
    cut = min((i for i in (pattern.find(w) for w in _WILDCARDS) if i >= 0), default=len(pattern))
    return pattern[:cut].startswith(anchor)

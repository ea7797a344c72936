"""What an "always" reply saves, and whether a saved pattern is broad.

One definition for the service that saves the patterns and for every place that asks a person (the terminal prompt,
the MCP elicitation form, the inspector): what they show is exactly what is saved, and each treats a broad pattern
with the same care (the terminal refuses the one-letter ``a`` for it, the forms name it as broad).

A pattern is **broad** when it holds a wildcard (``*`` or ``?``) and its literal text before the first wildcard names
at most one thing: split on whitespace and ``/`` (``\\`` counts as ``/``), leaving out flags (words starting with
``-``), at most one word is left. So ``*``, ``*.py``, ``rm *``, ``git -C *``, ``python3 -c *``, ``/*``, ``~/*`` and
``https://*`` are broad: each approves every command of a program or everything under a root. So is a wildcard right
after a **runner**, a program and subcommand that run any command or image given to them (:data:`RUNNERS`:
``docker run *``, ``docker exec *``, ``kubectl exec *``, ``uv run *``, ``npm exec *``, ``nix run *``, ...): two words,
but ``docker run --privileged -v /:/host ...`` is root on the host and ``uv run rm -rf ~`` is ``rm``. ``git push *``,
``npm run *``, ``docker run alpine *`` (that image), ``/home/me/other-project/*``, ``https://docs.python.org/*`` and
exact texts (``.gitmodules``, ``rm -rf build``) are not.
"""

from __future__ import annotations

from .._regex import lazy
from ._types import PermissionRequest

__all__ = ["RUNNERS", "always_saves", "is_broad"]


_wildcard = lazy(r"[*?]")


_separators = lazy(r"[\s/]+")


_CONTAINERS = ("docker", "podman", "nerdctl")
_ENVIRONMENTS = (
    "uv",
    "poetry",
    "pdm",
    "hatch",
    "pipenv",
    "rye",
    "pixi",
    "conda",
    "mamba",
    "micromamba",
    "pipx",
)
RUNNERS: frozenset[tuple[str, ...]] = frozenset(
    {
        *((c, verb) for c in _CONTAINERS for verb in ("run", "exec", "create")),
        *(
            (c, group, verb)
            for c in _CONTAINERS
            for group in ("container", "compose")
            for verb in ("run", "exec")
        ),
        ("docker-compose", "run"),
        ("docker-compose", "exec"),
        ("kubectl", "exec"),
        ("kubectl", "run"),
        ("kubectl", "debug"),
        *((tool, "run") for tool in _ENVIRONMENTS),
        ("uv", "tool"),
        ("npm", "exec"),
        ("npm", "x"),
        ("pnpm", "exec"),
        ("pnpm", "dlx"),
        ("yarn", "exec"),
        ("yarn", "dlx"),
        ("bun", "x"),
        ("nix", "run"),
        ("nix", "shell"),
        ("nix", "develop"),
        ("go", "run"),
        ("deno", "run"),
        ("cargo", "install"),
        ("git", "submodule", "foreach"),
    }
)
"""Programs and subcommands that run whatever command, script or image follows them: a wildcard right after one is
as broad as one after a single word (flags aside)."""


def always_saves(request: PermissionRequest) -> tuple[str, ...]:
    """The patterns an "always" reply to ``request`` saves: its ``save`` patterns, or for a protected path its exact
    resources (empty: the reply acts as "once").

    A protected resource spelled with a wildcard character would save a pattern wider than the file asked about, so
    it is not saved.
    """
    if request.protected is None or not request.save:
        return tuple(request.save)
    return tuple(r for r in request.resources if _wildcard().search(r) is None)


def is_broad(pattern: str) -> bool:
    """Whether the saved ``pattern`` is broad: a wildcard after at most one word, or right after a runner (flags
    aside); see the module."""
    found = _wildcard().search(pattern)
    if found is None:
        return False
    literal = pattern[: found.start()].replace("\\", "/")
    words = [word for word in _separators().split(literal) if word and not word.startswith("-")]
    return len(words) <= 1 or tuple(words) in RUNNERS

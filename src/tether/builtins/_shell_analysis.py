"""What the analysis of a command string gives the permission gate, and the prefix table of its "always" patterns.

The result types (:class:`Analysis`, one :class:`SimpleCommand` per command that will run, one :class:`PathArg` per
path touched) and :data:`ARITY`, OpenCode's ``BashArity``: no parsing here (that is :mod:`._shell_parse`), so a
module that only names these types does not load tree-sitter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from .._record import record

__all__ = [
    "ARITY",
    "UNCERTAIN_PREFIX",
    "Analysis",
    "PathArg",
    "PathRole",
    "SimpleCommand",
    "always_pattern",
    "arity_prefix",
]


# --- the prefix table ("BashArity", permission/arity.ts) -----------------------------------------------------------

_ARITY_1 = "cat cd chmod chown cp echo env export grep kill killall ln ls mkdir mv ps pwd rm rmdir sleep source tail touch unset which"
_ARITY_2 = (
    "bazel brew bun cargo cdk cf cmake composer consul crictl deno docker eksctl firebase flyctl git go gradle helm "
    "heroku hugo ip kind kubectl kustomize make mc minikube mongosh mysql mvn ng npm nvm nx openssl pip pipenv pnpm "
    "poetry podman psql pulumi pyenv python rake rbenv redis-cli rustup serverless skaffold sls sst swift systemctl "
    "terraform tmux turbo ufw vault vercel volta wp yarn"
)
_ARITY_3 = (
    "aws az doctl gcloud gh sfdx",
    "bun run|bun x|cargo add|cargo run|consul kv|deno task|docker builder|docker compose|docker container|"
    "docker image|docker network|docker volume|eksctl create|git config|git remote|git stash|ip addr|ip link|ip netns|"
    "ip route|kind create|kubectl kustomize|kubectl rollout|mc admin|npm exec|npm init|npm run|npm view|openssl req|"
    "openssl x509|pnpm dlx|pnpm exec|pnpm run|podman container|podman image|pulumi stack|terraform workspace|"
    "vault auth|vault kv|yarn dlx|yarn run",
)

ARITY: dict[str, int] = {
    **dict.fromkeys(_ARITY_1.split(), 1),
    **dict.fromkeys(_ARITY_2.split(), 2),
    **dict.fromkeys(_ARITY_3[0].split(), 3),
    **dict.fromkeys(_ARITY_3[1].split("|"), 3),
}
"""Command prefix → how many leading tokens make up the "human command" (longest matching prefix wins)."""

_MAX_PREFIX_WORDS = max(key.count(" ") + 1 for key in ARITY)
# The first words of the longer prefixes: any other command is decided by its first word alone (no joins).
_LONGER_FIRST = frozenset(key.split(" ", 1)[0] for key in ARITY if " " in key)


def arity_prefix(tokens: Iterable[str]) -> tuple[str, ...]:
    """The leading tokens that name the command: the longest prefix in :data:`ARITY` decides how many (default 1).

    Flags are not skipped, as in the reference: ``git -C x status`` → ``("git", "-C")``.
    """
    words = tuple(tokens)
    if words and words[0] not in _LONGER_FIRST:
        return words[: ARITY.get(words[0], 1)]
    for size in range(min(len(words), _MAX_PREFIX_WORDS), 0, -1):
        arity = ARITY.get(" ".join(words[:size]))
        if arity is not None:
            return words[:arity]
    return words[:1]


def always_pattern(tokens: Iterable[str]) -> str | None:
    """The "always" pattern for a command: its :func:`arity_prefix` followed by ``" *"`` (``None`` without tokens)."""
    prefix = arity_prefix(tokens)
    return " ".join(prefix) + " *" if prefix else None


# --- results -------------------------------------------------------------------------------------------------------

PathRole = Literal["path", "directory"]

UNCERTAIN_PREFIX = "(uncertain) "
"""Starts the ``bash`` resource of text whose effect cannot be known statically: no narrow pattern matches it."""


@record
class SimpleCommand:
    """One simple command: its source ``text`` and its normalized ``forms``, each a ``bash`` resource.

    ``forms`` are the command as the shell will run it (quotes and escapes removed, a path reduced to its base name,
    each transparent wrapper stripped in turn: ``sudo nice rm -rf x`` gives ``nice rm -rf x`` and ``rm -rf x``), minus
    the ones equal to ``text``. ``save`` holds the "always" patterns (empty when the command is not known
    statically). ``changes_directory`` marks ``cd``-like commands, which ask no ``bash`` permission themselves.
    """

    text: str
    forms: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()
    name: str = ""
    save: tuple[str, ...] = ()
    changes_directory: bool = False
    name_pattern: tuple[str, str] | None = None
    """``(pattern, arguments)`` when the command word is a glob (``/bin/r? x``): the caller, which may look at the
    file system, adds a form per name the pattern matches there."""

    @property
    def resources(self) -> tuple[str, ...]:
        return () if self.changes_directory else (self.text, *self.forms)


@record
class PathArg:
    """An absolute, lexically normalised path a file command or redirection touches.

    ``role`` is ``"directory"`` when the path is a directory target (``cd x``); otherwise the path's own directory
    counts when it is an existing directory, else its parent. ``write`` is set when the command or redirection may
    create, change or delete it.
    """

    path: str
    role: PathRole
    source: str
    write: bool = False
    glob: bool = False
    """``path`` is a written glob pattern (unexpanded): it may match any name, a protected one included."""


@record
class Analysis:
    """The permission-relevant facts of one command string."""

    command: str
    commands: tuple[SimpleCommand, ...] = ()
    redirects: tuple[str, ...] = ()
    """One ``bash`` resource per file redirection (its text and, if different, its normalized ``OP TARGET``)."""
    paths: tuple[PathArg, ...] = ()
    opaque: str | None = None
    """Why the command could not be parsed (``"syntax"``), or ``None``."""
    uncertain: tuple[str, ...] = ()
    """Why some touched path cannot be known statically (then ask ``external_directory`` for
    :attr:`uncertain_paths_resource`); every reason of :attr:`unknown` is one too."""
    unknown: tuple[str, ...] = ()
    """Why what runs cannot be known statically (then the ``bash`` request holds an uncertain resource)."""
    empty: bool = False
    """The text holds nothing to run (only whitespace and comments)."""

    @property
    def uncertain_resource(self) -> str | None:
        """``(uncertain) <raw text>`` when the text is opaque or runs something unknown, else ``None``."""
        if self.opaque is None and not self.unknown:
            return None
        return UNCERTAIN_PREFIX + self.command.strip()

    @property
    def uncertain_paths_resource(self) -> str | None:
        """``(uncertain) <raw text>``, the ``external_directory`` resource when a path the command touches cannot be
        known statically (:attr:`uncertain`), else ``None``.

        Marked like :attr:`uncertain_resource`: the raw text alone would be matched by a directory's rule
        (``/tmp/*`` allows ``/tmp/x; python3 -c ...``), while only a rule starting with a wildcard matches this.
        """
        return UNCERTAIN_PREFIX + self.command.strip() if self.uncertain else None

    @property
    def uncertain_paths_save(self) -> tuple[str, ...]:
        """What an "always" reply to that request saves: the resource itself, or nothing (it acts as "once") when the
        text holds ``*`` or ``?``, which a saved pattern would read as wildcards (``cat src/*.py`` would approve
        ``cat src/; <anything>; .py``)."""
        resource = self.uncertain_paths_resource
        if resource is None or "*" in resource or "?" in resource:
            return ()
        return (resource,)

    @property
    def resources(self) -> tuple[str, ...]:
        """The ``bash`` resources: each simple command's text and forms, each redirect, the uncertain resource.

        The raw text stands in when none of these exist but the text is not empty (``x=1``, ``cd sub``): never an
        empty list for something that runs.
        """
        found = [r for c in self.commands for r in c.resources]
        found.extend(self.redirects)
        uncertain = self.uncertain_resource
        if uncertain is not None:
            found.append(uncertain)
        out = tuple(dict.fromkeys(found))
        return out or (() if self.empty else (self.command.strip(),))

    @property
    def save(self) -> tuple[str, ...]:
        """The "always" patterns: the certain commands' prefix patterns and the redirects' exact texts.

        Nothing is saved for an uncertain resource (an "always" reply acts as "once" for it), and nothing at all when
        the text cannot be parsed.
        """
        if self.opaque is not None:
            return ()
        found = [p for c in self.commands if not c.changes_directory for p in c.save]
        found.extend(self.redirects)
        out = tuple(dict.fromkeys(found))
        if out or self.unknown or self.empty or any(not c.changes_directory for c in self.commands):
            return out
        return (self.command.strip(),)

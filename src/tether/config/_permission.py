"""Turning the ``permission`` (and legacy ``tools``) config values into ordered rules.

Accepted shapes, as users write them in opencode.json::

    "permission": "allow"                                  -> *:* allow
    "permission": {"edit": "ask",                          -> edit:* ask
                   "bash": {"git *": "allow", "*": "ask"}} -> bash:"git *" allow, bash:* ask

Key order is rule order (the last matching rule wins). ``~``, ``~/...``, ``$HOME`` and ``$HOME/...`` at the start of a
pattern expand to the home directory. Anything else is a :class:`~tether.errors.ConfigError` naming the key path.

A key is an action, the name a tool asks under. The actions tether's own parts ask are :data:`BUILTIN_ACTIONS`; OpenCode's
keys that no tether tool asks yet are :data:`RESERVED_ACTIONS`. A key that names a tool asking another action is read
as that action (:data:`TOOL_ACTIONS`: ``write``, ``apply_patch``, OpenCode's older ``patch`` and ``multiedit`` ->
``edit``; ``ls`` -> ``list``), so ``"write": "deny"`` denies what the write tool does. Any other key is taken as
written: MCP tools ask under their own names (``github_create_issue``, ``github_*``) and plugin and project tools may
ask any action (``ctx.ask``), so no list of valid keys exists. Only a key that can be nothing but a misspelled built-in
action is refused, naming the right one (:func:`misspelled_permission`): another case or separator (``Edit``,
``externalDirectory``, ``external-directory``), two neighbouring letters swapped (``bsah``), one letter off in a name
of six letters or more (``external_directroy``; shorter names are one letter from real words: ``exit``, ``lint``),
Claude Code's ``Bash(git *)`` rule form, and the MCP resource tools' names (they ask ``read``, shared with files).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn, cast

from .._regex import lazy
from ..rules import Effect, Rule, is_effect
from ._json import KeyPath, clip

__all__ = [
    "BUILTIN_ACTIONS",
    "RESERVED_ACTIONS",
    "TOOL_ACTIONS",
    "Fail",
    "expand_home",
    "kind_of",
    "misspelled_permission",
    "parse_tools",
    "permission_action",
    "rules_from_value",
]

Fail = Callable[[str, KeyPath], NoReturn]
"""Raises a ConfigError for ``message`` at a key path (the loader binds the file and line lookup)."""

BUILTIN_ACTIONS = frozenset(
    {
        "bash",
        "doom_loop",
        "edit",
        "escalate",
        "execute",
        "external_directory",
        "glob",
        "grep",
        "list",
        "network",
        "question",
        "read",
        "skill",
        "task",
        "todoread",
        "todowrite",
        "webfetch",
        "webfetch_private",
    }
)
"""The actions tether's built-in tools and its session ask, or show a tool under (``execute``: Code Mode's tool);
docs/permissions.md, *Permission keys*, lists them. A test calls every built-in tool and checks both lists."""

RESERVED_ACTIONS = frozenset({"lsp", "plan_enter", "plan_exit", "websearch"})
"""OpenCode's permission keys that no tether tool asks: accepted, so a shared config loads, and said by ``--explain``."""

TOOL_ACTIONS: Mapping[str, str] = {
    "apply_patch": "edit",
    "ls": "list",
    "multiedit": "edit",
    "patch": "edit",
    "write": "edit",
}
"""Tool names written as permission keys, and the action that tool asks: the key is read as that action."""

_SHARED_TOOLS = {
    "list_mcp_resources": "read",
    "read_mcp_resource": "read",
}
"""Tools that ask an action shared with others: their name as a key is refused, with the rule that does it."""

_KNOWN = (*sorted(BUILTIN_ACTIONS | RESERVED_ACTIONS), *sorted(TOOL_ACTIONS))
# A reserved key's typo changes nothing (no tool asks it), and ``plan_edit`` may be the MCP server plan's tool edit.
_FUZZY = tuple(k for k in (*sorted(BUILTIN_ACTIONS), *sorted(TOOL_ACTIONS)) if len(k) >= 6)


_claude_form = lazy(r"([A-Za-z_]+)\((.*)\)", re.DOTALL)


_camel = lazy(r"(?<=[a-z0-9])(?=[A-Z])")


def permission_action(key: str) -> str:
    """The action a permission key stands for: a tool name's action (``write`` -> ``edit``), else the key itself."""
    return TOOL_ACTIONS.get(key, key)


def misspelled_permission(key: str) -> str | None:
    """Why ``key`` cannot be meant as written, naming the key that was meant; ``None`` for any other key.

    Refused: a built-in action in another case or with other separators (``Edit``, ``externalDirectory``), two
    neighbouring letters swapped (``bsah``), one letter off in a name of six or more letters
    (``external_directroy``), Claude Code's ``Tool(pattern)`` form, and the MCP resource tools' names (they ask
    ``read``, shared with files). Anything else may be an MCP tool's name or a plugin's action and is taken as written;
    one letter off is not checked against names shorter than six letters (``exit``, ``lint`` are words) or against
    :data:`RESERVED_ACTIONS` (no tool asks them, and ``plan_edit`` may be an MCP tool).
    """
    if key in BUILTIN_ACTIONS or key in RESERVED_ACTIONS or key in TOOL_ACTIONS:
        return None
    shown = json.dumps(clip(key))
    if key in _SHARED_TOOLS:
        return (
            f'{shown} is a tool that asks "{_SHARED_TOOLS[key]}" with the resource mcp:<server>:<uri>, as file reads '
            f'do with a path; write "read": {{"mcp:*": "deny"}} (or "mcp:<server>:*") instead'
        )
    claude = _claude_form().fullmatch(key)
    if claude is not None:
        meant = _meant(claude[1])
        if meant is not None:
            return (
                f"{shown} is Claude Code's rule form; tether writes the pattern under the action: "
                f'"{permission_action(meant)}": {{{json.dumps(clip(claude[2]) or "*")}: "allow" | "ask" | "deny"}}'
            )
    meant = None if "*" in key or "?" in key else _meant(key)
    if meant is None:
        return None
    action = permission_action(meant)
    hint = f' ("{meant}" is read as "{action}")' if action != meant else ""
    return f'unknown permission {shown}; did you mean "{action}"?{hint}'


def _meant(key: str) -> str | None:
    """The known key that ``key`` misspells, if one is that close (see :func:`misspelled_permission`)."""
    if len(key) > 2 * max(map(len, _KNOWN)):
        return None
    lower = key.lower()
    folded = {lower, lower.replace("-", "_").replace(" ", "_"), _camel().sub("_", key).lower()}
    for known in _KNOWN:
        if known in folded or _swapped(lower, known):
            return known
    for known in _FUZZY:
        if _one_letter_off(lower, known):
            return known
    return None


def _swapped(key: str, known: str) -> bool:
    """``key`` is ``known`` with two neighbouring letters swapped."""
    if len(key) != len(known) or key == known:
        return False
    diff = [i for i, (a, b) in enumerate(zip(key, known, strict=True)) if a != b]
    return (
        len(diff) == 2
        and diff[1] == diff[0] + 1
        and key[diff[0]] == known[diff[1]]
        and key[diff[1]] == known[diff[0]]
    )


def _one_letter_off(key: str, known: str) -> bool:
    """``key`` is ``known`` with one letter changed, added or left out; an added ``_`` does not count (an MCP tool
    of a server named like the first part: ``todo_read`` is the server ``todo``'s tool ``read``)."""
    if len(key) == len(known):
        return sum(a != b for a, b in zip(key, known, strict=True)) == 1
    if len(key) == len(known) + 1:
        longer, shorter = key, known
    elif len(key) + 1 == len(known):
        longer, shorter = known, key
    else:
        return False
    index = next((i for i, (a, b) in enumerate(zip(shorter, longer, strict=False)) if a != b), len(shorter))
    if longer[index + 1 :] != shorter[index:]:
        return False
    return not (longer is key and key[index] == "_")


def expand_home(pattern: str) -> str:
    """Expand a leading ``~`` or ``$HOME`` (alone or followed by ``/``) to the home directory."""
    for prefix in ("~", "$HOME"):
        if pattern == prefix:
            return Path.home().as_posix()
        if pattern.startswith(prefix + "/"):
            return Path.home().as_posix() + pattern[len(prefix) :]
    return pattern


def _effect(value: object, path: KeyPath, fail: Fail) -> Effect:
    if is_effect(value):
        return value
    shown = f"{value!r}" if isinstance(value, str) else f"a {kind_of(value)}"
    fail(f'unknown effect {shown}; expected "allow", "ask" or "deny"', path)


def kind_of(value: object) -> str:
    """The JSON kind of ``value``, for messages: ``list``, ``null``, ``number``, ``boolean``, ``object``, ``string``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return "string"


def rules_from_value(value: object, path: KeyPath, fail: Fail) -> tuple[Rule, ...]:
    """Parse one ``permission`` value found at ``path``.

    Raises:
        ConfigError: (through ``fail``) an unknown effect or a malformed shape, naming the offending key path.
    """
    if isinstance(value, str):
        return (Rule("*", "*", _effect(value, path, fail)),)
    if not isinstance(value, dict):
        fail(
            f'expected "allow", "ask", "deny" or an object of permission: effect, got a {kind_of(value)}',
            path,
        )
    rules: list[Rule] = []
    for key, spec in cast(Mapping[str, Any], value).items():
        at = (*path, key)
        if not key:
            fail("a permission name cannot be empty", at)
        problem = misspelled_permission(key)
        if problem is not None:
            fail(problem, at)
        action = permission_action(key)
        if isinstance(spec, dict):
            for pattern, effect in cast(Mapping[str, Any], spec).items():
                if not pattern:
                    fail('a pattern cannot be empty; use "*" for everything', (*at, pattern))
                rules.append(Rule(action, expand_home(pattern), _effect(effect, (*at, pattern), fail)))
        elif isinstance(spec, str):
            rules.append(Rule(action, "*", _effect(spec, at, fail)))
        else:
            fail(
                f'expected "allow", "ask", "deny" or an object of pattern: effect, got a {kind_of(spec)}',
                at,
            )
    return tuple(rules)


def parse_tools(value: object, path: KeyPath, fail: Fail) -> tuple[Rule, ...]:
    """Parse the legacy ``tools`` map ``{name: bool}`` into allow/deny rules (a tool name is read as the action its
    tool asks, as in ``permission``: ``write``, ``patch``, ``apply_patch``, ``multiedit`` -> ``edit``).

    Raises:
        ConfigError: (through ``fail``) the value is not an object of booleans.
    """
    if not isinstance(value, dict):
        fail(f"expected an object of tool name: true/false, got a {kind_of(value)}", path)
    rules: list[Rule] = []
    for name, enabled in cast(Mapping[str, Any], value).items():
        if not isinstance(enabled, bool):
            fail(f"expected true or false, got a {kind_of(enabled)}", (*path, name))
        problem = misspelled_permission(name)
        if problem is not None:
            fail(problem, (*path, name))
        rules.append(Rule(permission_action(name), "*", "allow" if enabled else "deny"))
    return tuple(rules)

"""Turning the ``permission`` (and legacy ``tools``) config values into ordered rules.

Accepted shapes, as users write them in opencode.json::

    "permission": "allow"                                  -> *:* allow
    "permission": {"edit": "ask",                          -> edit:* ask
                   "bash": {"git *": "allow", "*": "ask"}} -> bash:"git *" allow, bash:* ask

Key order is rule order (the last matching rule wins). ``~``, ``~/...``, ``$HOME`` and ``$HOME/...`` at the start of a
pattern expand to the home directory. Anything else is a :class:`~tether.errors.ConfigError` naming the key path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn, cast

from ..rules import Effect, Rule, is_effect
from ._json import KeyPath

__all__ = ["Fail", "expand_home", "kind_of", "parse_tools", "rules_from_value"]

Fail = Callable[[str, KeyPath], NoReturn]
"""Raises a ConfigError for ``message`` at a key path (the loader binds the file and line lookup)."""

_EDIT_TOOLS = frozenset({"edit", "write", "patch", "apply_patch", "multiedit"})


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
    for action, spec in cast(Mapping[str, Any], value).items():
        at = (*path, action)
        if not action:
            fail("a permission name cannot be empty", at)
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
    """Parse the legacy ``tools`` map ``{name: bool}`` into allow/deny rules (write/edit/patch map to ``edit``).

    Raises:
        ConfigError: (through ``fail``) the value is not an object of booleans.
    """
    if not isinstance(value, dict):
        fail(f"expected an object of tool name: true/false, got a {kind_of(value)}", path)
    rules: list[Rule] = []
    for name, enabled in cast(Mapping[str, Any], value).items():
        if not isinstance(enabled, bool):
            fail(f"expected true or false, got a {kind_of(enabled)}", (*path, name))
        action = "edit" if name in _EDIT_TOOLS else name
        rules.append(Rule(action, "*", "allow" if enabled else "deny"))
    return tuple(rules)

"""The permission rule: one :class:`Rule`, one :data:`Effect`, one "last matching rule wins" (:func:`last_match`).

A rule is ``(action, resource, effect)``: ``action`` and ``resource`` are wildcard patterns (``tether._wildcard``),
``effect`` is ``allow``, ``ask`` or ``deny``. Every package that reads rules uses this one shape: ``tools`` for
catalog visibility, ``config`` when it turns a config file into rules, ``session`` for a session's own rules and
``permissions`` to decide. It lives here, below all of them like the wildcard matcher, because ``tools`` must not
import ``permissions`` and ``config`` must not either. ``tether.permissions`` re-exports :class:`Rule` and
:data:`Effect`, the names users see.

What is deliberately not here: evaluation across labelled rulesets, the compiled index, saved approvals and protected
paths (``tether.permissions``), and parsing rules out of untrusted text (each boundary checks its own input with
:func:`is_effect` and reports errors in its own terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeGuard

from ._record import record
from ._wildcard import match

__all__ = ["EFFECTS", "Effect", "Rule", "is_effect", "last_match"]

Effect = Literal["allow", "ask", "deny"]

EFFECTS: tuple[Effect, ...] = ("allow", "ask", "deny")
"""Every :data:`Effect`, in the order messages list them."""


@record(kw_only=False)
class Rule:
    """``(action, resource, effect)``; ``action`` and ``resource`` are wildcard patterns. Last matching rule wins."""

    action: str
    resource: str
    effect: Effect


def is_effect(value: object) -> TypeGuard[Effect]:
    """Whether ``value`` is one of :data:`EFFECTS` (for checking rules that come from outside the program)."""
    return value in EFFECTS


def last_match(rules: Sequence[Rule], action: str, resource: str | None = None) -> int:
    """The index of the last rule whose action pattern matches ``action``, or -1.

    With ``resource``, the rule's resource pattern must match it as well (the reference scan behind every permission
    decision; ``tether.permissions.Ruleset`` indexes give the same answers faster). Without it, only the action is
    compared: catalog visibility asks which rule is the last one about a tool at all.
    """
    if resource is None:
        for i in range(len(rules) - 1, -1, -1):
            if match(action, rules[i].action):
                return i
        return -1
    for i in range(len(rules) - 1, -1, -1):
        rule = rules[i]
        if match(action, rule.action) and match(resource, rule.resource):
            return i
    return -1

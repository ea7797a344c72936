"""Rule evaluation: the deciding rule for one resource, and the decision for a whole request.

Pure functions over rules; no I/O, no service state. The service (``_service.py``) gathers the rulesets and saved
approvals and calls :func:`evaluate_request`; leaves never call these directly, they ask the service (law 4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, cast

from .._record import record
from .._wildcard import match as wildcard_match
from ..errors import UsageError
from ..rules import Effect, Rule, last_match
from ..tools.internal import Reply, Verdict
from ._ruleset import Ruleset

__all__ = [
    "DEFAULT_SOURCE",
    "Decision",
    "Verdict",
    "evaluate",
    "evaluate_request",
    "explain",
    "names_protected_path",
    "rules_for_action",
    "tightened",
]

DEFAULT_SOURCE = "default"
"""The source reported when no rule matched and the fallback ``ask`` decided."""

SAVED_SOURCE = "saved"
"""The source reported for saved approvals passed as a plain sequence."""

_PLAIN_SOURCE = "config"
"""The source reported for rules passed as a plain sequence rather than a labelled :class:`Ruleset`."""

PROTECTED_SOURCE = "protected"
"""The source reported when a protected path asks although a broad rule (or a deny it overrode) matched."""

_WILDCARDS = "*?"


def names_protected_path(pattern: str, anchor: str) -> bool:
    """Whether a rule's resource ``pattern`` names the protected ``anchor`` literally (so it may allow the write).

    The pattern's literal prefix (up to its first wildcard) must contain the whole anchor: ``.git/hooks/*`` names
    ``.git/hooks/``; ``*``, ``.git/*`` and ``*/AGENTS.md`` do not.
    """
    pattern = pattern.replace("\\", "/")
    cut = min((i for i in (pattern.find(w) for w in _WILDCARDS) if i >= 0), default=len(pattern))
    return pattern[:cut].startswith(anchor)


@record
class Decision:
    """The outcome of evaluating a request, with one :class:`Verdict` per resource, in request order.

    ``reply`` is set when a person's reply (``once`` / ``always``) turned an ``ask`` into this ``allow``; the verdicts
    then still say which rules asked.
    """

    action: str
    effect: Effect
    verdicts: tuple[Verdict, ...]
    reply: Reply | None = None

    @property
    def deciding(self) -> tuple[Verdict, ...]:
        """The verdicts that produced ``effect`` (for ``allow``, all of them)."""
        return tuple(v for v in self.verdicts if v.effect == self.effect) or self.verdicts

    def to_json(self) -> dict[str, Any]:
        """A compact JSON form, for storing with the tool call ("which rule decided")."""
        out: dict[str, Any] = {
            "action": self.action,
            "effect": self.effect,
            "verdicts": [v.to_json() for v in self.verdicts],
        }
        if self.reply is not None:
            out["reply"] = self.reply
        return out


_Lookup = tuple[Callable[[str], int], Sequence[Rule], str, bool]
_STRICTNESS: dict[Effect, int] = {"allow": 0, "ask": 1, "deny": 2}


def _lookups(action: str, rulesets: Sequence[Sequence[Rule]]) -> list[_Lookup]:
    """Per ruleset, newest first: a ``resource -> index`` finder for ``action``, the rules, their source, and
    whether the ruleset is tighten-only."""
    out: list[_Lookup] = []
    for rules in reversed(rulesets):
        if not rules:
            continue
        if isinstance(rules, Ruleset):
            out.append((rules.finder(action), rules.rules, rules.source, rules.tighten_only))
        else:
            out.append((partial(last_match, rules, action), rules, _PLAIN_SOURCE, False))
    return out


def _first(lookups: list[_Lookup], resource: str) -> tuple[Rule, str] | None:
    """The last rule matching ``resource`` (``/`` only) across the rulesets behind ``lookups``, with its source.

    Tighten-only rulesets decide only where they are stricter: the newest ordinary match (or the default ``ask`` when
    there is none) is compared with the newest tighten-only match, and the stricter one decides.
    """
    base: tuple[Rule, str] | None = None
    tight: tuple[Rule, str] | None = None
    for find, rules, source, tighten_only in lookups:
        if tighten_only:
            if tight is None and (i := find(resource)) >= 0:
                tight = rules[i], source
        elif base is None and (i := find(resource)) >= 0:
            base = rules[i], source
    if tight is None:
        return base
    base_effect: Effect = base[0].effect if base is not None else "ask"
    return tight if _STRICTNESS[tight[0].effect] > _STRICTNESS[base_effect] else base


def evaluate(action: str, resource: str, *rulesets: Sequence[Rule]) -> Rule:
    """Return the deciding rule: the last rule, across ``rulesets`` in order, matching ``action`` and ``resource``.

    With no match the result is ``Rule(action, "*", "ask")``. Pass :class:`Ruleset` values to use their compiled
    index; plain sequences are scanned rule by rule with the same result.
    """
    found = _first(_lookups(action, rulesets), resource.replace("\\", "/"))
    return found[0] if found is not None else Rule(action, "*", "ask")


def _configured_rulesets(configured: Sequence[Rule] | Sequence[Sequence[Rule]]) -> Sequence[Sequence[Rule]]:
    if isinstance(configured, Ruleset) or (configured and isinstance(configured[0], Rule)):
        return (cast("Sequence[Rule]", configured),)
    return cast("Sequence[Sequence[Rule]]", configured)


def rules_for_action(action: str, configured: Sequence[Rule] | Sequence[Sequence[Rule]]) -> tuple[Rule, ...]:
    """Every configured rule whose action pattern matches ``action`` (what a ``BlockedError`` carries)."""
    return tuple(
        rule
        for rules in _configured_rulesets(configured)
        for rule in rules
        if wildcard_match(action, rule.action)
    )


def _protected_hit(
    action: str, resource: str, anchor: str, rulesets: Sequence[Sequence[Rule]], hit: tuple[Rule, str] | None
) -> tuple[Rule, str] | None:
    """The deciding rule for a write to a protected path, given the ordinary deciding rule ``hit``.

    Only a rule naming ``anchor`` may allow: a broad allow that decided is skipped, and the newest older match that
    is not a broad allow decides instead. A naming allow allows, an ``ask`` asks, and a deny that the broad allow had
    overridden (or no match at all) asks, as the protected source. Rare, so a plain scan.
    """
    if hit is None or hit[0].effect != "allow" or names_protected_path(hit[0].resource, anchor):
        return hit
    for rules in reversed(rulesets):
        source = rules.source if isinstance(rules, Ruleset) else _PLAIN_SOURCE
        for rule in reversed(rules):
            if not (wildcard_match(action, rule.action) and wildcard_match(resource, rule.resource)):
                continue
            if rule.effect == "allow" and not names_protected_path(rule.resource, anchor):
                continue
            if rule.effect != "deny":
                return rule, source
            return Rule(action, anchor, "ask"), PROTECTED_SOURCE
    return Rule(action, anchor, "ask"), PROTECTED_SOURCE


def evaluate_request(
    action: str,
    resources: Sequence[str],
    configured: Sequence[Rule] | Sequence[Sequence[Rule]],
    saved: Sequence[Rule] = (),
    *,
    protected: str | None = None,
) -> Decision:
    """Decide a request for ``action`` on every one of ``resources``.

    1. If any resource is denied by the ``configured`` rules alone, the request is denied: a saved approval never
       overrides a configured deny.
    2. Otherwise each resource is evaluated against ``configured`` followed by the ``saved`` approvals (allow rules):
       any ``deny`` denies, else any ``ask`` asks, else the request is allowed.

    With ``protected`` (the anchor of a protected path, see :class:`PermissionRequest`), only rules and saved
    approvals whose resource names the anchor (:func:`names_protected_path`) can allow: a broad allow asks instead.

    Args:
        action: the permission name (``"read"``, ``"bash"``, ...).
        resources: the concrete things touched; at least one.
        configured: one ruleset, or the ordered rulesets (agent, config, session, ...); :class:`Ruleset` values report
            their ``source`` in the verdicts.
        saved: the project's saved approvals as allow rules.
        protected: the protected anchor of every resource, or ``None`` for an ordinary request.

    Raises:
        UsageError: ``resources`` is empty (or a bare string), or a saved rule is not an ``allow`` rule.
    """
    if isinstance(resources, str):
        raise UsageError("evaluate_request takes a sequence of resources, not a single string")
    if not resources:
        raise UsageError(
            f"A permission request for {action!r} needs at least one resource; nothing was evaluated"
        )
    for rule in saved:
        if rule.effect != "allow":
            raise UsageError(f"Saved approvals are allow rules; got {rule}")
    rulesets = _configured_rulesets(configured)
    normalized = [r.replace("\\", "/") if "\\" in r else r for r in resources]
    lookups = _lookups(action, rulesets)
    found = [_first(lookups, r) for r in normalized]
    denied = any(hit is not None and hit[0].effect == "deny" for hit in found)
    if protected is not None and not denied:
        found = [
            _protected_hit(action, r, protected, rulesets, hit)
            for r, hit in zip(normalized, found, strict=True)
        ]
        saved = [rule for rule in saved if names_protected_path(rule.resource, protected)]
    if saved and not denied:
        saved_source = saved.source if isinstance(saved, Ruleset) else SAVED_SOURCE
        saved_lookups = _lookups(action, (saved,))
        for n, resource in enumerate(normalized):
            hit = _first(saved_lookups, resource)
            if hit is not None:
                found[n] = (hit[0], saved_source)
    verdicts = tuple(
        Verdict(resource=resource, rule=hit[0], source=hit[1])
        if hit is not None
        else Verdict(resource=resource, rule=Rule(action, "*", "ask"), source=DEFAULT_SOURCE)
        for resource, hit in zip(resources, found, strict=True)
    )
    effect: Effect = "allow"
    if denied:
        effect = "deny"
    elif any(v.rule.effect == "ask" for v in verdicts):
        effect = "ask"
    return Decision(action=action, effect=effect, verdicts=verdicts)


def tightened(decision: Decision, caller: Decision, label: str) -> Decision:
    """``decision`` made at least as strict as ``caller``'s decision on the same resources, resource by resource.

    Where the caller's verdict is stricter (``deny`` over ``ask`` over ``allow``) it replaces the own one, its source
    prefixed with ``label`` (``calling agent plan``), so a denial names the caller's rule. A subagent's request is
    decided so against each calling agent's rules (``ResolvedRules.callers``): tighten-only, never looser.
    """
    verdicts: list[Verdict] = []
    changed = False
    for own, other in zip(decision.verdicts, caller.verdicts, strict=True):
        if _STRICTNESS[other.effect] > _STRICTNESS[own.effect]:
            own = Verdict(resource=own.resource, rule=other.rule, source=f"{label}: {other.source}")
            changed = True
        verdicts.append(own)
    if not changed:
        return decision
    effect: Effect = max((v.effect for v in verdicts), key=_STRICTNESS.__getitem__)
    return Decision(action=decision.action, effect=effect, verdicts=tuple(verdicts))


def explain(decision: Decision) -> str:
    """Say, one line per resource, which rule decided it and where that rule came from.

    Example::

        bash: deny
          rm -rf build: deny by bash "rm *" (config)
          ls: allow by * "*" (agent)
    """
    head = f"{decision.action}: {decision.effect}"
    if decision.reply is not None:
        head += f" (user replied {decision.reply})"
    lines = [head]
    for v in decision.verdicts:
        rule = v.rule
        if v.source == DEFAULT_SOURCE:
            lines.append(f"  {v.resource}: {rule.effect} (no rule matched; default)")
        elif v.source == PROTECTED_SOURCE:
            lines.append(
                f"  {v.resource}: {rule.effect} (protected path {rule.resource}: only a rule naming it can allow)"
            )
        else:
            lines.append(f'  {v.resource}: {rule.effect} by {rule.action} "{rule.resource}" ({v.source})')
    return "\n".join(lines)

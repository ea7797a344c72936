"""Labelled, precompiled rulesets: the fast path behind :func:`evaluate`.

A :class:`Ruleset` is an ordered tuple of rules with a ``source`` label (``"agent"``, ``"config"``, ``"session"``,
``"saved"``, ...) so that a decision can say where its deciding rule came from. It is immutable, so it compiles itself
once per action it is asked about and keeps that index for its lifetime:

* only rules whose action pattern matches the action are kept, in order;
* rules before the last ``*`` resource rule can never be the last match, so they are dropped;
* a resource pattern repeated later shadows its earlier copies;
* literal patterns go into a dict; wildcard patterns become one alternation, newest rule first, so the regex engine
  (in C) returns the newest matching rule and ``lastindex`` names it.

The index is a cache in the strict sense: :func:`last_match_naive` gives the same answers and the property tests hold
the two together.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

from .._wildcard import _compile as _compile_wildcard  # pyright: ignore[reportPrivateUsage]
from .._wildcard import match as wildcard_match
from ._types import Rule

__all__ = ["Ruleset", "last_match_naive"]

# Past this many distinct actions an index is rebuilt on demand rather than kept; actions are tool names, so a real
# ruleset never gets near it.
_MAX_ACTIONS = 512

_Finder = Callable[[str], int]


def _never(_resource: str) -> int:
    return -1


def _is_literal(pattern: str) -> bool:
    return "*" not in pattern and "?" not in pattern


def _build(rules: tuple[Rule, ...], action: str) -> _Finder:
    """Return ``resource -> index of the last rule matching (action, resource)``, or -1."""
    candidates = [i for i, rule in enumerate(rules) if wildcard_match(action, rule.action)]
    floor = -1
    for i in reversed(candidates):
        if rules[i].resource == "*":
            floor = i
            break
    newest_first: list[int] = []
    seen: set[str] = set()
    for i in reversed(candidates):
        if i <= floor:
            break
        pattern = rules[i].resource.replace("\\", "/")
        if pattern not in seen:
            seen.add(pattern)
            newest_first.append(i)
    if not newest_first:
        return (lambda _resource: floor) if floor >= 0 else _never

    literals: dict[str, int] = {}
    wildcards: list[int] = []
    for i in newest_first:
        pattern = rules[i].resource.replace("\\", "/")
        if _is_literal(pattern):
            literals[pattern] = i
        else:
            wildcards.append(i)

    if not wildcards:

        def find_literal(resource: str) -> int:
            return literals.get(resource, floor)

        return find_literal

    source = "|".join(f"({_compile_wildcard(rules[i].resource).pattern})" for i in wildcards)
    fullmatch = re.compile(source, re.DOTALL).fullmatch
    by_group = [-1, *wildcards]

    def find(resource: str) -> int:
        m = fullmatch(resource)
        best = by_group[m.lastindex or 0] if m is not None else floor
        hit = literals.get(resource, -1)
        return hit if hit > best else best

    return find


@dataclass(frozen=True, kw_only=True, slots=True)
class Ruleset(Sequence[Rule]):
    """An immutable, ordered, labelled list of rules; it is a ``Sequence[Rule]`` wherever one is accepted.

    ``source`` names where the rules came from and is reported by :func:`explain`. Build a ruleset once and keep it:
    its per-action index is compiled on first use and reused for every later evaluation.
    """

    source: str
    rules: tuple[Rule, ...] = ()
    _index: dict[str, _Finder] = field(
        default_factory=dict[str, _Finder], init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.rules, tuple):  # a list passed in by a caller
            object.__setattr__(self, "rules", tuple(self.rules))

    def last_match(self, action: str, resource: str) -> int:
        """Return the index of the last rule matching ``action`` and ``resource`` (``\\`` already ``/``), or -1."""
        finder = self._index.get(action)
        if finder is None:
            if len(self._index) >= _MAX_ACTIONS:
                self._index.clear()
            finder = self._index[action] = _build(self.rules, action)
        return finder(resource)

    def __len__(self) -> int:
        return len(self.rules)

    @overload
    def __getitem__(self, index: int) -> Rule: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Rule]: ...
    def __getitem__(self, index: int | slice) -> Rule | Sequence[Rule]:
        return self.rules[index]

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)


def last_match_naive(rules: Sequence[Rule], action: str, resource: str) -> int:
    """The reference scan: the index of the last rule matching both patterns, or -1."""
    for i in range(len(rules) - 1, -1, -1):
        rule = rules[i]
        if wildcard_match(action, rule.action) and wildcard_match(resource, rule.resource):
            return i
    return -1

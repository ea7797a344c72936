"""Labelled, precompiled rulesets: the fast path behind :func:`evaluate`.

A :class:`Ruleset` is an ordered tuple of rules with a ``source`` label (``"agent"``, ``"config"``, ``"session"``,
``"saved"``, ...) so that a decision can say where its deciding rule came from. It is immutable, so it compiles itself
once per action it is asked about and keeps that index for its lifetime:

* only rules whose action pattern matches the action are kept, in order;
* rules before the last ``*`` resource rule can never be the last match, so they are dropped;
* a resource pattern repeated later shadows its earlier copies;
* literal patterns go into a dict;
* wildcard patterns go into buckets keyed by their literal prefix (or, without one, their literal suffix), newest
  first, so a resource only tries the few patterns that could match it, and stops at the first match per bucket;
* the rare patterns with neither (``*x*``, ``?``) become one alternation, newest first, so the regex engine returns
  the newest matching rule and ``lastindex`` names it.

The index is a cache in the strict sense: the reference scan :func:`tether.rules.last_match` gives the same answers
and the property tests hold the two together.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from typing import overload

from .._record import record
from .._regex import lazy
from .._wildcard import _compile as _compile_wildcard  # pyright: ignore[reportPrivateUsage]
from .._wildcard import match as wildcard_match
from ..rules import Rule

__all__ = ["Ruleset"]

# Past this many distinct actions an index is rebuilt on demand rather than kept; actions are tool names, so a real
# ruleset never gets near it.
_MAX_ACTIONS = 512

_Finder = Callable[[str], int]
_Match = Callable[[str], "re.Match[str] | None"]


def _never(_resource: str) -> int:
    return -1


_wild = lazy(r"[*?]")


def _affixes(pattern: str) -> tuple[str, str]:
    """The literal text before the first and after the last wildcard: every match starts and ends with them."""
    first = _wild().search(pattern)
    assert first is not None
    prefix = pattern[: first.start()]
    if pattern.endswith(" *") and prefix.endswith(" "):  # "git *" also matches the bare "git"
        prefix = prefix[:-1]
    last = max(pattern.rfind("*"), pattern.rfind("?"))
    return prefix, pattern[last + 1 :]


def _build(rules: tuple[Rule, ...], action: str) -> _Finder:
    """Return ``resource -> index of the last rule matching (action, resource)``, or -1.

    Literal patterns are found by one dict lookup. A wildcard pattern is only tried when the resource starts with its
    literal prefix (or, with no prefix, ends with its literal suffix); buckets are newest first, so the first full
    match in a bucket is that bucket's answer and older candidates than the best so far are never tried. Patterns with
    neither (``*x*``, ``?``) share one alternation, newest first.
    """
    candidates = [i for i, rule in enumerate(rules) if wildcard_match(action, rule.action)]
    floor = -1  # the last "*" resource: every older rule is shadowed by it
    for i in reversed(candidates):
        if rules[i].resource == "*":
            floor = i
            break
    literals: dict[str, int] = {}
    by_prefix: dict[str, list[tuple[int, _Match]]] = {}
    by_suffix: dict[str, list[tuple[int, _Match]]] = {}
    rest: list[int] = []
    seen: set[str] = set()
    for i in reversed(candidates):  # newest first
        if i <= floor:
            break
        pattern = rules[i].resource.replace("\\", "/")
        if pattern in seen:  # an older copy of a pattern can never be the last match
            continue
        seen.add(pattern)
        if "*" not in pattern and "?" not in pattern:
            literals[pattern] = i
            continue
        prefix, suffix = _affixes(pattern)
        if prefix or suffix:
            fullmatch = _compile_wildcard(pattern).fullmatch
            bucket = by_prefix.setdefault(prefix, []) if prefix else by_suffix.setdefault(suffix, [])
            bucket.append((i, fullmatch))
        else:
            rest.append(i)

    if not (by_prefix or by_suffix or rest):
        if not literals:
            return (lambda _resource: floor) if floor >= 0 else _never
        return lambda resource: literals.get(resource, floor)

    prefix_lengths = sorted({len(p) for p in by_prefix})
    suffix_lengths = sorted({len(s) for s in by_suffix})
    prefix_get = by_prefix.get
    suffix_get = by_suffix.get
    literal_get = literals.get
    rest_match: _Match | None = None
    if rest:
        rest_match = re.compile(
            "|".join(f"({_compile_wildcard(rules[i].resource).pattern})" for i in rest), re.DOTALL
        ).fullmatch
    by_group = [-1, *rest]

    def find(resource: str) -> int:
        best = literal_get(resource, floor)
        size = len(resource)
        for length in prefix_lengths:
            if length > size:
                break
            bucket = prefix_get(resource[:length])
            if bucket is not None:
                for i, fullmatch in bucket:
                    if i <= best:
                        break
                    if fullmatch(resource) is not None:
                        best = i
                        break
        for length in suffix_lengths:
            if length > size:
                break
            bucket = suffix_get(resource[size - length :])
            if bucket is not None:
                for i, fullmatch in bucket:
                    if i <= best:
                        break
                    if fullmatch(resource) is not None:
                        best = i
                        break
        if rest_match is not None:
            m = rest_match(resource)
            if m is not None:
                i = by_group[m.lastindex or 0]
                if i > best:
                    best = i
        return best

    return find


@record
class Ruleset(Sequence[Rule]):
    """An immutable, ordered, labelled list of rules; it is a ``Sequence[Rule]`` wherever one is accepted.

    ``source`` names where the rules came from and is reported by :func:`explain`. Build a ruleset once and keep it:
    its per-action index is compiled on first use and reused for every later evaluation.

    A ``tighten_only`` ruleset (an untrusted project's rules) can make a decision stricter, never looser: evaluation
    takes the stricter of its newest match and the newest match of the other rulesets, wherever it stands in order.
    """

    source: str
    rules: tuple[Rule, ...] = ()
    tighten_only: bool = False
    _index: dict[str, _Finder] = field(
        default_factory=dict[str, _Finder], init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.rules, tuple):  # a list passed in by a caller
            object.__setattr__(self, "rules", tuple(self.rules))

    def finder(self, action: str) -> Callable[[str], int]:
        """Return ``resource -> index of the last rule matching (action, resource)``, or -1 (``\\`` already ``/``).

        Fetch it once per request and call it per resource; it is compiled on first use for each action.
        """
        finder = self._index.get(action)
        if finder is None:
            if len(self._index) >= _MAX_ACTIONS:
                self._index.clear()
            finder = self._index[action] = _build(self.rules, action)
        return finder

    def last_match(self, action: str, resource: str) -> int:
        """Return the index of the last rule matching ``action`` and ``resource`` (``\\`` already ``/``), or -1."""
        return self.finder(action)(resource)

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

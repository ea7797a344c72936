"""Evaluating one permission request (10 resources) against 1,000 configured rules, per decision in µs.

Run: .venv/bin/python bench/permissions.py
Target (issue 3): under 50 µs per decision with the pattern cache warm.

Three implementations run side by side on the same rules and requests:

* ``tether``: ``evaluate_request`` over a ``Ruleset`` whose per-action index is warm;
* ``naive``: the reference ``findLast`` over the flattened rules, with the wildcard pattern cache warm;
* ``uncached``: the same scan re-translating and re-compiling every pattern (few iterations; it is slow).

Scenarios: ``mixed`` spreads the rules over ten actions behind a leading ``*:* allow`` (a large real config);
``one-action`` puts every rule on the requested action with no ``*`` resource after the first rule (the worst case
for the index: nothing can be skipped).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from tether._wildcard import _compile, match
from tether.permissions import Rule, Ruleset, evaluate_request

ACTIONS = [
    "read",
    "edit",
    "bash",
    "glob",
    "grep",
    "webfetch",
    "external_directory",
    "task",
    "todowrite",
    "mcp_*",
]
RESOURCES = [
    "src/pkg7/module_3.py",
    "src/pkg901/deep/nested/file.ts",
    "docs/guide.md",
    ".env",
    "tests/test_pkg450.py",
    "build/output.bin",
    "src/pkg999/x.py",
    "README.md",
    "src/pkg3/__init__.py",
    "node_modules/left-pad/index.js",
]


def _resource(i: int, kind: int) -> str:
    if kind == 0:
        return f"src/pkg{i}/*"
    if kind == 1:
        return f"src/pkg{i}/module_{i % 7}.py"
    if kind == 2:
        return f"*.ext{i}"
    if kind == 3:
        return f"tests/test_pkg{i}.py"
    return f"docs/section{i}/??.md"


def mixed() -> list[Rule]:
    rules = [Rule("*", "*", "allow")]
    for i in range(1, 1000):
        effect = ("allow", "ask", "deny")[i % 3]
        rules.append(Rule(ACTIONS[i % len(ACTIONS)], _resource(i, (i // len(ACTIONS)) % 5), effect))
    return rules


def one_action() -> list[Rule]:
    rules = [Rule("*", "*", "allow")]
    for i in range(1, 1000):
        rules.append(Rule("edit", _resource(i, i % 5), ("allow", "ask")[i % 2]))
    return rules


def naive(
    action: str, resources: Sequence[str], rules: Sequence[Rule], matcher: Callable[[str, str], bool]
) -> str:
    effects: list[str] = []
    for resource in resources:
        found = "ask"
        for rule in reversed(rules):
            if matcher(action, rule.action) and matcher(resource, rule.resource):
                found = rule.effect
                break
        effects.append(found)
    if "deny" in effects:
        return "deny"
    return "ask" if "ask" in effects else "allow"


def uncached_match(value: str, pattern: str) -> bool:
    regex = _compile.__wrapped__(pattern).pattern  # re-translate the wildcard...
    return (
        re.compile(regex, re.DOTALL).fullmatch(value.replace("\\", "/")) is not None
    )  # ...and re-compile it


def per_call_us(fn: Callable[[], object], iterations: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter_ns() - start) / iterations / 1000)
    return best


def run(name: str, rules: list[Rule]) -> float:
    ruleset = Ruleset(source="config", rules=tuple(rules))
    saved = Ruleset(source="saved", rules=(Rule("edit", "docs/*", "allow"),))
    start = time.perf_counter_ns()
    decision = evaluate_request("edit", RESOURCES, (ruleset,), saved)  # builds the index: the cold decision
    cold = (time.perf_counter_ns() - start) / 1000
    expected = naive("edit", RESOURCES, [*rules, *saved.rules], match)
    assert decision.effect == expected, (decision.effect, expected)
    ours = per_call_us(lambda: evaluate_request("edit", RESOURCES, (ruleset,), saved), 1000, repeat=20)
    flat = [*rules, *saved.rules]
    base = per_call_us(lambda: naive("edit", RESOURCES, flat, match), 20)
    slow = per_call_us(lambda: naive("edit", RESOURCES, flat, uncached_match), 1)
    print(
        f"{name:<11} tether {ours:8.1f} µs/decision (cold {cold:8.0f} µs) | naive warm-cache {base:9.1f} µs "
        f"({base / ours:6.0f}x) | uncached {slow:10.0f} µs ({slow / ours:7.0f}x) | effect {decision.effect}"
    )
    return ours


if __name__ == "__main__":
    print(f"1,000 rules, {len(RESOURCES)} resources per request; target < 50 µs per decision (warm)")
    worst = max(run("mixed", mixed()), run("one-action", one_action()))
    print(f"worst {worst:.1f} µs per decision: {'meets' if worst < 50 else 'MISSES'} the 50 µs target")

"""``tether tools``: why a tool is hidden is explained on top of the runtime's own visibility decision."""

from __future__ import annotations

import pytest

import tether.tools.internal
from tether.cli._tools import hidden_reason  # pyright: ignore[reportPrivateUsage]
from tether.permissions import Agent, Rule, Ruleset

RULE_LISTS: list[list[tuple[str, list[Rule]]]] = [
    [],
    [("agent", [Rule("*", "*", "allow")])],
    [("agent", [Rule("bash", "*", "deny")])],
    [("agent", [Rule("bash", "*", "deny"), Rule("bash", "git *", "allow")])],
    [("agent", [Rule("bash", "git *", "deny")])],
    [("agent", [Rule("*", "*", "deny")]), ("project", [Rule("read", "*", "allow")])],
    [("agent", [Rule("read", "*", "allow")]), ("project", [Rule("*", "*", "deny")])],
    [("defaults", [Rule("edit", "*", "ask")]), ("user", [Rule("e*", "*", "deny")])],
    [("defaults", [Rule("edit", "*", "deny")]), ("user", [Rule("edit", "src/*", "ask")])],
    [("agent", [Rule("web*", "*", "deny"), Rule("webfetch", "*", "ask")])],
]
ACTIONS = ["bash", "read", "edit", "webfetch", "websearch", "grep"]


@pytest.mark.parametrize("layers", RULE_LISTS)
def test_hidden_reason_agrees_with_is_hidden(layers: list[tuple[str, list[Rule]]]) -> None:
    rulesets = tuple(Ruleset(source=source, rules=tuple(rules)) for source, rules in layers)
    agent = Agent(name="a", rulesets=rulesets) if rulesets else Agent(name="a")
    for action in ACTIONS:
        reason = hidden_reason(action, agent)
        assert (reason is not None) == tether.tools.internal.is_hidden(action, agent.rules), action


def test_hidden_reason_names_the_deciding_rule_and_its_source() -> None:
    agent = Agent(
        name="a",
        rulesets=(
            Ruleset(source="defaults", rules=(Rule("bash", "*", "allow"),)),
            Ruleset(source="project", rules=(Rule("ba*", "*", "deny"),)),
        ),
    )
    assert hidden_reason("bash", agent) == 'denied by rule ba* "*" -> deny (project)'
    assert hidden_reason("read", agent) is None


def test_the_decision_is_the_runtimes_is_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    # One decision for materialize and for ``tether tools``: a change to is_hidden shows in both.
    monkeypatch.setattr(tether.tools.internal, "is_hidden", lambda action, rules: False)  # pyright: ignore[reportUnknownLambdaType]
    agent = Agent(name="a", rules=(Rule("bash", "*", "deny"),))
    assert hidden_reason("bash", agent) is None

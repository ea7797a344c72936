"""Rule evaluation: last match wins, the default ask, request decisions and their explanations."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.errors import UsageError
from tether.permissions import Rule, Ruleset, evaluate, evaluate_request, explain
from tether.rules import last_match


def test_no_match_asks_with_a_star_resource() -> None:
    assert evaluate("bash", "ls", [Rule("read", "*", "allow")]) == Rule("bash", "*", "ask")
    assert evaluate("bash", "ls") == Rule("bash", "*", "ask")


def test_last_matching_rule_wins_across_rulesets() -> None:
    agent = [Rule("*", "*", "allow"), Rule("bash", "*", "ask")]
    config = [Rule("bash", "git *", "allow"), Rule("bash", "git push *", "deny")]
    session = [Rule("bash", "git push origin dev", "allow")]
    assert evaluate("bash", "git status", agent, config, session).effect == "allow"
    assert evaluate("bash", "git push origin main", agent, config, session).effect == "deny"
    assert evaluate("bash", "git push origin dev", agent, config, session).effect == "allow"
    assert evaluate("bash", "rm -rf /", agent, config, session).effect == "ask"
    assert evaluate("read", "x", agent, config, session).effect == "allow"


def test_key_order_is_rule_order() -> None:
    assert evaluate("bash", "ls", [Rule("*", "*", "deny"), Rule("bash", "*", "allow")]).effect == "allow"
    assert evaluate("bash", "ls", [Rule("bash", "*", "allow"), Rule("*", "*", "deny")]).effect == "deny"


def test_compiled_rulesets_and_plain_lists_agree() -> None:
    rules = [Rule("*", "*", "allow"), Rule("edit", "src/*", "deny"), Rule("edit", "src/ok.py", "allow")]
    ruleset = Ruleset(source="config", rules=tuple(rules))
    for resource in ["src/ok.py", "src/bad.py", "docs/x.md", "src\\ok.py"]:
        assert evaluate("edit", resource, ruleset) == evaluate("edit", resource, rules)


def test_ruleset_is_a_sequence_of_its_rules() -> None:
    rules = (Rule("a", "*", "allow"), Rule("b", "*", "deny"))
    ruleset = Ruleset(source="agent", rules=rules)
    assert list(ruleset) == list(rules)
    assert len(ruleset) == 2
    assert ruleset[1] == rules[1]
    assert ruleset == Ruleset(source="agent", rules=rules)


def test_configured_deny_on_any_resource_denies_the_request_despite_saved_approval() -> None:
    configured = Ruleset(source="config", rules=(Rule("*", "*", "allow"), Rule("edit", "secrets/*", "deny")))
    saved = [Rule("edit", "*", "allow")]
    decision = evaluate_request("edit", ["a.py", "secrets/key"], configured, saved)
    assert decision.effect == "deny"
    assert decision.verdicts[1].rule == Rule("edit", "secrets/*", "deny")
    assert decision.verdicts[1].source == "config"


def test_saved_approvals_turn_asks_into_allows() -> None:
    configured = [Ruleset(source="agent", rules=(Rule("*", "*", "allow"), Rule("bash", "*", "ask")))]
    decision = evaluate_request("bash", ["git status", "ls"], configured, [Rule("bash", "git *", "allow")])
    assert decision.effect == "ask"
    assert [v.source for v in decision.verdicts] == ["saved", "agent"]
    decision = evaluate_request("bash", ["git status"], configured, [Rule("bash", "git *", "allow")])
    assert decision.effect == "allow"


def test_any_ask_asks_and_no_match_asks_by_default() -> None:
    decision = evaluate_request("read", ["a", "b"], [Rule("read", "a", "allow")])
    assert decision.effect == "ask"
    assert decision.verdicts[1].source == "default"
    assert decision.verdicts[1].rule == Rule("read", "*", "ask")
    assert decision.deciding == (decision.verdicts[1],)


def test_empty_resources_is_a_programming_error_not_an_allow() -> None:
    with pytest.raises(UsageError, match="at least one resource"):
        evaluate_request("bash", [], [Rule("*", "*", "allow")])
    with pytest.raises(UsageError):
        evaluate_request("bash", "ls", [Rule("*", "*", "allow")])


def test_saved_rules_must_be_allow_rules() -> None:
    with pytest.raises(UsageError, match="allow rules"):
        evaluate_request("bash", ["ls"], [], [Rule("bash", "*", "deny")])


def test_explain_names_the_deciding_rule_and_its_source() -> None:
    configured = [
        Ruleset(source="agent", rules=(Rule("*", "*", "allow"),)),
        Ruleset(source="config", rules=(Rule("bash", "rm *", "deny"),)),
    ]
    decision = evaluate_request("bash", ["rm -rf build", "ls"], configured)
    assert explain(decision) == (
        'bash: deny\n  rm -rf build: deny by bash "rm *" (config)\n  ls: allow by * "*" (agent)'
    )
    assert decision.to_json()["verdicts"][0] == {
        "resource": "rm -rf build",
        "effect": "deny",
        "rule": {"action": "bash", "resource": "rm *", "effect": "deny"},
        "source": "config",
    }


def test_explain_says_when_nothing_matched() -> None:
    assert explain(evaluate_request("read", ["a"], [])) == "read: ask\n  a: ask (no rule matched; default)"


# --- properties -----------------------------------------------------------------------------------------------

ACTIONS = st.sampled_from(["read", "edit", "bash", "*", "ba*", "?ead"])
PATTERNS = st.sampled_from(
    [
        *(
            "*",
            "a",
            "?",
            "a/*",
            "*.env",
            "a/b",
            "b*",
            "git *",
            "git",
            "a\\b",
            "*/b",
            "a?b",
            "a*b",
            "*a*",
            " *",
        ),
        *("?*", "g *", "a\\*", "git  *", "*.env.*", "a/*/b", "*b"),
    ]
)
EFFECTS = st.sampled_from(["allow", "ask", "deny"])
RULES = st.lists(st.builds(Rule, ACTIONS, PATTERNS, EFFECTS), max_size=25)
REQUEST_ACTIONS = st.sampled_from(["read", "edit", "bash"])
RESOURCES = st.sampled_from(
    [
        "a",
        "a/b",
        "a\\b",
        "x.env",
        "b",
        "git",
        "git push",
        "gits",
        "azb",
        "",
        "q/b",
        "git ",
        "g",
        "a/c/b",
        ".env.x",
        " ",
    ]
)


@given(rules=RULES, action=REQUEST_ACTIONS, resource=RESOURCES)
def test_compiled_index_agrees_with_the_naive_scan(rules: list[Rule], action: str, resource: str) -> None:
    ruleset = Ruleset(source="config", rules=tuple(rules))
    normalized = resource.replace("\\", "/")
    assert ruleset.last_match(action, normalized) == last_match(rules, action, resource)
    assert ruleset.last_match(action, normalized) == last_match(rules, action, resource)  # warm index


@given(
    configured=st.lists(RULES, max_size=3),
    saved=st.lists(st.builds(Rule, REQUEST_ACTIONS, PATTERNS, st.just("allow")), max_size=10),
    action=REQUEST_ACTIONS,
    resources=st.lists(RESOURCES, min_size=1, max_size=4),
)
def test_configured_deny_beats_saved_allow(
    configured: list[list[Rule]], saved: list[Rule], action: str, resources: list[str]
) -> None:
    rulesets = [Ruleset(source=f"r{n}", rules=tuple(rules)) for n, rules in enumerate(configured)]
    decision = evaluate_request(action, resources, rulesets, saved)
    configured_effects = [evaluate(action, r, *configured).effect for r in resources]
    all_effects = [evaluate(action, r, *configured, saved).effect for r in resources]
    if "deny" in configured_effects:
        assert decision.effect == "deny"
    elif "ask" in all_effects:
        assert decision.effect == "ask"
    else:
        assert decision.effect == "allow"
    assert len(decision.verdicts) == len(resources)
    if decision.effect != "deny":
        assert [v.effect for v in decision.verdicts] == all_effects

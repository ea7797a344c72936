"""Catalog visibility indexed once per rules (``Visibility``) gives the reference scan's answers (``is_hidden``)."""

from hypothesis import given
from hypothesis import strategies as st

from tether.rules import Rule, last_match
from tether.tools._settle import Visibility, is_hidden

ACTIONS = st.sampled_from(["bash", "read", "edit", "ba", "bash\\x", "bash/x", "mcp_a", "mcp_b", "r?ad"])
PATTERNS = st.sampled_from(
    [
        "*",
        "bash",
        "read",
        "ba*",
        "b?sh",
        "mcp_*",
        "bash\\x",
        "bash/x",
        "r?ad",
        "re*d",
        "bash *",
        "*a*",
        "edit",
    ]
)
RULES = st.lists(
    st.builds(
        Rule,
        PATTERNS,
        st.sampled_from(["*", "*.env", "git *"]),
        st.sampled_from(["allow", "ask", "deny"]),
    ),
    max_size=12,
)


@given(rules=RULES, actions=st.lists(ACTIONS, min_size=1, max_size=5))
def test_the_index_answers_as_the_scan(rules: list[Rule], actions: list[str]) -> None:
    visibility = Visibility(rules)
    for action in actions:
        assert visibility.last(action) == last_match(rules, action), (action, rules)
        assert visibility.hidden(action) == is_hidden(action, rules), (action, rules)


def test_a_later_wildcard_rule_wins_over_an_earlier_literal_one() -> None:
    rules = [Rule("bash", "*", "deny"), Rule("b*", "*", "allow"), Rule("read", "*", "deny")]
    assert not Visibility(rules).hidden("bash")
    assert Visibility([*rules, Rule("ba?h", "*", "deny")]).hidden("bash")
    assert Visibility(rules).hidden("read")
    assert not Visibility(rules).hidden("edit")

"""Built-in agents and their default rules (reference §2.11), and config layered after them."""

from pathlib import Path

import pytest

from tether.config import parse_config
from tether.errors import UsageError
from tether.permissions import (
    Agent,
    Rule,
    Ruleset,
    builtin_agents,
    evaluate,
    evaluate_request,
    retained_output_rules,
)

DATA = Path("/home/u/.local/share/tether")
TMP = Path("/tmp/tether")


def effect(agent: Agent, action: str, resource: str) -> str:
    return evaluate(action, resource, *agent.rulesets).effect


def test_builtin_agents_and_modes() -> None:
    agents = builtin_agents(DATA, TMP)
    assert {name: (a.mode, a.hidden) for name, a in agents.items()} == {
        "build": ("primary", False),
        "plan": ("primary", False),
        "general": ("subagent", False),
        "explore": ("subagent", False),
        "compaction": ("primary", True),
        "title": ("primary", True),
        "summary": ("primary", True),
    }
    # the built-in texts live in tether.prompts (chosen per model family); prompt is only a configured override
    assert all(agent.prompt is None for agent in agents.values())


@pytest.mark.parametrize("name", ["build", "plan", "general", "explore"])
def test_defaults_guard_env_files_and_external_directories(name: str) -> None:
    agent = builtin_agents(DATA, TMP)[name]
    assert agent.rules[0] == Rule("*", "*", "allow")
    assert effect(agent, "read", "src/app.py") == "allow"
    assert effect(agent, "read", ".env") == "ask"
    assert effect(agent, "read", "config/prod.env") == "ask"
    assert effect(agent, "read", ".env.local") == "ask"
    assert effect(agent, "read", ".env.example") == "allow"
    assert effect(agent, "external_directory", "/etc/passwd") == "ask"
    # the data directory asks (a session's own outputs are allowed per session: retained_output_rules)
    assert effect(agent, "external_directory", f"{DATA.as_posix()}/tool-output/ses_1/*") == "ask"
    assert effect(agent, "external_directory", f"{DATA.as_posix()}/tether.db") == "ask"
    assert effect(agent, "external_directory", "/tmp/tether/scratch.txt") == "allow"


def test_a_data_directory_inside_the_temp_directory_still_asks() -> None:
    build = builtin_agents(TMP / "data", TMP)["build"]
    assert effect(build, "external_directory", f"{TMP.as_posix()}/scratch/*") == "allow"
    assert effect(build, "external_directory", f"{TMP.as_posix()}/data/tether.db") == "ask"


def test_build_allows_edits_and_read_only_commands_and_asks_other_commands() -> None:
    build = builtin_agents(DATA, TMP)["build"]
    assert effect(build, "edit", "src/app.py") == "allow"
    assert effect(build, "bash", "rm -rf build") == "ask"
    assert effect(build, "bash", "ls -la") == "allow"
    assert effect(build, "bash", "git diff --output=x") == "ask"
    assert effect(build, "question", "*") == "allow"
    assert effect(build, "plan_exit", "*") == "deny"


def test_plan_denies_edits_except_plan_files() -> None:
    plan = builtin_agents(DATA, TMP)["plan"]
    assert effect(plan, "edit", "src/app.py") == "deny"
    assert effect(plan, "edit", ".tether/plans/feature.md") == "allow"
    assert effect(plan, "edit", f"{DATA.as_posix()}/plans/feature.md") == "allow"
    assert effect(plan, "plan_exit", "*") == "allow"


def test_explore_is_read_only() -> None:
    explore = builtin_agents(DATA, TMP)["explore"]
    for action in ("read", "grep", "glob", "webfetch"):
        assert effect(explore, action, "src/x") == "allow"
    for action in ("edit", "bash", "task", "todowrite"):
        assert effect(explore, action, "anything") == "deny"


@pytest.mark.parametrize("name", ["compaction", "title", "summary"])
def test_hidden_agents_deny_everything(name: str) -> None:
    agent = builtin_agents(DATA, TMP)[name]
    assert effect(agent, "read", "a.py") == "deny"
    assert effect(agent, "bash", "ls") == "deny"


def test_config_rules_come_after_the_defaults_then_the_agents_own() -> None:
    config = parse_config(
        {
            "permission": {"bash": {"*": "ask", "git *": "allow"}, "read": {"*.env": "allow"}},
            "agent": {"build": {"permission": {"bash": {"git push *": "deny"}}, "steps": 7}},
        },
        file="tether.json",
    )
    agents = builtin_agents(DATA, TMP, config)
    build = agents["build"]
    assert [r.source for r in build.rulesets] == ["agent", "config", "agent-config"]
    assert build.steps == 7
    assert effect(build, "bash", "ls") == "ask"
    assert effect(build, "bash", "git status") == "allow"
    assert effect(build, "bash", "git push origin") == "deny"
    assert effect(build, "read", ".env") == "allow"
    decision = evaluate_request("bash", ["git push origin"], build.rulesets)
    assert decision.verdicts[0].source == "agent-config"
    assert effect(agents["plan"], "bash", "git push origin") == "allow"  # only build's own rules deny it


def test_a_session_reads_its_own_retained_outputs_after_the_config_rules() -> None:
    root = f"{DATA.as_posix()}/tool-output"
    config = parse_config({"permission": {"external_directory": "deny"}}, file="tether.json")
    build = builtin_agents(DATA, TMP, config)["build"]
    outputs = retained_output_rules(build, [f"{root}/ses_b", f"{root}/ses_a"], root=root)
    assert outputs is not None and outputs.source == "session"
    rulesets = (*build.rulesets, outputs)
    assert evaluate("external_directory", f"{root}/ses_b/*", *rulesets).effect == "allow"
    assert evaluate("external_directory", f"{root}/ses_a/*", *rulesets).effect == "allow"  # its parent's
    assert evaluate("external_directory", f"{root}/ses_c/*", *rulesets).effect == "deny"
    assert evaluate("external_directory", f"{root}/ses_b0/*", *rulesets).effect == "deny"
    assert evaluate("external_directory", f"{DATA.as_posix()}/*", *rulesets).effect == "deny"


def test_config_that_denies_the_output_directory_exactly_opts_out() -> None:
    root = f"{DATA.as_posix()}/tool-output"
    config = parse_config({"permission": {"external_directory": {f"{root}/*": "deny"}}}, file="tether.json")
    build = builtin_agents(DATA, TMP, config)["build"]
    assert retained_output_rules(build, [f"{root}/ses_b"], root=root) is None


def test_config_can_disable_agents_and_define_new_ones() -> None:
    config = parse_config(
        {
            "agent": {
                "plan": {"disable": True},
                "review": {"mode": "subagent", "permission": {"edit": "deny"}},
            }
        },
        file="tether.json",
    )
    agents = builtin_agents(DATA, TMP, config)
    assert "plan" not in agents
    review = agents["review"]
    assert review.mode == "subagent"
    assert effect(review, "edit", "a.py") == "deny"
    assert effect(review, "read", ".env") == "ask"


def test_agent_rules_and_rulesets_are_one_list() -> None:
    rules = (Rule("*", "*", "allow"), Rule("bash", "*", "ask"))
    agent = Agent(name="custom", rules=rules)
    assert agent.rulesets == (Ruleset(source="agent", rules=rules),)
    layered = Agent(
        name="x", rulesets=(Ruleset(source="a", rules=rules[:1]), Ruleset(source="b", rules=rules[1:]))
    )
    assert layered.rules == rules
    with pytest.raises(UsageError):
        Agent(name="y", rules=rules[:1], rulesets=(Ruleset(source="a", rules=rules),))

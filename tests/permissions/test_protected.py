"""Protected paths in evaluation and in the service: only a rule naming the path allows; deny still denies."""

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.bus import Bus
from tether.errors import BlockedError, CorrectedError
from tether.permissions import (
    Agent,
    PermissionRequest,
    PermissionService,
    PermissionSource,
    Rule,
    Ruleset,
    SavedApprovals,
    StaticRules,
    evaluate_request,
    explain,
    names_protected_path,
)

from .conftest import Recorder

ALLOW_ALL = Ruleset(source="agent", rules=(Rule("*", "*", "allow"),))


def config(*rules: Rule) -> Ruleset:
    return Ruleset(source="config", rules=rules)


def test_a_broad_edit_allow_asks_for_a_protected_path() -> None:
    decision = evaluate_request("edit", [".git/config"], (ALLOW_ALL,), protected=".git/config")
    assert decision.effect == "ask"
    assert decision.verdicts[0].source == "protected"
    assert "protected path .git/config" in explain(decision)


def test_the_same_request_without_the_anchor_is_allowed() -> None:
    assert evaluate_request("edit", [".git/config"], (ALLOW_ALL,)).effect == "allow"


def test_a_rule_naming_the_hooks_directory_allows_hooks_only() -> None:
    rules = (ALLOW_ALL, config(Rule("edit", ".git/hooks/*", "allow")))
    hooks = evaluate_request("edit", [".git/hooks/pre-commit"], rules, protected=".git/hooks/")
    assert hooks.effect == "allow"
    assert hooks.verdicts[0].rule == Rule("edit", ".git/hooks/*", "allow")
    assert evaluate_request("edit", [".git/config"], rules, protected=".git/config").effect == "ask"


def test_a_naming_allow_behind_a_later_broad_allow_still_allows() -> None:
    rules = (
        ALLOW_ALL,
        config(Rule("edit", ".tether/*", "allow")),
        Ruleset(source="session", rules=(Rule("edit", "*", "allow"),)),
    )
    assert evaluate_request("edit", [".tether/tether.json"], rules, protected=".tether/").effect == "allow"


@pytest.mark.parametrize("pattern", [".git/*", "*", "*/config", ".g*"])
def test_a_pattern_that_does_not_spell_the_anchor_cannot_allow(pattern: str) -> None:
    rules = (config(Rule("edit", pattern, "allow")),)
    assert evaluate_request("edit", [".git/config"], rules, protected=".git/config").effect == "ask"


def test_deny_still_denies_a_protected_path() -> None:
    rules = (ALLOW_ALL, config(Rule("edit", ".git/hooks/*", "allow"), Rule("edit", ".git/*", "deny")))
    assert evaluate_request("edit", [".git/hooks/x"], rules, protected=".git/hooks/").effect == "deny"


def test_a_deny_overridden_by_a_broad_allow_asks_rather_than_allows() -> None:
    rules = (config(Rule("edit", "*", "deny"), Rule("edit", "*", "allow")),)
    decision = evaluate_request("edit", ["AGENTS.md"], rules, protected="AGENTS.md")
    assert decision.effect == "ask"
    assert decision.verdicts[0].source == "protected"


def test_a_later_ask_after_a_naming_allow_asks() -> None:
    rules = (config(Rule("edit", ".git/hooks/*", "allow"), Rule("edit", "*", "ask")),)
    assert evaluate_request("edit", [".git/hooks/x"], rules, protected=".git/hooks/").effect == "ask"


def test_a_saved_star_does_not_allow_but_a_saved_exact_resource_does() -> None:
    star = (Rule("edit", "*", "allow"),)
    assert (
        evaluate_request("edit", [".gitmodules"], (ALLOW_ALL,), star, protected=".gitmodules").effect == "ask"
    )
    exact = (Rule("edit", ".gitmodules", "allow"),)
    decision = evaluate_request("edit", [".gitmodules"], (ALLOW_ALL,), exact, protected=".gitmodules")
    assert decision.effect == "allow" and decision.verdicts[0].source == "saved"


def test_a_saved_approval_never_overrides_a_deny_of_a_protected_path() -> None:
    rules = (config(Rule("edit", ".gitmodules", "deny")),)
    saved = (Rule("edit", ".gitmodules", "allow"),)
    assert evaluate_request("edit", [".gitmodules"], rules, saved, protected=".gitmodules").effect == "deny"


def protected_request(resource: str, anchor: str, save: tuple[str, ...]) -> PermissionRequest:
    return PermissionRequest(
        session_id="ses_a",
        action="edit",
        resources=(resource,),
        save=save,
        source=PermissionSource(message_id="msg_1", call_id="call_1"),
        protected=anchor,
    )


@pytest.mark.anyio
async def test_always_for_a_protected_path_saves_the_exact_resource_never_star(
    bus: Bus, saved: SavedApprovals, recorder: Recorder
) -> None:
    await saved.add("prj_1", "edit", ["*"])  # an earlier "always" for ordinary edits
    agent = Agent(name="build", rules=(Rule("*", "*", "allow"),))
    service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj_1", agent=agent))
    request = protected_request(".git/hooks/pre-commit", ".git/hooks/", save=("*",))
    async with anyio.create_task_group() as tg:
        tg.start_soon(service.assert_, request)
        (asked,) = await recorder.wait("permission.asked")
        assert asked.request.to_json()["protected"] == ".git/hooks/"
        await service.reply(asked.request.id, "always")
    assert sorted(a.resource for a in await saved.list("prj_1")) == ["*", ".git/hooks/pre-commit"]
    # the saved exact resource allows that hook again, and nothing else
    assert (
        await service.ask(protected_request(".git/hooks/pre-commit", ".git/hooks/", ("x",)))
    ).effect == "allow"
    assert (
        await service.ask(protected_request(".git/hooks/post-merge", ".git/hooks/", ("x",)))
    ).effect == "ask"


@pytest.mark.anyio
async def test_a_denied_protected_path_is_blocked_by_the_service(bus: Bus, saved: SavedApprovals) -> None:
    agent = Agent(name="build", rules=(Rule("*", "*", "allow"), Rule("edit", ".tether/*", "deny")))
    service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj_1", agent=agent))
    with pytest.raises(BlockedError):
        await service.assert_(protected_request(".tether/tether.json", ".tether/", (".tether/tether.json",)))


PATTERNS = ["*", ".git/*", ".git/hooks/*", ".git/hooks/pre-commit", ".git/config", "*/config", ".g*", "src/*"]
RESOURCES = [(".git/hooks/pre-commit", ".git/hooks/"), (".git/config", ".git/config")]
rules_strategy = st.lists(
    st.builds(
        Rule,
        st.sampled_from(["edit", "*", "read"]),
        st.sampled_from(PATTERNS),
        st.sampled_from(["allow", "ask", "deny"]),
    ),
    max_size=8,
)


@given(
    configured=st.lists(rules_strategy, max_size=3),
    saved=st.lists(st.builds(Rule, st.just("edit"), st.sampled_from(PATTERNS), st.just("allow")), max_size=3),
    target=st.sampled_from(RESOURCES),
)
def test_protection_only_turns_allow_into_ask_unless_a_naming_rule_allows(
    configured: list[list[Rule]], saved: list[Rule], target: tuple[str, str]
) -> None:
    resource, anchor = target
    rulesets = [Ruleset(source=f"layer{i}", rules=tuple(rules)) for i, rules in enumerate(configured)]
    plain = evaluate_request("edit", [resource], rulesets, saved)
    guarded = evaluate_request("edit", [resource], rulesets, saved, protected=anchor)
    assert (plain.effect == "deny") == (
        guarded.effect == "deny"
    )  # a deny still denies, and nothing new denies
    if plain.effect == "ask":
        assert guarded.effect == "ask"  # never wider than without protection
    if guarded.effect == "allow":
        (verdict,) = guarded.verdicts
        assert verdict.rule.effect == "allow" and names_protected_path(verdict.rule.resource, anchor)


@pytest.mark.anyio
async def test_an_always_for_ordinary_edits_does_not_approve_a_waiting_protected_write(
    bus: Bus, saved: SavedApprovals, recorder: Recorder
) -> None:
    agent = Agent(name="build", rules=(Rule("*", "*", "allow"), Rule("edit", "*", "ask")))
    service = PermissionService(bus=bus, saved=saved, resolve=StaticRules(project="prj_1", agent=agent))
    ordinary = PermissionRequest(
        session_id="ses_a",
        action="edit",
        resources=("src/app.py",),
        save=("*",),
        source=PermissionSource(message_id="msg_1", call_id="call_2"),
    )
    protected = protected_request(".git/config", ".git/config", save=(".git/config",))

    async def rejected() -> None:
        with pytest.raises(CorrectedError):
            await service.assert_(protected)

    async with anyio.create_task_group() as tg:
        tg.start_soon(rejected)
        await recorder.wait("permission.asked")
        tg.start_soon(service.assert_, ordinary)
        asked = await recorder.wait("permission.asked", 2)
        await service.reply(asked[1].request.id, "always")  # saves edit "*"
        assert [p.request.resources for p in service.pending()] == [(".git/config",)]
        await service.reply(asked[0].request.id, "reject", "no")

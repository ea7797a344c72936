import re
from typing import Any

import pytest
from pydantic import BaseModel

from tether.errors import NotFoundError, RegistrationError
from tether.rules import Rule
from tether.tools import Tool, ToolContext, ToolRegistry, ToolResponse


class Empty(BaseModel):
    pass


def make(label: str) -> Tool[Empty, Any]:
    async def run(inp: Empty, ctx: ToolContext) -> ToolResponse[Any]:
        return ToolResponse(content=label)

    return Tool(description=f"tool {label}", input=Empty, execute=run)


def test_latest_registration_wins_and_closing_reveals_previous(registry: ToolRegistry) -> None:
    base = make("base")
    overlay = make("overlay")
    registry.register({"x": base})
    handle = registry.register({"x": overlay})
    assert registry.require("x").tool is overlay
    handle.close()
    assert registry.require("x").tool is base


def test_close_in_any_order(registry: ToolRegistry) -> None:
    a, b, c = make("a"), make("b"), make("c")
    ha = registry.register({"x": a})
    hb = registry.register({"x": b})
    hc = registry.register({"x": c})
    hb.close()
    assert registry.require("x").tool is c
    hc.close()
    assert registry.require("x").tool is a
    ha.close()
    assert registry.current("x") is None
    ha.close()  # idempotent


def test_require_returns_the_current_registration_or_names_what_is_registered(registry: ToolRegistry) -> None:
    location = ToolRegistry(parent=registry)
    registry.register({"app": make("a")})
    handle = location.register({"app": make("override"), "own": make("o")})
    assert location.require("app") is location.current("app") is not registry.require("app")
    with pytest.raises(
        NotFoundError, match=r"No tool is registered as 'missing'\. Registered tools: app, own$"
    ):
        location.require("missing")
    handle.close()
    assert location.require("app") is registry.require("app")
    with pytest.raises(NotFoundError, match=r"Registered tools: \(none\)$"):
        ToolRegistry(output=registry.output).require("app")


def test_context_manager_closes(registry: ToolRegistry) -> None:
    with registry.register({"x": make("a")}):
        assert registry.current("x") is not None
    assert registry.current("x") is None


@pytest.mark.anyio
async def test_async_context_manager_closes(registry: ToolRegistry) -> None:
    async with registry.register({"x": make("a")}):
        assert registry.current("x") is not None
    assert registry.current("x") is None


def test_location_beats_application(registry: ToolRegistry) -> None:
    location = ToolRegistry(parent=registry)
    app_tool, loc_tool = make("app"), make("loc")
    registry.register({"x": app_tool, "y": app_tool})
    handle = location.register({"x": loc_tool})
    assert location.require("x").tool is loc_tool
    assert location.require("y").tool is app_tool
    handle.close()
    assert location.require("x").tool is app_tool


def test_later_mutation_of_the_record_has_no_effect(registry: ToolRegistry) -> None:
    record = {"a": make("a")}
    registry.register(record)
    record["b"] = make("b")
    assert registry.current("b") is None


def test_names_are_normalized(registry: ToolRegistry) -> None:
    registry.register({"location.tool/search": make("a")})
    assert registry.current("location_tool_search") is not None


def test_later_normalized_duplicate_wins(registry: ToolRegistry) -> None:
    first, last = make("first"), make("last")
    registry.register({"echo.tool": first, "echo_tool": last})
    assert registry.require("echo_tool").tool is last


def test_namespace_prefixes_the_name(registry: ToolRegistry) -> None:
    registry.register({"echo": make("a")}, namespace="acme.tools")
    assert registry.current("acme_tools_echo") is not None


@pytest.mark.parametrize("good", ["__book_meeting_room", "1abc", "-x", "a" * 64])
def test_every_provider_legal_name_registers(registry: ToolRegistry, good: str) -> None:
    registry.register({good: make("g")})
    assert registry.current(good) is not None


@pytest.mark.parametrize("bad", ["", "a" * 65, "é" * 65])
def test_invalid_name_registers_nothing(registry: ToolRegistry, bad: str) -> None:
    with pytest.raises(RegistrationError):
        registry.register({"good": make("g"), bad: make("b")})
    assert registry.current("good") is None


def test_invalid_namespace_is_rejected(registry: ToolRegistry) -> None:
    with pytest.raises(RegistrationError, match=re.escape('Invalid tool namespace: "acme..x"')):
        registry.register({"echo": make("a")}, namespace="acme..x")


def test_execute_is_reserved(registry: ToolRegistry) -> None:
    with pytest.raises(RegistrationError, match="reserved for CodeMode"):
        registry.register({"execute": make("a")})


def test_non_tool_values_are_rejected(registry: ToolRegistry) -> None:
    with pytest.raises(RegistrationError, match="Invalid Tool value"):
        registry.register({"x": object()})  # type: ignore[dict-item]


def test_catalog_is_sorted_and_canonical(registry: ToolRegistry) -> None:
    other = ToolRegistry(output=registry.output)
    tools = {"zeta": make("z"), "alpha": make("a"), "mid": make("m")}
    registry.register(tools)
    other.register(dict(reversed(list(tools.items()))))
    names = [d.name for d in registry.materialize().definitions]
    assert names == ["alpha", "mid", "zeta"]
    assert names == [d.name for d in other.materialize().definitions]


def test_hidden_only_when_last_matching_rule_denies_star(registry: ToolRegistry) -> None:
    registry.register({"read": make("r"), "bash": make("b")})
    names = lambda rules: [d.name for d in registry.materialize(rules).definitions]  # noqa: E731
    assert names([Rule("*", "*", "allow"), Rule("bash", "*", "deny")]) == ["read"]
    assert names([Rule("bash", "*", "deny"), Rule("bash", "git *", "allow")]) == ["bash", "read"]
    assert names([Rule("bash", "*", "deny"), Rule("*", "*", "allow")]) == ["bash", "read"]
    assert names([Rule("*", "*", "deny")]) == []


def test_edit_write_apply_patch_share_the_edit_action(registry: ToolRegistry) -> None:
    registry.register(
        {
            "edit": make("e").with_permission("edit"),
            "write": make("w").with_permission("edit"),
            "apply_patch": make("p").with_permission("edit"),
            "read": make("r"),
        }
    )
    names = [d.name for d in registry.materialize([Rule("edit", "*", "deny")]).definitions]
    assert names == ["read"]


def test_materialize_reuses_an_unchanged_snapshot_and_recomputes_after_changes(
    registry: ToolRegistry,
) -> None:
    location = ToolRegistry(parent=registry)
    location.register({"a": make("a")})
    rules = (Rule("*", "*", "allow"),)
    first = location.materialize(rules)
    assert location.materialize(rules) is first
    assert location.materialize([Rule("*", "*", "allow")]).definitions == first.definitions
    deny_a = location.materialize([Rule("a", "*", "deny")])
    assert deny_a.definitions == ()
    registry.register({"b": make("b")})  # a change in the parent placement
    second = location.materialize(rules)
    assert second is not first and [d.name for d in second.definitions] == ["a", "b"]
    location.before(lambda event: None)  # hooks are part of the snapshot
    assert location.materialize(rules) is not second
    assert location.materialize(rules, final_step=True).final_step


def test_the_final_steps_snapshot_is_the_steps_catalog_built_once(registry: ToolRegistry) -> None:
    location = ToolRegistry(parent=registry)
    location.register({"a": make("a"), "b": make("b")})
    rules = (Rule("b", "*", "deny"),)
    step = location.materialize(rules)
    final = location.materialize(rules, final_step=True)
    assert final.final_step and not step.final_step
    assert final.definitions is step.definitions and final.names == ("a",)  # not filtered nor built again
    assert location.materialize(rules, final_step=True) is final
    registry.register({"c": make("c")})  # a change: a new catalog, and its own final snapshot
    later = location.materialize(rules, final_step=True)
    assert later.final_step and later.names == ("a", "c")


def test_a_placement_with_nothing_of_its_own_shares_its_parents_snapshot_and_asks_its_own_stale_check(
    registry: ToolRegistry,
) -> None:
    location = ToolRegistry(parent=registry)
    location.register({"a": make("a"), "b": make("b")})
    rules = (Rule("b", "*", "deny"),)
    sessions = [ToolRegistry(parent=location) for _ in range(2)]  # two sessions' placements
    shared = [s.materialize(rules) for s in sessions]
    # the Location's catalog, built once for both (its definitions are the same objects)
    assert shared[0].definitions is shared[1].definitions is location.materialize(rules).definitions
    assert shared[0].names == ("a",) and sessions[0].materialize(rules) is shared[0]
    assert sessions[0].materialize(rules, final_step=True).final_step and not shared[0].final_step
    sessions[0].register({"a": make("a2")})  # the session's own tool of the same name: its catalog, its check
    assert shared[0].tool("a") is not None and shared[0].tool("a") is shared[1].tool("a")
    assert sessions[0].current("a") is not location.current("a")
    own = sessions[0].materialize(rules)
    assert own is not shared[0] and own.tool("a") is sessions[0].current("a").tool  # type: ignore[union-attr]
    assert sessions[1].materialize(rules) is shared[1]  # the other session's catalog is unchanged


@pytest.mark.anyio
async def test_a_call_captured_from_the_parent_is_stale_once_the_session_shadows_it(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    from tether.tools import Failed, ToolCall

    session = ToolRegistry(parent=registry)
    registry.register({"a": make("a")})
    step = session.materialize()  # the parent's snapshot, placed in the session
    session.register({"a": make("a2")})  # the session shadows it before the call settles
    outcome = await step.settle(ToolCall(call_id="c1", name="a", input={}), ctx)
    assert isinstance(outcome, Failed) and outcome.kind == "stale"

"""Per-model catalog rules (``ModelCatalog``) and definition hooks: small transforms applied at every materialize."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.tools import ToolRegistry, tool
from tether.tools.internal import DefinitionEvent, ModelCatalog


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


def _opencode_patch_model(model_id: str) -> bool:
    # OpenCode's test (tool/registry.ts): contains "gpt-", and neither "oss" nor "gpt-4"
    return "gpt-" in model_id and "oss" not in model_id and "gpt-4" not in model_id


@pytest.mark.parametrize(
    ("model", "patch"),
    [
        ("openai/gpt-5", True),
        ("openai/gpt-5.1-codex", True),
        ("openrouter/openai/gpt-5-mini", True),
        ("openai/gpt-4o", False),
        ("openai/gpt-4.1", False),
        ("ollama/gpt-oss:20b", False),
        ("anthropic/claude-sonnet-4-5", False),
        ("openai/o3", False),
        ("test/scripted", False),
    ],
)
def test_gpt_models_get_apply_patch_and_others_edit_and_write(model: str, patch: bool) -> None:
    catalog = ModelCatalog()
    assert catalog.decide(model, "apply_patch") is patch
    shown = {
        name for name in ("apply_patch", "edit", "write", "read") if catalog.decide(model, name) is not False
    }
    assert shown == ({"apply_patch", "read"} if patch else {"edit", "write", "read"})


@given(st.text(alphabet="abcgpt-4os/.:5", max_size=16))
def test_the_default_rules_are_opencodes_model_id_test(model_id: str) -> None:
    # the provider ("p") holds none of the tested substrings, so the name decides as OpenCode's model id test does
    catalog = ModelCatalog()
    patch = _opencode_patch_model(model_id)
    assert (catalog.decide(f"p/{model_id}", "apply_patch") is not False) is patch
    assert (catalog.decide(f"p/{model_id}", "edit") is not False) is not patch


def test_config_rules_come_after_the_built_in_ones_and_win() -> None:
    catalog = ModelCatalog.from_config(
        {
            "models": {
                "anthropic/*": {"apply_patch": True, "write": False},
                "*": {"mcp_*": False},
                "openai/gpt-5-nano": {"mcp_time*": True},
            }
        }
    )
    assert catalog.decide("anthropic/claude", "apply_patch") is True
    assert catalog.decide("anthropic/claude", "write") is False
    assert catalog.decide("anthropic/claude", "edit") is None  # shown: a rule names edit only for gpt models
    assert catalog.decide("openai/gpt-5", "mcp_time_now") is False
    assert catalog.decide("openai/gpt-5-nano", "mcp_time_now") is True
    assert catalog.decide("openai/gpt-5-nano", "mcp_git_log") is False


def test_a_malformed_catalog_value_adds_no_rule() -> None:
    # the config models refuse these first; the transform still never trusts the shape it is given
    for value in (None, [], {"models": []}, {"models": {"*": ["edit"]}}, {"models": {"*": {"edit": "no"}}}):
        assert ModelCatalog.from_config(value).rules == ModelCatalog().rules


def test_materialize_hides_what_the_model_rules_hide_and_reuses_the_snapshot() -> None:
    registry = ToolRegistry()
    registry.register({"edit": noop, "write": noop, "apply_patch": noop, "read": noop})
    catalog = ModelCatalog()
    gpt = catalog.for_model("openai/gpt-5")
    claude = catalog.for_model("anthropic/claude-sonnet-4-5")
    assert gpt is catalog.for_model("openai/gpt-5")  # one predicate per name: the cache key stays equal
    first = registry.materialize(visible=gpt)
    assert first.names == ("apply_patch", "read")
    assert registry.materialize(visible=catalog.for_model("openai/gpt-5")) is first
    assert registry.materialize(visible=claude).names == ("edit", "read", "write")


def test_a_model_no_rule_can_hide_from_gets_no_predicate() -> None:
    catalog = ModelCatalog.from_config({"models": {"local/*": {"*": True}}})
    assert catalog.for_model("local/qwen") is None
    assert catalog.for_model("openai/gpt-5") is not None


def test_definition_hooks_change_what_the_model_is_told_and_closing_reveals_the_original() -> None:
    registry = ToolRegistry()
    registry.register({"noop": noop})
    original = registry.materialize().definitions[0]
    seen: list[DefinitionEvent] = []

    def hook(event: DefinitionEvent) -> None:
        seen.append(event)
        event.description += " (checked)"
        event.input_schema["properties"] = {"x": {"type": "string"}}

    with registry.definition(hook):
        (changed,) = registry.materialize().definitions
        assert changed.description == original.description + " (checked)"
        assert changed.input_schema["properties"] == {"x": {"type": "string"}}
        # the hook edited a copy: the tool's own schema is untouched
        assert noop.definition("noop").input_schema == original.input_schema
    assert registry.materialize().definitions == (original,)
    assert [e.tool for e in seen] == ["noop"]


def test_a_definition_hook_that_sets_a_wrong_type_is_not_used() -> None:
    registry = ToolRegistry()
    registry.register({"noop": noop})
    original = registry.materialize().definitions[0]

    def hook(event: DefinitionEvent) -> None:
        event.description = 42  # type: ignore[assignment]
        event.input_schema = "not a schema"  # type: ignore[assignment]

    with registry.definition(hook):
        assert registry.materialize().definitions == (original,)


def test_registrations_carry_their_origin() -> None:
    app = ToolRegistry()
    location = ToolRegistry(parent=app, origin="mcp:time")
    app.register({"a": noop})
    location.register({"b": noop})
    location.register({"c": noop}, origin="plugin:demo")
    effective = location.effective()
    assert {n: e.origin for n, e in effective.items()} == {
        "a": "application",
        "b": "mcp:time",
        "c": "plugin:demo",
    }


_PATTERNS = st.sampled_from(["*", "openai/*", "*gpt-*", "local/?wen", "x/y"])
_TOOLS = st.sampled_from(["*", "edit", "e*", "write", "apply_patch", "read", "?ead"])
_NAMES = ("edit", "write", "apply_patch", "read", "bash", "lead")


@given(
    rules=st.dictionaries(_PATTERNS, st.dictionaries(_TOOLS, st.booleans(), max_size=3), max_size=3),
    model=st.sampled_from(["openai/gpt-5", "openai/gpt-4o", "local/qwen", "x/y", "ollama/gpt-oss"]),
)
def test_the_predicate_of_a_model_agrees_with_each_rule_decision(
    rules: dict[str, dict[str, bool]], model: str
) -> None:
    catalog = ModelCatalog.from_config({"models": rules})
    visible = catalog.for_model(model)
    for name in _NAMES:
        registry = ToolRegistry()
        registry.register({name: noop})
        entry = registry.current(name)
        shown = True if visible is None else visible(entry)
        assert shown == (catalog.decide(model, name) is not False), (name, catalog.rules)


def test_runtimes_without_catalog_rules_share_one_catalog_and_its_predicates() -> None:
    # the predicates (and the decisions they cache) are made once per process, not at each runtime's first step
    first, second = ModelCatalog.from_config(None), ModelCatalog.from_config({"models": {}})
    assert first is second
    assert first.for_model("openai/gpt-5") is second.for_model("openai/gpt-5")
    assert ModelCatalog.from_config({"models": {"x/*": {"read": False}}}) is not first

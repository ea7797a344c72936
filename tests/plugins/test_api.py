"""The plugin capability: what a plugin registers is scoped to its activation, and a plugin's fault is its own."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from tether.errors import UsageError
from tether.plugins import DefinitionEvent, PluginAPI
from tether.plugins.internal import LoadedPlugin, activate
from tether.tools import (
    AfterEvent,
    BeforeEvent,
    Completed,
    Failed,
    Text,
    ToolCall,
    ToolContext,
    ToolFailure,
    ToolRegistry,
    tool,
)

pytestmark = pytest.mark.anyio


@tool
def builtin_read(path: str) -> str:
    """Read a file (the built-in stand-in)."""
    return f"builtin read {path}"


@tool
def plugin_read(path: str) -> str:
    """Read a file, the plugin's way."""
    return f"plugin read {path}"


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def loaded(name: str, plugin: Any) -> LoadedPlugin:
    return LoadedPlugin(name=name, value=f"tests:{name}", plugin=plugin)


@pytest.fixture
def registry(tmp_path: Path) -> ToolRegistry:
    from tether.output import OutputStore

    app = ToolRegistry(output=OutputStore(tmp_path / "out"))
    location = ToolRegistry(parent=app)
    location.register({"read": builtin_read}, origin="builtin")
    return location


def ctx(call_id: str = "call_1") -> ToolContext:
    return ToolContext(session_id="ses_1", agent="build", message_id="msg_1", call_id=call_id)


async def settle(registry: ToolRegistry, name: str, **input: Any) -> Completed | Failed:
    return await registry.materialize().settle(ToolCall(call_id="call_1", name=name, input=input), ctx())


async def run(registry: ToolRegistry, tmp_path: Path, *plugins: LoadedPlugin) -> Any:
    return await activate(registry, root=tmp_path, directory=tmp_path, trusted=False, plugins=plugins)


async def test_a_plugin_tool_wins_its_name_and_closing_reveals_the_previous(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    activation = await run(registry, tmp_path, loaded("reader", lambda api: api.tool("read", plugin_read)))
    assert registry.current("read").origin == "plugin:reader"  # type: ignore[union-attr]
    outcome = await settle(registry, "read", path="a.txt")
    assert isinstance(outcome, Completed) and outcome.content == (Text("plugin read a.txt"),)
    activation.close()
    assert registry.current("read").origin == "builtin"  # type: ignore[union-attr]
    outcome = await settle(registry, "read", path="a.txt")
    assert isinstance(outcome, Completed) and outcome.content == (Text("builtin read a.txt"),)


async def test_of_two_plugins_with_one_name_the_later_wins_and_closing_it_reveals_the_earlier(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    activation = await run(
        registry,
        tmp_path,
        loaded("a", lambda api: api.tool("shout", shout)),
        loaded("b", lambda api: api.tool("shout", plugin_read)),
    )
    assert registry.current("shout").origin == "plugin:b"  # type: ignore[union-attr]
    second = activation.plugins.pop()
    second.close()
    assert registry.current("shout").origin == "plugin:a"  # type: ignore[union-attr]
    activation.close()
    assert registry.current("shout") is None


async def test_an_async_plugin_is_awaited(registry: ToolRegistry, tmp_path: Path) -> None:
    async def plugin(api: PluginAPI) -> None:
        api.tool("shout", shout)

    activation = await run(registry, tmp_path, loaded("async", plugin))
    assert activation.notices == [] and registry.current("shout") is not None


async def test_a_plugin_that_raises_is_skipped_with_what_it_registered_and_reported(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    def broken(api: PluginAPI) -> None:
        api.tool("shout", shout)
        api.tool("read", plugin_read)
        raise RuntimeError("no config for me")

    activation = await run(
        registry, tmp_path, loaded("broken", broken), loaded("fine", lambda api: api.tool("fine", shout))
    )
    assert activation.notices == [
        "plugin broken (tests:broken): raised RuntimeError: no config for me; skipped"
    ]
    assert registry.current("shout") is None
    assert registry.current("read").origin == "builtin"  # type: ignore[union-attr]
    assert registry.current("fine").origin == "plugin:fine"  # type: ignore[union-attr]


async def test_a_plugin_registering_an_invalid_value_is_reported_not_fatal(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    activation = await run(registry, tmp_path, loaded("bad", lambda api: api.tool("x", lambda: "not a tool")))
    assert len(activation.notices) == 1 and "plugin bad" in activation.notices[0]
    assert "RegistrationError" in activation.notices[0]


async def test_the_plugin_sees_a_narrow_capability_and_nothing_after_its_location_closes(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    kept: list[PluginAPI] = []
    activation = await run(registry, tmp_path, loaded("keeper", kept.append))
    (api,) = kept
    public = {n for n in dir(api) if not n.startswith("_")}
    assert public == {
        "after",
        "before",
        "close",
        "directory",
        "name",
        "on_definition",
        "registered",
        "root",
        "tool",
    }
    assert api.root == tmp_path and api.name == "keeper"
    activation.close()
    with pytest.raises(UsageError, match="keeper: its Location is closed"):
        api.tool("late", shout)
    assert registry.current("late") is None


async def test_execute_hooks_see_and_change_calls(registry: ToolRegistry, tmp_path: Path) -> None:
    seen: list[str] = []

    def before(event: BeforeEvent) -> None:
        seen.append(f"before {event.tool} {event.input}")
        event.input = {"text": event.input["text"] + "!"}

    async def after(event: AfterEvent) -> None:
        seen.append(f"after {event.tool}")
        assert isinstance(event.outcome, Completed)
        event.outcome = Completed(output=None, content=(Text(f"[{event.outcome.content[0].text}]"),))  # type: ignore[union-attr]

    def plugin(api: PluginAPI) -> None:
        api.tool("shout", shout)
        api.before(before)
        api.after(after)

    activation = await run(registry, tmp_path, loaded("hooks", plugin))
    outcome = await settle(registry, "shout", text="hi")
    assert isinstance(outcome, Completed) and outcome.content == (Text("[HI!]"),)
    assert seen == ["before shout {'text': 'hi'}", "after shout"]
    activation.close()
    outcome = await settle(registry, "read", path="x")
    assert isinstance(outcome, Completed) and len(seen) == 2  # the hooks closed with the plugin


async def test_an_execute_hook_that_raises_fails_that_call_naming_the_plugin(
    registry: ToolRegistry, tmp_path: Path
) -> None:
    def before(event: BeforeEvent) -> None:
        if event.input.get("path") == "secret":
            raise KeyError("lookup failed")

    await run(registry, tmp_path, loaded("nosy", lambda api: api.before(before)))
    failed = await settle(registry, "read", path="secret")
    assert isinstance(failed, Failed) and failed.kind == "defect"
    assert failed.error == "Tool execution failed: before hook raised plugin nosy: KeyError: 'lookup failed'"
    fine = await settle(registry, "read", path="other")
    assert isinstance(fine, Completed)


async def test_a_tool_failure_from_a_hook_keeps_its_message(registry: ToolRegistry, tmp_path: Path) -> None:
    def before(event: BeforeEvent) -> None:
        raise ToolFailure("reading is paused by the policy plugin; try again later")

    await run(registry, tmp_path, loaded("policy", lambda api: api.before(before)))
    failed = await settle(registry, "read", path="a")
    assert isinstance(failed, Failed) and failed.kind == "tool"
    assert failed.error == "reading is paused by the policy plugin; try again later"


async def test_a_definition_hook_that_raises_is_skipped_for_that_tool_and_reported_once(
    registry: ToolRegistry, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    original = registry.materialize().definitions

    def hook(event: DefinitionEvent) -> None:
        event.description = "half-changed"
        event.input_schema["properties"] = {}
        raise ValueError("cannot describe " + event.tool)

    def renamer(event: DefinitionEvent) -> None:
        event.description = "described by renamer"

    await run(
        registry,
        tmp_path,
        loaded("broken", lambda api: api.on_definition(hook)),
        loaded("renamer", lambda api: api.on_definition(renamer)),
    )
    with caplog.at_level(logging.WARNING, logger="tether.plugins"):
        for _ in range(2):
            registry._materialized.clear()  # pyright: ignore[reportPrivateUsage]  # build the catalog twice
            (definition,) = registry.materialize().definitions
            assert definition.input_schema == original[0].input_schema  # the broken hook's edit is undone
            assert definition.description == "described by renamer"  # later hooks still run
    warnings = [r.getMessage() for r in caplog.records if r.name == "tether.plugins"]
    assert warnings == [
        "plugin broken: its tool.definition hook raised ValueError: cannot describe read for tool read; "
        "the hook is skipped for it"
    ]


async def test_an_async_plugin_that_hangs_is_skipped_at_its_deadline(
    registry: ToolRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    import tether.plugins._activate

    monkeypatch.setattr(tether.plugins._activate, "ACTIVATION_DEADLINE", 0.01)

    async def hangs(api: PluginAPI) -> None:
        api.tool("shout", shout)
        await anyio.sleep_forever()

    with anyio.fail_after(5):
        activation = await run(
            registry, tmp_path, loaded("slow", hangs), loaded("fine", lambda api: api.tool("f", shout))
        )
    assert activation.notices == [
        "plugin slow (tests:slow): did not finish activating within 0.01 s; skipped"
    ]
    assert registry.current("shout") is None and registry.current("f") is not None

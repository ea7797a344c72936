"""Per-model catalog rules through real turns: the tool names in each recorded request are what the model saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.config import load_config
from tether.testing import ScriptedModel, tool_call

from ..cli.conftest import Cli

EDITING = {"apply_patch", "edit", "write"}


def scripted(model_id: str, steps: list[Any]) -> ScriptedModel:
    model = ScriptedModel(steps)
    model.model_id = model_id  # the name the rules match: test/<model_id>
    return model


async def seen_tools(tmp_path: Path, model: ScriptedModel, config: Any = None) -> list[set[str]]:
    project = tmp_path / "project"
    project.mkdir(parents=True, exist_ok=True)
    (project / "a.txt").write_text("one\n")
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        session = await rt.sessions.create(project)
        with model, anyio.fail_after(10):
            await session.prompt("look", model=model)
    return [{d.name for d in request.tools} for request in model.requests]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("model_id", "shown"),
    [
        ("gpt-5", {"apply_patch"}),
        ("gpt-5.1-codex-mini", {"apply_patch"}),
        ("gpt-4o", {"edit", "write"}),
        ("gpt-oss-120b", {"edit", "write"}),
        ("claude-sonnet-4-5", {"edit", "write"}),
    ],
)
async def test_every_step_of_a_turn_shows_the_models_editing_tools(
    tmp_path: Path, model_id: str, shown: set[str]
) -> None:
    model = scripted(model_id, [[tool_call("read", {"path": "a.txt"})], "done"])
    steps = await seen_tools(tmp_path, model)
    assert len(steps) == 2
    for names in steps:
        assert names & EDITING == shown
        assert {"read", "bash", "glob", "grep"} <= names


@pytest.mark.anyio
async def test_config_rules_change_what_a_model_sees(tmp_path: Path) -> None:
    user = tmp_path / "user.json"
    user.write_text(
        json.dumps(
            {"catalog": {"models": {"test/claude-*": {"apply_patch": True, "write": False, "bash": False}}}}
        )
    )
    config = load_config(tmp_path, user_file=user, environ={})
    steps = await seen_tools(tmp_path, scripted("claude-opus", ["done"]), config)
    assert steps[0] & EDITING == {"apply_patch", "edit"} and "bash" not in steps[0]
    steps = await seen_tools(tmp_path / "other", scripted("gpt-5", ["done"]), config)
    assert steps[0] & EDITING == {"apply_patch"} and "bash" in steps[0]


@pytest.mark.anyio
async def test_a_call_to_a_tool_hidden_from_the_model_is_an_unknown_tool(tmp_path: Path) -> None:
    from tether.session import ToolPart

    project = tmp_path / "project"
    project.mkdir()
    model = scripted("gpt-5", [[tool_call("write", {"path": "b.txt", "content": "x"})], "done"])
    async with Runtime(data_dir=tmp_path / "data") as rt:
        session = await rt.sessions.create(project, rules=[("*", "*", "allow")])
        with model, anyio.fail_after(10):
            await session.prompt("write", model=model)
        (part,) = [p for m in await session.messages() for p in m.parts if isinstance(p, ToolPart)]
    assert part.state == "error" and part.error is not None and part.error.startswith("Unknown tool: write")
    assert not (project / "b.txt").exists()


def test_tether_run_and_tools_apply_the_models_rules(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    gpt = cli.script([{"echo": "tools"}], name="gpt-5.json")  # the model is scripted/gpt-5.json
    other = cli.script([{"echo": "tools"}], name="local.json")
    for script, shown in ((gpt, {"apply_patch"}), (other, {"edit", "write"})):
        ran = cli.run("run", "which tools?", "--model", script, "--dir", str(project), "--quiet")
        assert ran.code == 0, ran.output
        assert set(ran.stdout.split()) & EDITING == shown, ran.stdout

    listed = cli.json("tools", "--model", "openai/gpt-5", "--format", "json", "--dir", str(project))
    assert listed["model"] == "openai/gpt-5"
    tools = {t["name"]: t for t in listed["tools"]}
    assert tools["apply_patch"]["visible"] and not tools["edit"]["visible"]
    assert tools["edit"]["hidden_because"] == (
        'hidden from model openai/gpt-5 by "*gpt-*": {"edit": false} (built-in)'
    )
    listed = cli.json("tools", "--format", "json", "--dir", str(project))
    assert listed["model"] is None and all(t["visible"] for t in listed["tools"])


def test_tether_tool_call_is_no_models_choice(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    patch = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch"
    done = cli.run(
        "tool", "call", "apply_patch", json.dumps({"patch_text": patch}), "--dir", str(project), "--yes"
    )
    assert done.code == 0, done.output
    assert (project / "new.txt").read_text() == "hello\n"


def test_an_untrusted_projects_catalog_rules_are_ignored_and_said(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    cli.configure(project, {"catalog": {"models": {"*": {"read": False}}}})
    listed = cli.run("tools", "--model", "openai/gpt-5", "--format", "json", "--dir", str(project))
    assert listed.code == 0, listed.output
    assert {t["name"]: t["visible"] for t in json.loads(listed.stdout)["tools"]}["read"] is True
    assert "catalog" in listed.stderr and "tether trust" in listed.stderr

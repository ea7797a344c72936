"""``tether tools``: the origin of each tool, ``--format json`` and ``--model`` (the per-model catalog rules)."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import Cli


def test_json_lists_each_tool_with_origin_visibility_and_the_deciding_rule(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    shown = cli.json(
        "tools",
        "--agent",
        "explore",
        "--model",
        "anthropic/claude-x",
        "--format",
        "json",
        "--dir",
        str(project),
    )
    assert shown["agent"] == "explore" and shown["model"] == "anthropic/claude-x" and shown["notices"] == []
    tools = {t["name"]: t for t in shown["tools"]}
    assert {t["origin"] for t in tools.values()} == {"builtin"}
    assert tools["read"]["visible"] and tools["read"]["hidden_because"] is None
    # the agent's rules are explained first; the model's rules only for what the agent shows
    assert tools["bash"]["hidden_because"] == 'denied by rule * "*" -> deny (agent)'
    assert tools["apply_patch"]["hidden_because"] == 'denied by rule * "*" -> deny (agent)'
    build = cli.json("tools", "--model", "anthropic/claude-x", "--format", "json", "--dir", str(project))
    tools = {t["name"]: t for t in build["tools"]}
    assert tools["apply_patch"]["hidden_because"] == (
        'hidden from model anthropic/claude-x by "*": {"apply_patch": false} (built-in)'
    )
    assert tools["edit"]["visible"] and tools["bash"]["visible"]
    assert set(tools["read"]) == {"name", "origin", "visible", "hidden_because", "description"}


def test_the_table_names_the_model_and_the_origin(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    cli.configure(project, {"catalog": {}})  # untrusted, and empty: nothing to ignore
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tether.json").write_text(
        '{"model": "openai/gpt-5", "catalog": {"models": {"openai/*": {"grep": false}}}}'
    )
    result = cli.run("tools", "--dir", str(project))
    assert result.code == 0, result.output
    assert "catalog of agent build for model openai/gpt-5" in result.stdout
    assert re.search(
        r"^edit\s+hidden\s+hidden from model openai/gpt-5 by .*\(built-in\)\s+builtin$", result.stdout, re.M
    )
    assert re.search(
        r'^grep\s+hidden\s+hidden from model openai/gpt-5 by "openai/\*": \{"grep": false\} \(config catalog.models\)',
        result.stdout,
        re.M,
    )
    assert re.search(r"^read\s+yes\s+.*\s+builtin$", result.stdout, re.M)


def test_an_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    result = Cli(tmp_path).run("tools", "--format", "yaml", "--dir", str(tmp_path))
    assert result.code == 2
    assert "--format must be text or json, not 'yaml'" in result.stderr

"""``tether config schema|show`` and project discovery through the real command (a subprocess per run)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with a config at its root and a package below."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "tether.jsonc").write_text(
        '{\n  // the team\'s model\n  "model": "openai/gpt-5",\n  "tool_output": {"max_lines": 100,},\n}\n',
        encoding="utf-8",
    )
    return root


def _user_model(cli: Any) -> None:
    (cli.tmp / "config").mkdir(exist_ok=True)
    (cli.tmp / "config" / "tether.json").write_text('{"model": "openai/gpt-5"}', encoding="utf-8")


def test_schema_prints_the_committed_json_schema(cli: Any) -> None:
    result = cli.run("config", "schema")
    assert result.code == 0, result.output
    assert result.stdout == (DOCS / "tether.schema.json").read_text(encoding="utf-8")
    assert json.loads(result.stdout)["title"] == "tether.json"
    table = cli.run("config", "schema", "--reference")
    assert table.stdout.startswith("| key | type | default | meaning |")


def test_show_from_a_subdirectory_names_the_root_and_where_each_key_comes_from(cli: Any, repo: Path) -> None:
    _user_model(cli)  # an untrusted project's model applies only when it is the user's own
    result = cli.run("config", "show", "--json", cwd=repo / "pkg")
    assert result.code == 0, result.output
    report = json.loads(result.stdout)
    file = str(repo.resolve() / "tether.jsonc")
    assert report["project"] == str(repo.resolve())
    assert report["trusted"] is False
    assert report["files"] == [str(cli.tmp / "config" / "tether.json"), file]
    rows = {row["key"]: (row["value"], row["from"]) for row in report["keys"]}
    assert rows["model"] == ("openai/gpt-5", file)
    assert rows["tool_output.max_lines"] == (100, file)
    assert rows["tool_output.max_bytes"] == (51200, "default")
    assert rows["default_agent"] == ("build", "default")
    text = cli.run("config", "show", "--dir", str(repo / "pkg"))
    assert f"project {repo.resolve()} (not trusted" in text.stdout
    assert f'model = "openai/gpt-5"  # {file}' in text.stdout


def test_show_reports_a_misspelled_key_as_one_line(cli: Any, repo: Path) -> None:
    (repo / "tether.jsonc").write_text(
        '{\n  "provider": {"work": {\n    "baseurl": "x"}}}\n', encoding="utf-8"
    )
    result = cli.run("config", "show", cwd=repo / "pkg")
    assert result.code == 2
    assert result.stderr == (
        f"error: configuration: {repo.resolve() / 'tether.jsonc'}:3 at provider.work.baseurl: "
        'unknown key "baseurl"; did you mean "base_url"?\n'
    )
    missing = cli.run("config", "show", "--dir", str(repo / "nope"))
    assert missing.code == 2 and "is not a directory" in missing.stderr


def test_trust_from_a_subdirectory_trusts_the_project_root(cli: Any, repo: Path) -> None:
    (repo / "tether.jsonc").write_text('{"shell": "/bin/sh"}', encoding="utf-8")
    before = cli.run("config", "show", cwd=repo / "pkg")
    assert f"ignored shell in {repo.resolve() / 'tether.jsonc'}" in before.stderr
    assert f"tether trust {repo.resolve()})" in before.stderr
    trusted = cli.run("trust", cwd=repo / "pkg")
    assert trusted.code == 0, trusted.output
    assert f"trusted {repo.resolve()}:" in trusted.stdout
    assert cli.run("trust", "--list").stdout.split() == [str(repo.resolve())]
    after = cli.json("config", "show", "--json", "--dir", str(repo / "pkg"))
    assert after["trusted"] is True
    assert {row["key"]: row["value"] for row in after["keys"]}["shell"] == "/bin/sh"


def test_a_run_in_a_subdirectory_reads_the_roots_instructions(cli: Any, repo: Path) -> None:
    (repo / "AGENTS.md").write_text("Root rules.\n", encoding="utf-8")
    (repo / "pkg" / "CLAUDE.md").write_text("Package rules.\n", encoding="utf-8")
    cli.env.pop("OPENAI_API_KEY", None)
    _user_model(cli)
    result = cli.run("run", "--show-prompt", cwd=repo / "pkg")  # the model comes from the config
    assert result.code == 0, result.output
    assert f"Instructions from: {repo.resolve() / 'AGENTS.md'}\nRoot rules." in result.stdout
    assert f"Instructions from: {repo.resolve() / 'pkg' / 'CLAUDE.md'}\nPackage rules." in result.stdout


def test_a_config_planted_in_a_world_writable_parent_is_not_the_projects(cli: Any, tmp_path: Path) -> None:
    shared = tmp_path / "shared"  # stands for /tmp
    (shared / ".tether").mkdir(parents=True)
    shared.chmod(0o1777)
    (shared / ".tether" / "tether.json").write_text('{"model": "planted/model"}', encoding="utf-8")
    (shared / "AGENTS.md").write_text("PLANTED INSTRUCTIONS\n", encoding="utf-8")
    project = shared / "x" / "proj"
    project.mkdir(parents=True)
    report = cli.json("config", "show", "--json", "--dir", str(project))
    assert report["project"] == str(project.resolve())
    assert report["files"] == []
    shown = cli.run("run", "--show-prompt", "--model", "openai/gpt-5", "--dir", str(project))
    assert shown.code == 0, shown.output
    assert "PLANTED" not in shown.stdout


def test_trust_remove_from_a_subdirectory_removes_the_root(cli: Any, repo: Path) -> None:
    assert cli.run("trust", str(repo / "pkg")).code == 0
    removed = cli.run("trust", "--remove", str(repo / "pkg"))
    assert removed.code == 0, removed.output
    assert removed.stdout.strip() == f"removed {repo.resolve()}"
    assert cli.run("trust", "--list").stdout.strip() == ""
    again = cli.run("trust", "--remove", str(repo / "pkg"))
    assert again.code == 2 and f"{(repo / 'pkg').resolve()} is not a trusted project" in again.stderr

"""``tether permissions --explain ACTION`` says what the tools will do: a tool's name is explained as the action that
tool asks, a name no built-in asks says so, and a misspelled built-in action is refused as the config refuses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_explain_write_explains_the_edit_action_the_write_tool_asks(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"write": "deny"}})
    result = cli.run("permissions", "--explain", "write", "x.py", "--dir", str(project))
    assert result.code == 0, result.output
    assert "agent build: edit: deny" in result.stdout
    assert 'x.py: deny by edit "*" (' in result.stdout
    assert (
        '"write" is read as "edit" (in tether.json too). edit is asked by the write, edit and apply_patch'
        in (result.stdout)
    )


def test_explain_says_when_no_built_in_tool_asks_an_action(cli: Any, project: Path) -> None:
    result = cli.run("permissions", "--explain", "github_create_issue", "*", "--dir", str(project))
    assert result.code == 0, result.output
    assert "No built-in tool asks github_create_issue: only an MCP tool of that name" in result.stdout
    result = cli.run("permissions", "--explain", "websearch", "q", "--dir", str(project))
    assert "No tether tool asks websearch (an OpenCode permission key" in result.stdout
    result = cli.run("permissions", "--explain", "grep", "TODO", "--dir", str(project))
    assert "grep is asked by the grep tool, with its pattern." in result.stdout


def test_explain_and_add_refuse_a_misspelled_action_naming_the_right_one(cli: Any, project: Path) -> None:
    result = cli.run("permissions", "--explain", "Bash", "ls", "--dir", str(project))
    assert result.code == 2
    assert 'unknown permission "Bash"; did you mean "bash"?' in result.stderr
    result = cli.run("permissions", "add", "externalDirectory", "/srv/*", "--dir", str(project))
    assert result.code == 2
    assert 'did you mean "external_directory"?' in result.stderr
    added = cli.run("permissions", "add", "write", "src/*", "--dir", str(project))
    assert added.code == 0, added.output
    assert '"write" is read as "edit", as tether.json reads it.' in added.stdout
    listed = cli.run("permissions", "list", "--dir", str(project))
    assert "edit" in listed.stdout and "write" not in listed.stdout and "external" not in listed.stdout

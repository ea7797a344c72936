"""Permission keys: a tool's name is read as the action it asks, a misspelled built-in action is an error naming the
right key, and any other name (an MCP tool's, a plugin's action, a wildcard) is taken as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.config import load_config, misspelled_permission, parse_config, parse_permission
from tether.errors import ConfigError
from tether.permissions import Rule


@pytest.mark.parametrize(
    ("key", "action"),
    [("write", "edit"), ("apply_patch", "edit"), ("patch", "edit"), ("multiedit", "edit"), ("ls", "list")],
)
def test_a_tool_name_is_read_as_the_action_its_tool_asks(key: str, action: str) -> None:
    assert parse_permission({key: "deny"}) == (Rule(action, "*", "deny"),)
    assert parse_permission({key: {"src/*": "ask"}}) == (Rule(action, "src/*", "ask"),)
    config = parse_config(
        {"tools": {key: False}, "agent": {"plan": {"permission": {key: "allow"}}}}, file="t.json"
    )
    assert config.permission == (Rule(action, "*", "deny"),)
    assert config.agents["plan"].permission == (Rule(action, "*", "allow"),)


@pytest.mark.parametrize(
    "key",
    [
        "github_create_issue",
        "github_*",
        "todo_read",  # the MCP server "todo"'s tool "read"
        "plan_edit",  # the MCP server "plan"'s tool "edit": reserved keys are not matched one letter off
        "deploy",  # a plugin's ctx.ask("deploy", ...)
        "exit",
        "lint",
        "hash",
        "edits",
        "web_fetch",
        "*",
        "Bash*",
        "Foo(bar)",
        "websearch",
        "plan_enter",
        "execute",
    ],
)
def test_a_name_that_is_not_a_misspelling_is_taken_as_written(key: str) -> None:
    assert misspelled_permission(key) is None
    assert parse_permission({key: "deny"}) == (Rule(key, "*", "deny"),)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("Edit", 'unknown permission "Edit"; did you mean "edit"?'),
        ("BASH", 'unknown permission "BASH"; did you mean "bash"?'),
        ("externalDirectory", 'unknown permission "externalDirectory"; did you mean "external_directory"?'),
        ("external-directory", 'unknown permission "external-directory"; did you mean "external_directory"?'),
        ("External Directory", 'unknown permission "External Directory"; did you mean "external_directory"?'),
        ("WebFetch", 'unknown permission "WebFetch"; did you mean "webfetch"?'),
        ("bsah", 'unknown permission "bsah"; did you mean "bash"?'),
        ("Bsah", 'unknown permission "Bsah"; did you mean "bash"?'),
        ("external_directroy", 'unknown permission "external_directroy"; did you mean "external_directory"?'),
        ("webfetch_privat", 'unknown permission "webfetch_privat"; did you mean "webfetch_private"?'),
        ("todowrites", 'unknown permission "todowrites"; did you mean "todowrite"?'),
        ("doomloop", 'unknown permission "doomloop"; did you mean "doom_loop"?'),
        ("plan_exti", 'unknown permission "plan_exti"; did you mean "plan_exit"?'),
        ("Write", 'unknown permission "Write"; did you mean "edit"? ("write" is read as "edit")'),
        ("wrtie", 'unknown permission "wrtie"; did you mean "edit"? ("write" is read as "edit")'),
        ("LS", 'unknown permission "LS"; did you mean "list"? ("ls" is read as "list")'),
        (
            "Bash(git *)",
            '"Bash(git *)" is Claude Code\'s rule form; tether writes the pattern under the action: '
            '"bash": {"git *": "allow" | "ask" | "deny"}',
        ),
        (
            "Write()",
            '"Write()" is Claude Code\'s rule form; tether writes the pattern under the action: '
            '"edit": {"*": "allow" | "ask" | "deny"}',
        ),
        (
            "read_mcp_resource",
            '"read_mcp_resource" is a tool that asks "read" with the resource mcp:<server>:<uri>, as file reads do '
            'with a path; write "read": {"mcp:*": "deny"} (or "mcp:<server>:*") instead',
        ),
    ],
)
def test_a_misspelled_built_in_action_is_an_error_naming_the_right_key(key: str, message: str) -> None:
    assert misspelled_permission(key) == message
    with pytest.raises(ConfigError) as caught:
        parse_permission({"bash": "ask", key: "deny"}, file="t.json")
    assert caught.value.message.endswith(f": {message}")
    assert caught.value.key in (f"permission.{key}", f'permission["{key}"]')


def test_the_error_names_the_file_line_and_key_wherever_the_key_is_written(tmp_path: Path) -> None:
    project = tmp_path / "project"
    user = tmp_path / "user" / "tether.json"
    user.parent.mkdir()
    user.write_text('{\n  "permission": {\n    "externalDirectory": "deny"\n  }\n}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(project, user_file=user, environ={})
    assert str(caught.value) == (
        f"{user}:3 at permission.externalDirectory: unknown permission "
        '"externalDirectory"; did you mean "external_directory"?'
    )
    user.write_text(json.dumps({"agent": {"build": {"tools": {"Edit": False}}}}))
    with pytest.raises(ConfigError, match=r'at agent\.build\.tools\.Edit: unknown permission "Edit"'):
        load_config(project, user_file=user, environ={})
    user.write_text("{}")
    with pytest.raises(ConfigError, match=r'\$TETHER_PERMISSION.*did you mean "bash"'):
        load_config(project, user_file=user, environ={"TETHER_PERMISSION": '{"bsah": "deny"}'})


def test_a_hostile_key_is_checked_in_bounded_time_and_shown_clipped() -> None:
    long = "e" * 100_000
    assert misspelled_permission(long) is None
    message = misspelled_permission("Edit(" + "x" * 1000 + ")")
    assert message is not None and len(message) < 400

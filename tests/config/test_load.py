"""Loading tether.json: shapes of the permission key, merging user and project files, precise errors."""

import json
from pathlib import Path

import pytest

from tether.config import PROJECT_CONFIG, Config, load_config, parse_config, parse_permission
from tether.errors import ConfigError
from tether.permissions import Rule


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return tmp_path / "project"


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    return tmp_path / "user" / "tether.json"


def load(project: Path, user_file: Path) -> Config:
    """A trusted project: these tests are about merging (tests/config/test_untrusted.py is about trust)."""
    return load_config(project, user_file=user_file, environ={}, trusted=True)


def test_no_files_is_an_empty_config(project: Path, user_file: Path) -> None:
    config = load(project, user_file)
    assert config == Config(project_trusted=True, root=project)
    assert load_config(project, user_file=user_file, environ={}) == Config(root=project)
    assert load_config(None, user_file=user_file, environ={}) == Config()
    assert config.get("model") is None


def test_a_bare_string_means_every_action_on_everything() -> None:
    assert parse_permission("allow") == (Rule("*", "*", "allow"),)


def test_key_order_is_rule_order_for_strings_and_objects() -> None:
    value = {"edit": "ask", "bash": {"git *": "allow", "rm *": "deny", "*": "ask"}, "*": "deny"}
    assert parse_permission(value) == (
        Rule("edit", "*", "ask"),
        Rule("bash", "git *", "allow"),
        Rule("bash", "rm *", "deny"),
        Rule("bash", "*", "ask"),
        Rule("*", "*", "deny"),
    )


def test_home_is_expanded_at_the_start_of_a_pattern(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    home = tmp_path.as_posix()
    rules = parse_permission({"external_directory": {"~/src/*": "allow", "$HOME": "allow", "a/~/b": "deny"}})
    assert [r.resource for r in rules] == [f"{home}/src/*", home, "a/~/b"]


def test_project_rules_come_after_user_rules_and_other_keys_merge_deep(
    project: Path, user_file: Path
) -> None:
    write(
        user_file,
        json.dumps({"permission": {"bash": "ask"}, "model": "a/b", "tool_output": {"max_lines": 10}}),
    )
    write(
        project / PROJECT_CONFIG,
        json.dumps({"permission": {"bash": {"git *": "allow"}}, "tool_output": {"max_bytes": 5}}),
    )
    config = load(project, user_file)
    assert config.permission == (Rule("bash", "*", "ask"), Rule("bash", "git *", "allow"))
    assert config.get("model") == "a/b"
    assert config.get("tool_output") == {"max_lines": 10, "max_bytes": 5}
    assert config.files == (user_file, project / PROJECT_CONFIG)


def test_agent_sections_merge_field_by_field(project: Path, user_file: Path) -> None:
    write(
        user_file,
        json.dumps({"agent": {"build": {"steps": 5, "permission": {"edit": "ask"}, "prompt": "p"}}}),
    )
    write(
        project / PROJECT_CONFIG,
        json.dumps({"agent": {"build": {"maxSteps": 9, "permission": {"bash": "deny"}}}}),
    )
    build = load(project, user_file).agents["build"]
    assert build.steps == 9
    assert build.prompt == "p"
    assert build.permission == (Rule("edit", "*", "ask"), Rule("bash", "*", "deny"))


def test_legacy_tools_map_comes_before_explicit_permission() -> None:
    config = parse_config(
        {"tools": {"write": False, "bash": True}, "permission": {"edit": "ask"}}, file="t.json"
    )
    assert config.permission == (
        Rule("edit", "*", "deny"),
        Rule("bash", "*", "allow"),
        Rule("edit", "*", "ask"),
    )


def test_environment_permission_comes_last(project: Path, user_file: Path) -> None:
    write(project / PROJECT_CONFIG, json.dumps({"permission": "ask"}))
    config = load_config(
        project, user_file=user_file, environ={"TETHER_PERMISSION": '{"bash": "deny"}'}, trusted=True
    )
    assert config.permission == (Rule("*", "*", "ask"), Rule("bash", "*", "deny"))
    with pytest.raises(ConfigError, match=r"\$TETHER_PERMISSION"):
        load_config(project, user_file=user_file, environ={"TETHER_PERMISSION": "{"})


def test_an_unknown_effect_names_the_file_line_and_key_path(project: Path, user_file: Path) -> None:
    path = write(
        project / PROJECT_CONFIG,
        '{\n  "model": "x/y",\n  "permission": {\n    "edit": "ask",\n    "bash": {\n      "git *": "allow",\n'
        '      "rm *": "forbid"\n    }\n  }\n}\n',
    )
    with pytest.raises(ConfigError) as caught:
        load(project, user_file)
    error = caught.value
    assert error.file == str(path)
    assert error.key == 'permission.bash["rm *"]'
    assert error.line == 7
    assert (
        str(error)
        == f'{path}:7 at permission.bash["rm *"]: unknown effect \'forbid\'; expected "allow", "ask" or "deny"'
    )


def test_a_malformed_shape_names_the_key(user_file: Path, project: Path) -> None:
    write(user_file, '{"permission": {"read": ["*"]}}')
    with pytest.raises(ConfigError) as caught:
        load(project, user_file)
    assert caught.value.key == "permission.read"
    assert caught.value.line == 1
    assert "got a list" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "key", "message"),
    [
        ([], None, "must be a JSON object"),
        ({"permission": 3}, "permission", "got a number"),
        ({"permission": "yes"}, "permission", "unknown effect 'yes'"),
        ({"permission": {"bash": {"ls": True}}}, "permission.bash.ls", "unknown effect a boolean"),
        ({"permission": {"": "allow"}}, 'permission[""]', "cannot be empty"),
        ({"agent": []}, "agent", "expected an object, got a list"),
        (
            {"agent": {"build": {"permission": {"edit": "nope"}}}},
            "agent.build.permission.edit",
            "unknown effect",
        ),
        ({"agent": {"build": {"steps": 0}}}, "agent.build.steps", "at least 1"),
        (
            {"agent": {"build": {"steps": True}}},
            "agent.build.steps",
            "expected a whole number, got a boolean",
        ),
        ({"agent": {"build": {"mode": "sometimes"}}}, "agent.build.mode", "primary"),
        ({"agent": {"build": {"hidden": "no"}}}, "agent.build.hidden", "true or false"),
        ({"tools": {"bash": "yes"}}, "tools.bash", "true or false"),
    ],
)
def test_config_errors_point_at_the_key(value: object, key: str | None, message: str) -> None:
    text = json.dumps(value, indent=2)
    with pytest.raises(ConfigError, match=message) as caught:
        parse_config(json.loads(text), file="tether.json", text=text)
    assert caught.value.file == "tether.json"
    assert caught.value.key == key
    if key is not None:
        assert caught.value.line is not None and caught.value.line > 1


def test_broken_json_names_the_file_and_line(project: Path, user_file: Path) -> None:
    path = write(
        project / PROJECT_CONFIG, '{\n  "permission": {\n    "edit": "ask"\n    "bash": "ask"\n  }\n}\n'
    )
    with pytest.raises(ConfigError) as caught:
        load(project, user_file)
    assert caught.value.file == str(path)
    assert caught.value.line == 4
    assert "invalid JSON" in str(caught.value)


def test_non_utf8_file_is_a_config_error(project: Path, user_file: Path) -> None:
    path = project / PROJECT_CONFIG
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"model": "\xff"}')
    with pytest.raises(ConfigError, match="not UTF-8"):
        load(project, user_file)


def test_unknown_keys_are_kept_for_other_packages() -> None:
    config = parse_config({"shell": "/bin/zsh", "instructions": ["A.md"]}, file="t.json")
    assert config.get("shell") == "/bin/zsh"
    assert config.data["instructions"] == ["A.md"]


def test_user_config_dir_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tether.config import user_config_path

    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "cfg"))
    assert user_config_path() == tmp_path / "cfg" / "tether.json"


@pytest.mark.parametrize(
    ("doc", "key"),
    [
        ({"model": 3}, "model"),
        ({"model": "gpt-5"}, "model"),
        ({"shell": ""}, "shell"),
        ({"default_agent": ["build"]}, "default_agent"),
        ({"instructions": "AGENTS.md"}, "instructions"),
        ({"tool_output": {"max_lines": "2000"}}, "tool_output.max_lines"),
        ({"tool_output": {"max_bytes": 0}}, "tool_output.max_bytes"),
        ({"tool_output": {"max_chars": 10}}, "tool_output.max_chars"),
        ({"tool_output": 50}, "tool_output"),
    ],
)
def test_keys_read_by_other_packages_are_validated(doc: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=f"at {key}:"):
        parse_config(doc, file="tether.json", text=json.dumps(doc))


def test_valid_scalar_keys_pass() -> None:
    doc = {
        "model": "ollama/qwen3:8b",
        "default_agent": "plan",
        "shell": "/bin/sh",
        "instructions": ["docs/*.md"],
        "tool_output": {"max_lines": 100, "max_bytes": 4096},
    }
    assert parse_config(doc, file="tether.json").get("tool_output") == {"max_lines": 100, "max_bytes": 4096}

"""Every unknown key of a config file is reported at once, each with its line and its did-you-mean (issue 37): a
file with three misspellings is fixed in one round, not three runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.config import load_config, parse_config
from tether.config._validate import MORE_UNKNOWN
from tether.errors import ConfigError


def _message(value: dict[str, object], text: str | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(value, file="tether.json", text=text)
    assert "\n" not in caught.value.message
    return caught.value


def test_every_unknown_key_is_named_with_its_line_and_guess() -> None:
    value = {
        "modle": "openai/gpt-5",
        "shel": "/bin/sh",
        "agent": {"build": {"stpes": 3}},
        "provider": {"work": {"baseurl": "http://127.0.0.1:1/v1"}},
        "zzz": 1,
    }
    text = json.dumps(value, indent=2)
    error = _message(json.loads(text), text)
    assert error.key == "modle" and error.line == 2
    assert error.message == (
        'tether.json:2 at modle: unknown key "modle"; did you mean "model"? Also unknown: '
        '"shel" (line 3; did you mean "shell"?), agent.build.stpes (line 6; did you mean "steps"?), '
        'provider.work.baseurl (line 11; did you mean "base_url"?), '
        '"zzz" (line 14; expected one of: $schema, model, default_agent, shell, sandbox, permission, tools, agent, '
        "instructions, tool_output, store, output_dir, provider, catalog, mcp, mcpServers, mcp_serve, terminal, "
        "telemetry)"
    )


def test_a_first_error_of_another_kind_still_lists_the_unknown_keys() -> None:
    error = _message({"tool_output": {"max_lines": "many"}, "modle": "a/b"})
    assert error.key == "tool_output.max_lines"
    assert error.message.endswith(
        'expected a whole number, got a string; also unknown: "modle" (did you mean "model"?)'
    )


def test_many_unknown_keys_are_named_up_to_a_count() -> None:
    error = _message({f"key{n}": n for n in range(MORE_UNKNOWN + 5)})
    assert error.key == "key0"
    assert f'"key{MORE_UNKNOWN}"' in error.message and f'"key{MORE_UNKNOWN + 1}"' not in error.message
    assert error.message.endswith(", and 4 more")


def test_a_file_on_disk_names_the_lines_of_each(tmp_path: Path) -> None:
    file = tmp_path / "tether.json"
    file.write_text(
        '{\n  // a comment\n  "modle": "a/b",\n\n  "sandbox": {"mdoe": "off"}\n}\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        load_config(None, user_file=file, environ={})
    assert caught.value.line == 3
    assert 'sandbox.mdoe (line 5; did you mean "mode"?)' in caught.value.message

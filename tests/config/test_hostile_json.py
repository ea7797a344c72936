"""Pathological config text is a one-line ConfigError naming the file, never a RecursionError or a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.config import PROJECT_CONFIG, load_config
from tether.errors import ConfigError

CASES = [
    pytest.param("[" * 100_000 + "]" * 100_000, "nested deeper than", id="arrays-100000-deep"),
    pytest.param('{"a":' * 100_000 + "1" + "}" * 100_000, "nested deeper than", id="objects-100000-deep"),
    pytest.param('{"a":' * 100_000, "nested deeper than", id="unclosed-100000-deep"),
    pytest.param('{"tool_output": {"max_lines": 1' + "0" * 5000 + "}}", "too many digits", id="huge-int"),
    pytest.param('{"tool_output": {"max_lines": 1e999}}', "too large", id="huge-float"),
    pytest.param('{"tool_output": {"max_lines": NaN}}', "NaN", id="nan"),
    pytest.param('{"model": "a/\\ud800"}', "lone surrogate", id="lone-surrogate-value"),
    pytest.param('{"\\udfff": 1}', "lone surrogate", id="lone-surrogate-key"),
]


@pytest.mark.parametrize(("text", "message"), CASES)
def test_pathological_json_is_a_one_line_config_error(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / PROJECT_CONFIG
    config.parent.mkdir()
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, user_file=tmp_path / "none.json", environ={})
    assert message in caught.value.message
    assert str(config) in caught.value.message
    assert "\n" not in caught.value.message
    assert caught.value.message.encode("utf-8")  # storable and printable


def test_deep_but_valid_text_inside_strings_is_fine(tmp_path: Path) -> None:
    config = tmp_path / PROJECT_CONFIG
    config.parent.mkdir()
    config.write_text('{"permission": {"bash": {"[[[[' + "[" * 200 + '": "deny"}}}', encoding="utf-8")
    assert len(load_config(tmp_path, user_file=tmp_path / "none.json", environ={}).project_permission) == 1


def test_the_permission_environment_variable_is_checked_the_same_way(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\$TETHER_PERMISSION.*nested deeper"):
        load_config(None, user_file=tmp_path / "none.json", environ={"TETHER_PERMISSION": "[" * 100_000})


def test_a_fifo_planted_as_the_config_does_not_hang(tmp_path: Path) -> None:
    config = tmp_path / PROJECT_CONFIG
    config.parent.mkdir()
    os.mkfifo(config)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config(tmp_path, user_file=tmp_path / "none.json", environ={})


def test_an_oversized_config_is_refused(tmp_path: Path) -> None:
    config = tmp_path / PROJECT_CONFIG
    config.parent.mkdir()
    config.write_text('{"x": "' + "a" * (5 * 1024 * 1024) + '"}', encoding="utf-8")
    with pytest.raises(ConfigError, match="larger than"):
        load_config(tmp_path, user_file=tmp_path / "none.json", environ={})

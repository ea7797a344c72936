"""Reading a config file that is not a readable regular file is a config error naming it; a missing one is no
config; the line map of a broken file keeps the keys found before the break."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.config._json import key_lines, read_json
from tether.errors import ConfigError


def test_a_missing_config_file_is_no_config(tmp_path: Path) -> None:
    assert read_json(tmp_path / "tether.json") is None


def test_a_directory_planted_as_the_config_is_a_config_error_naming_it(tmp_path: Path) -> None:
    planted = tmp_path / "tether.json"
    planted.mkdir()
    with pytest.raises(ConfigError, match="not a regular file") as error:
        read_json(planted)
    assert error.value.file == str(planted)


def test_a_config_below_a_file_is_a_config_error_saying_why(tmp_path: Path) -> None:
    (tmp_path / ".tether").write_text("not a directory", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read the file: Not a directory"):
        read_json(tmp_path / ".tether" / "tether.json")


def test_the_line_map_of_a_broken_file_keeps_the_keys_before_the_break() -> None:
    text = '{\n  "model": "a/b",\n  "permission": {\n    "bash": oops\n'
    assert key_lines(text) == {("model",): 2, ("permission",): 3, ("permission", "bash"): 4}


def test_the_line_map_numbers_array_items_and_nested_keys() -> None:
    text = '{"instructions": [\n "a.md",\n {"x": []}\n], "empty": {}}'
    lines = key_lines(text)
    assert lines[("instructions", 0)] == 2
    assert lines[("instructions", 1, "x")] == 3
    assert lines[("empty",)] == 4

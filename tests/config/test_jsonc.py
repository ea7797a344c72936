"""Config files are JSONC: comments and trailing commas are accepted, strings are left alone, lines stay right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.config import PROJECT_CONFIG, load_config, parse_config
from tether.config._json import key_lines, parse_json
from tether.config._jsonc import strip_jsonc
from tether.errors import ConfigError

COMMENTED = """// the project's config
{
  /* the model
     for everyone */
  "model": "openai/gpt-5", // trailing note
  "instructions": [
    "docs/*.md",   // a glob
    "https://not-a-comment//x", /* a string with slashes */
  ],
  "permission": {"bash": {"rm /* -rf": "deny",},},
}
"""


def test_comments_and_trailing_commas_are_accepted_and_strings_survive() -> None:
    value = parse_json(COMMENTED, "tether.jsonc")
    assert value == {
        "model": "openai/gpt-5",
        "instructions": ["docs/*.md", "https://not-a-comment//x"],
        "permission": {"bash": {"rm /* -rf": "deny"}},
    }


def test_stripping_keeps_every_position() -> None:
    stripped = strip_jsonc(COMMENTED, "t")
    assert len(stripped) == len(COMMENTED)
    assert [i for i, c in enumerate(stripped) if c == "\n"] == [
        i for i, c in enumerate(COMMENTED) if c == "\n"
    ]
    lines = key_lines(stripped)
    assert lines[("model",)] == 5
    assert lines[("instructions", 1)] == 8
    assert lines[("permission", "bash", "rm /* -rf")] == 10


def test_an_error_after_comments_names_the_line_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / PROJECT_CONFIG
    path.parent.mkdir()
    path.write_text(
        '{\n  // one\n  /* two\n     three */\n  "agent": {"build": {\n    "modle": "a/b",\n  }},\n}\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, user_file=tmp_path / "none.json", environ={}, trusted=True)
    assert caught.value.line == 6
    assert caught.value.key == "agent.build.modle"
    assert 'did you mean "model" or "mode"?' in caught.value.message


def test_broken_json_inside_comments_keeps_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_json('/* a\nb */ {\n "a": 1\n "b": 2}', "t.jsonc")
    assert caught.value.line == 4


def test_an_unclosed_block_comment_is_an_error_naming_its_line() -> None:
    with pytest.raises(ConfigError, match="never closed") as caught:
        parse_json('{\n  "a": 1 /* forever\n}', "t.jsonc")
    assert caught.value.line == 2


@pytest.mark.parametrize("text", ["[1,,]", "{,}", '{"a": 1,,}', "[,]"])
def test_only_one_trailing_comma_is_forgiven(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid JSON"):
        parse_json(text, "t.jsonc")


def test_comment_brackets_do_not_count_towards_the_depth_bound() -> None:
    assert parse_json("// " + "[" * 100_000 + "\n{}", "t.jsonc") == {}


def test_the_depth_bound_still_holds_in_jsonc() -> None:
    with pytest.raises(ConfigError, match="nested deeper"):
        parse_json("/* c */" + "[" * 100_000 + "]" * 100_000, "t.jsonc")


def test_parse_config_takes_a_value_parsed_from_jsonc() -> None:
    text = strip_jsonc('{\n  "shell": "/bin/sh", // mine\n}', "t")
    assert parse_config(json.loads(text), file="t.jsonc", text=text).get("shell") == "/bin/sh"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_plain_json_is_unchanged_by_the_jsonc_pass(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=2)):
        assert strip_jsonc(text, "t") == text


@given(json_values, st.sampled_from(["// x\n", "/* y */", "/*\n*/", " "]))
def test_comments_between_tokens_parse_to_the_same_value(value: object, comment: str) -> None:
    text = json.dumps(value, indent=1).replace("\n", "\n" + comment)
    assert parse_json(text, "t") == value


def test_a_byte_order_mark_is_white_space() -> None:
    assert parse_json('\ufeff{"a": 1}', "t.json") == {"a": 1}
    assert parse_json('\ufeff// c\n{"a": [1,]}', "t.jsonc") == {"a": [1]}

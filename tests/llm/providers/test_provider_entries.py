"""Every key of a ``provider.<id>`` entry with a value of the wrong type is a config error naming that key, and an
OpenAI tool schema is sent as strict only when it already fits strict mode as is."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tether.errors import ConfigError, ProviderAuthError
from tether.llm.providers import resolve_model
from tether.llm.providers._wire import openai_strict_ok


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ("not an object", "provider.ollama: a provider entry must be an object"),
        ({"options": "x"}, "provider.ollama.options: must be an object"),
        ({"base_url": 5}, "provider.ollama.base_url: must be a string"),
        ({"api_key_env": 5}, "provider.ollama.api_key_env: must be a variable name or a list of them"),
        ({"api_key_env": ["A", 1]}, "provider.ollama.api_key_env"),
        ({"api_key": 5}, "provider.ollama.api_key: must be a string"),
        ({"headers": ["a"]}, "provider.ollama.headers: must be an object of strings"),
        ({"models": []}, "provider.ollama.models: must be an object"),
        ({"models": {"m": "big"}}, "provider.ollama.models.m: limit must be"),
        ({"adapter": "x"}, "provider.ollama.adapter: must be an object"),
    ],
)
def test_a_provider_key_of_the_wrong_type_is_a_config_error_naming_it(entry: Any, key: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(key)):
        resolve_model("ollama/m", {"provider": {"ollama": entry}}, env={})


def test_the_provider_section_itself_must_be_an_object() -> None:
    with pytest.raises(ConfigError, match="provider: must be an object"):
        resolve_model("ollama/m", {"provider": ["ollama"]}, env={})


def test_a_key_named_by_a_variable_is_required_unless_the_entry_says_otherwise() -> None:
    config = {"provider": {"ollama": {"api_key_env": ["MY_KEY"]}}}
    assert resolve_model("ollama/m", config, env={"MY_KEY": "k-1"}).settings.api_key == "k-1"  # type: ignore[attr-defined]
    with pytest.raises(ProviderAuthError, match="MY_KEY"):
        resolve_model("ollama/m", config, env={})
    optional = {"provider": {"ollama": {"api_key_env": "MY_KEY", "requires_key": False}}}
    assert resolve_model("ollama/m", optional, env={}).model_id == "m"


STRICT = {
    "type": "object",
    "properties": {"a": {"type": "string"}},
    "required": ["a"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": {"type": "string"}},
        {**STRICT, "properties": {"a": {"type": "date"}}},
        {**STRICT, "properties": {"a": "string"}},
        {**STRICT, "properties": {"a": {"type": "array", "items": {"type": "date"}}}},
        {**STRICT, "properties": {"a": {"type": "string", "additionalProperties": True}}},
        {**STRICT, "properties": {"a": {"anyOf": [{"type": "string"}, {"minimum": 1}]}}},
        {**STRICT, "$defs": {"X": {"type": "object"}}},
        {**STRICT, "properties": {"a": {"description": "untyped"}}},
    ],
)
def test_a_schema_that_does_not_fit_strict_mode_as_is_is_not_sent_as_strict(schema: dict[str, Any]) -> None:
    assert not openai_strict_ok(schema)


def test_a_schema_that_fits_strict_mode_with_nested_arrays_refs_and_alternatives_is_strict() -> None:
    schema = {
        **STRICT,
        "properties": {
            "a": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/N"}]}},
            "b": {"enum": ["x", "y"]},
        },
        "required": ["a", "b"],
        "$defs": {"N": {"type": "null"}},
    }
    assert openai_strict_ok(schema)

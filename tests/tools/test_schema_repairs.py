"""Each repair ``normalize_schema`` makes to a malformed keyword, one sentence per mistake seen in real tool schemas.

A keyword with a value of the wrong JSON type would make the provider reject the whole request (every tool of the
step, not just this one); the repair drops or rewrites that keyword alone and keeps the rest of the schema.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from tether.tools._schema_normalize import normalize_schema


def prop(schema: dict[str, Any]) -> Any:
    """Normalize ``schema`` as the property ``x`` of an object; return what ``x`` became (checked valid)."""
    root = normalize_schema({"type": "object", "properties": {"x": schema}})
    jsonschema_rs.validator_for(root)
    return root["properties"]["x"]


@pytest.mark.parametrize(
    ("raw", "repaired"),
    [
        ({"type": "string", "minLength": -1, "maxLength": "9"}, {"type": "string"}),
        ({"type": "array", "minItems": True}, {"type": "array"}),
        ({"type": "number", "minimum": "0", "maximum": True}, {"type": "number"}),
        ({"type": "number", "multipleOf": 0}, {"type": "number"}),
        ({"type": "number", "multipleOf": True}, {"type": "number"}),
        ({"type": "string", "format": 7, "description": ["a"]}, {"type": "string"}),
        ({"type": "string", "pattern": "(unclosed"}, {"type": "string"}),
        ({"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^a+$"}),
        ({"type": "array", "uniqueItems": "yes"}, {"type": "array"}),
        ({"enum": "a"}, {}),
        ({"anyOf": []}, {}),
        ({"anyOf": {"type": "string"}}, {}),
        ({"not": 5}, {}),
        ({"items": 5}, {}),
        ({"type": "array", "items": True}, {"type": "array", "items": True}),
        ({"type": "string", "nullable": False}, {"type": "string"}),
        ({"type": ["string", "integer"], "nullable": True}, {"type": ["string", "integer", "null"]}),
        ({"type": ["string", "null"], "nullable": True}, {"type": ["string", "null"]}),
        (
            {"type": "string", "enum": ["a"], "nullable": True},
            {"type": ["string", "null"], "enum": ["a", None]},
        ),
        ({"type": ["str", "string", 3]}, {"type": "string"}),
        ({"type": ["string", "wat"]}, {}),
        ({"type": "int", "required": True}, {"type": "integer"}),
        ("not a schema", {}),
        (False, False),
    ],
)
def test_a_malformed_keyword_is_dropped_or_rewritten_and_the_rest_kept(raw: Any, repaired: Any) -> None:
    assert prop(raw) == repaired


def test_a_boolean_root_becomes_an_object_without_properties() -> None:
    assert normalize_schema(True) == {"type": "object", "properties": {}}


def test_a_root_of_alternatives_keeps_its_shape_without_a_forced_type() -> None:
    schema = normalize_schema({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    assert schema == {"anyOf": [{"type": "string"}, {"type": "integer"}]}


def test_a_required_name_written_as_a_string_becomes_a_list() -> None:
    schema = normalize_schema({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"})
    assert schema["required"] == ["a"]


def test_required_names_are_deduplicated_and_unknown_ones_dropped() -> None:
    schema = normalize_schema(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a", "ghost"]}
    )
    assert schema["required"] == ["a"]


def test_required_of_the_wrong_type_is_dropped() -> None:
    schema = normalize_schema({"type": "object", "properties": {"a": {}}, "required": [1, 2]})
    assert "required" not in schema


def test_optional_false_makes_a_property_required() -> None:
    schema = normalize_schema({"type": "object", "properties": {"a": {"type": "string", "optional": False}}})
    assert schema["required"] == ["a"]
    assert schema["properties"]["a"] == {"type": "string"}


def test_a_default_on_a_required_field_without_description_becomes_the_description() -> None:
    schema = normalize_schema(
        {"type": "object", "properties": {"n": {"type": "integer", "default": 5}}, "required": ["n"]}
    )
    assert schema["properties"]["n"] == {"type": "integer", "description": "Default: 5"}


def test_an_object_whose_properties_are_not_a_mapping_gets_empty_properties() -> None:
    schema = normalize_schema({"type": "object", "properties": ["a", "b"]})
    assert schema == {"type": "object", "properties": {}}
    jsonschema_rs.validator_for(schema)


def test_an_array_type_is_inferred_from_its_items() -> None:
    assert prop({"items": {"type": "string"}}) == {"type": "array", "items": {"type": "string"}}
    assert prop({"items": [{"type": "string"}]}) == {"type": "array", "prefixItems": [{"type": "string"}]}


@pytest.mark.parametrize(
    ("raw", "repaired"),
    [
        (
            {"type": "array", "enum": ["a", "b"]},
            {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        ),
        (
            {"type": "array", "items": {"type": "string"}, "enum": ["a"]},
            {"type": "array", "items": {"type": "string", "enum": ["a"]}},
        ),
        (
            {"type": "array", "items": {"enum": ["x"]}, "enum": ["a"]},
            {"type": "array", "items": {"enum": ["x"]}},
        ),
        ({"type": "array", "enum": [["a"], ["b"]]}, {"type": "array", "enum": [["a"], ["b"]]}),
    ],
)
def test_an_enum_of_strings_on_an_array_moves_to_its_items(raw: Any, repaired: Any) -> None:
    fixed = prop(raw)
    assert fixed == repaired
    if "items" in repaired and repaired["items"].get("enum") == ["a", "b"]:
        validator = jsonschema_rs.validator_for(fixed)
        assert validator.is_valid(["a", "b", "a"]) and not validator.is_valid(["c"])

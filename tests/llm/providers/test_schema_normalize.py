"""normalize_schema turns messy real-world tool schemas into valid JSON Schema; provider_tool_name makes names legal."""

from __future__ import annotations

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether.tools._schema_normalize import normalize_schema, provider_tool_name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("dict", {"type": "object"}),
        ("float", {"type": "number"}),
        ("tuple", {"type": "array"}),
        ("any", {}),
        ("java.lang.String", {"type": "string"}),
        ("java.lang.Object", {}),
        ("Integer", {"type": "integer"}),
        ("List[str]", {"type": "array"}),
        ("bool", {"type": "boolean"}),
        ("datetime", {"type": "string", "format": "date-time"}),
        ("wat", {}),
    ],
)
def test_non_standard_type_names_are_mapped(raw: str, expected: dict) -> None:
    schema = normalize_schema({"type": "object", "properties": {"x": {"type": raw}}})
    assert schema["properties"]["x"] == expected
    jsonschema_rs.validator_for(schema)


def test_optional_and_draft3_required_flags_become_a_required_list() -> None:
    schema = normalize_schema(
        {
            "type": "object",
            "properties": {"a": {"type": "string", "required": True}, "b": {"type": "int", "optional": True}},
            "required": ["b"],
        }
    )
    assert schema["required"] == ["a"]
    assert schema["properties"] == {"a": {"type": "string"}, "b": {"type": "integer"}}


def test_default_on_a_required_field_moves_into_the_description() -> None:
    schema = normalize_schema(
        {
            "type": "object",
            "properties": {"n": {"type": "integer", "default": 5, "description": "Count"}},
            "required": ["n"],
        }
    )
    assert schema["properties"]["n"] == {"type": "integer", "description": "Count (default: 5)"}
    assert schema["required"] == ["n"]


def test_nullable_tuple_items_and_missing_root_type_are_repaired() -> None:
    schema = normalize_schema(
        {
            "properties": {
                "p": {"type": "tuple", "items": [{"type": "float"}, {"type": "str"}]},
                "q": {"type": "string", "nullable": True},
            }
        }
    )
    assert schema["type"] == "object"
    assert schema["properties"]["p"] == {
        "type": "array",
        "prefixItems": [{"type": "number"}, {"type": "string"}],
    }
    assert schema["properties"]["q"] == {"type": ["string", "null"]}
    validator = jsonschema_rs.validator_for(schema)
    assert validator.is_valid({"p": [1.5, "x"], "q": None})


def test_required_names_without_properties_are_dropped_and_root_gets_properties() -> None:
    assert normalize_schema({"type": "object", "properties": {"a": {}}, "required": ["a", "ghost"]})[
        "required"
    ] == ["a"]
    assert normalize_schema({}) == {"type": "object", "properties": {}}


def test_well_formed_schemas_are_unchanged() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "integer"}}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert normalize_schema(schema) == schema


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=5)
    | st.sampled_from(["dict", "float", "any", "tuple", "string", "optional"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["type", "properties", "items", "required", "optional", "default", "nullable", "anyOf", "x"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@given(JSONISH)
def test_normalize_never_raises_and_yields_a_valid_schema(raw: object) -> None:
    schema = normalize_schema(raw if isinstance(raw, dict) else {})
    jsonschema_rs.validator_for(schema)


@pytest.mark.parametrize(
    ("name", "expected"),
    [("read", "read"), ("fs.read", "fs_read"), ("my tool!", "my_tool_"), ("", "tool")],
)
def test_provider_tool_names_are_legal(name: str, expected: str) -> None:
    assert provider_tool_name(name) == expected


def test_long_names_are_truncated_with_a_distinguishing_hash() -> None:
    a, b = provider_tool_name("x" * 80 + "a"), provider_tool_name("x" * 80 + "b")
    assert len(a) == 64 and a != b

"""The input and output codecs: a JSON Schema codec checks exactly what the model is shown, and ``$ref``s are
inlined unless they are recursive."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from tether.tools._codec import DecodeError, JsonSchemaCodec, PydanticCodec, make_codec, simplify_schema


class Point(BaseModel):
    x: int


def test_a_json_schema_codec_names_each_bad_field() -> None:
    codec = make_codec({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert codec.decode({"n": 1}) == {"n": 1}
    with pytest.raises(DecodeError) as error:
        codec.decode({"n": "one"})
    assert [issue.path for issue in error.value.issues] == ["n"]


def test_an_output_that_is_not_json_fails_to_encode_with_the_reason() -> None:
    codec = JsonSchemaCodec({"type": "object"})
    with pytest.raises(DecodeError) as error:
        codec.encode({"when": object()})
    assert "not a JSON value" in str(error.value)
    with pytest.raises(DecodeError):
        codec.encode([1])  # JSON, but not what the schema says
    assert codec.encode({"a": 1}) == {"a": 1}


def test_a_schema_no_validator_accepts_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        JsonSchemaCodec({"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}})


def test_make_codec_takes_a_codec_an_adapter_or_a_type_and_refuses_anything_else() -> None:
    codec = JsonSchemaCodec({"type": "object"})
    assert make_codec(codec) is codec
    assert isinstance(make_codec(TypeAdapter(Point)), PydanticCodec)
    assert make_codec(Point).decode({"x": "3"}) == Point(x=3)
    with pytest.raises(TypeError, match="cannot build a schema for"):
        make_codec(object())


def test_acyclic_refs_are_inlined_with_their_sibling_keywords_and_defs_dropped() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P", "description": "a point"}},
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    assert simplify_schema(schema) == {
        "type": "object",
        "properties": {
            "p": {"type": "object", "properties": {"x": {"type": "integer"}}, "description": "a point"}
        },
    }


def test_a_recursive_definition_stays_in_defs_and_is_still_referenced() -> None:
    node = {
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
    }
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": node},
    }
    out = simplify_schema(schema)
    assert out["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert out["$defs"] == {"Node": node}
    codec = JsonSchemaCodec(schema)
    assert codec.decode({"root": {"children": [{"children": []}]}})
    with pytest.raises(DecodeError):
        codec.decode({"root": {"children": [{"children": "no"}]}})

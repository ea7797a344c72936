from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from tether.errors import UsageError
from tether.tools import Tool, ToolContext, ToolResponse
from tether.tools.internal import DEFAULT_TIMEOUT, DecodeError


class Node(BaseModel):
    name: str
    children: list["Node"] = []


class Point(BaseModel):
    x: int
    y: int


class Segment(BaseModel):
    start: Point
    end: Point


class Coords(TypedDict):
    lat: float
    lon: float


async def _noop(inp: Any, ctx: ToolContext) -> ToolResponse[Any]:
    return ToolResponse(content="ok")


def test_tool_is_immutable_and_has_no_name() -> None:
    tool = Tool(description="d", input=Point, execute=_noop)
    with pytest.raises(AttributeError):
        tool._description = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        tool.name = "x"  # type: ignore[attr-defined]
    assert not hasattr(tool, "name")


def test_definition_inlines_acyclic_refs_and_drops_defs() -> None:
    tool = Tool(description="segment", input=Segment, execute=_noop)
    schema = tool.definition("seg").input_schema
    assert "$defs" not in schema
    assert schema["properties"]["start"]["properties"]["x"]["type"] == "integer"


def test_definition_keeps_defs_for_recursive_types() -> None:
    tool = Tool(description="tree", input=Node, execute=_noop)
    schema = tool.definition("tree").input_schema
    assert "$defs" in schema and "Node" in schema["$defs"]


def test_typed_dict_and_raw_schema_inputs_are_accepted() -> None:
    typed = Tool(description="coords", input=Coords, execute=_noop)
    assert typed.definition("c").input_schema["required"] == ["lat", "lon"]
    raw = Tool(
        description="raw",
        input={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        execute=_noop,
    )
    assert raw.definition("r").input_schema["required"] == ["q"]


def test_output_schema_is_advertised_only_when_declared() -> None:
    with_output = Tool(description="d", input=Point, output=Point, execute=_noop)
    without = Tool(description="d", input=Point, execute=_noop)
    assert with_output.definition("a").output_schema is not None
    assert without.definition("a").output_schema is None


def test_invalid_declarations_fail_at_construction() -> None:
    with pytest.raises(TypeError):
        Tool(description="", input=Point, execute=_noop)
    with pytest.raises(TypeError):
        Tool(description="d", input=Point, execute="nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        Tool(description="d", input={"$ref": "#/nowhere"}, execute=_noop)


def test_messy_raw_schemas_are_normalized_and_validated_as_shown() -> None:
    tool = Tool(
        description="d",
        input={"type": "dict", "properties": {"n": {"type": "float"}, "tags": {"type": "tuple"}}},
        execute=_noop,
    )
    schema = tool.definition("t").input_schema
    assert schema["type"] == "object"
    assert schema["properties"]["n"]["type"] == "number"
    assert schema["properties"]["tags"]["type"] == "array"
    tool.input_codec.decode({"n": 1.5, "tags": [1, "a"]})
    with pytest.raises(DecodeError):
        tool.input_codec.decode({"n": "not a number"})


def test_with_permission_returns_a_new_tool() -> None:
    tool = Tool(description="d", input=Point, execute=_noop)
    edit = tool.with_permission("edit")
    assert edit.permission == "edit" and tool.permission is None


@pytest.mark.parametrize("timeout", [0, 0.0, -1, -0.5, float("inf"), float("nan"), True, "30"])
def test_a_timeout_that_is_not_a_positive_finite_number_is_a_usage_error(timeout: Any) -> None:
    with pytest.raises(
        UsageError, match=r"Tool timeout must be a positive, finite number of seconds"
    ) as caught:
        Tool(description="d", input=Point, execute=_noop, timeout=timeout)
    assert repr(timeout) in str(caught.value)


def test_timeout_none_means_no_deadline_and_the_default_is_300_seconds() -> None:
    assert Tool(description="d", input=Point, execute=_noop, timeout=None).timeout is None
    assert Tool(description="d", input=Point, execute=_noop).timeout == DEFAULT_TIMEOUT == 300.0
    assert Tool(description="d", input=Point, execute=_noop, timeout=2).timeout == 2

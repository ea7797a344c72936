"""The JSON Schema of ``tether.json`` and the reference table of ``docs/config.md``, both made from the models.

``tether config schema`` prints :func:`config_schema` (``--reference``: :func:`config_reference`); ``docs/tether.schema.json`` is that output, committed (a test
keeps the two equal), so an editor offers completion and flags a typo as it is typed (``"$schema":
"./docs/tether.schema.json"`` or the raw URL of the file). :func:`config_reference` renders one table row per key from
the same schema, the descriptions included; ``docs/config.md`` embeds it between two markers (a test again).

A "not set" ``None`` is not a value a file may hold, so the schema shows neither a ``null`` type nor a ``null``
default for such keys: the description says what applies when the key is absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

__all__ = ["REFERENCE_BEGIN", "REFERENCE_END", "config_reference", "config_schema"]

REFERENCE_BEGIN = "<!-- generated from the config models: begin (tether config schema --reference) -->"
REFERENCE_END = "<!-- generated from the config models: end -->"
_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class _Generator(GenerateJsonSchema):
    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        found = super().default_schema(schema)
        if found.get("default", ...) is None:
            del found["default"]
        return found

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False  # "Maxsteps", "Base Url": the key itself says it better

    def generate(self, schema: CoreSchema, mode: Any = "validation") -> JsonSchemaValue:
        found = super().generate(schema, mode=mode)
        found.pop("title", None)
        return {"$schema": _DIALECT, "title": "tether.json", **found}


def config_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a ``tether.json`` / ``tether.jsonc`` file."""
    from ._models import TetherConfig

    return TetherConfig.model_json_schema(by_alias=True, schema_generator=_Generator)


def config_reference() -> str:
    """The Markdown table of every key: path, type, default and description (the text between the markers)."""
    schema = config_schema()
    defs = cast(Mapping[str, Any], schema.get("$defs", {}))
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    _rows(schema, "", defs, rows)
    return "\n".join(rows)


def _rows(node: Mapping[str, Any], prefix: str, defs: Mapping[str, Any], rows: list[str]) -> None:
    for name, prop in cast(Mapping[str, Any], node.get("properties", {})).items():
        path = f"{prefix}.{name}" if prefix else name
        target = _resolve(prop, defs)
        default = (
            f"`{json.dumps(prop['default'])}`"
            if "default" in prop and prop["default"] not in ({}, [])
            else ""
        )
        description = str(prop.get("description") or target.get("description") or "").replace("|", "\\|")
        rows.append(f"| `{path}` | {_type(prop, defs)} | {default} | {description} |")
        if "properties" in target:
            _rows(target, path, defs, rows)
        entries = target.get("additionalProperties")
        if isinstance(entries, Mapping):
            inner = _resolve(cast(Mapping[str, Any], entries), defs)
            if "properties" in inner:
                _rows(inner, f"{path}.<{_placeholder(name)}>", defs, rows)


def _placeholder(name: str) -> str:
    return {"agent": "name", "provider": "id", "models": "model"}.get(name, "key")


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        return cast(Mapping[str, Any], defs[ref.rsplit("/", 1)[-1]])
    return node


def _type(node: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    node = _resolve(node, defs)
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "anyOf" in node:
        members = [cast(Mapping[str, Any], n) for n in node["anyOf"]]
        return " or ".join("object" if n.get("type") == "object" else _type(n, defs) for n in members)
    kind = node.get("type", "any")
    if kind == "object":
        entries = node.get("additionalProperties")
        if isinstance(entries, Mapping) and "properties" not in node:
            return f"object of {_type(cast(Mapping[str, Any], entries), defs)}"
        return "object"
    if kind == "array":
        return f"list of {_type(cast(Mapping[str, Any], node.get('items', {})), defs)}"
    shown = str(kind)
    if "minimum" in node:
        shown += f" ≥ {node['minimum']}"
    if "exclusiveMinimum" in node:
        shown += f" > {node['exclusiveMinimum']}"
    return shown

"""Normalize messy real-world JSON Schemas into valid JSON Schema, and tool names into provider-legal names.

Tool catalogs found in the wild (MCP servers, manifests, OpenAPI exports) use Python and Java type names (``dict``,
``float``, ``tuple``, ``any``, ``java.lang.String``), draft-3 ``optional``/``required: true`` flags, OpenAPI
``nullable``, ``default`` on required fields, an ``enum`` of strings on an ``array`` (it belongs to its ``items``) and
dotted function names. Providers reject or misread all of these;
:func:`normalize_schema` rewrites them into plain JSON Schema (2020-12) that the codec validates and the providers
accept, without changing what a well-formed schema means. It never raises on odd input: an unknown type name becomes
"any value" so one odd property never makes a whole tool unusable.

This module does not validate values and does not know any provider's strict-mode rules (the adapters do).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from .._regex import lazy

__all__ = ["normalize_schema", "provider_tool_name"]

_TYPE_ALIASES: dict[str, str | None] = {
    # None means "any type": the ``type`` keyword is dropped.
    "string": "string",
    "str": "string",
    "text": "string",
    "char": "string",
    "character": "string",
    "date": "string",
    "datetime": "string",
    "time": "string",
    "uuid": "string",
    "uri": "string",
    "url": "string",
    "bytes": "string",
    "path": "string",
    "number": "number",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "bigdecimal": "number",
    "real": "number",
    "numeric": "number",
    "float32": "number",
    "float64": "number",
    "integer": "integer",
    "int": "integer",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "biginteger": "integer",
    "int32": "integer",
    "int64": "integer",
    "uint": "integer",
    "boolean": "boolean",
    "bool": "boolean",
    "object": "object",
    "dict": "object",
    "map": "object",
    "hashmap": "object",
    "mapping": "object",
    "record": "object",
    "json": "object",
    "struct": "object",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "arraylist": "array",
    "sequence": "array",
    "collection": "array",
    "iterable": "array",
    "frozenset": "array",
    "null": "null",
    "none": "null",
    "nonetype": "null",
    "void": "null",
    "nil": "null",
    "any": None,
    "unknown": None,
    "mixed": None,
    "anytype": None,
}
_FORMATS = {
    "date": "date",
    "datetime": "date-time",
    "time": "time",
    "uuid": "uuid",
    "uri": "uri",
    "url": "uri",
}
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = (
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
)


_invalid_name_chars = lazy(r"[^A-Za-z0-9_-]")


_MAX_NAME = 64


def normalize_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return a valid JSON Schema for a tool's input, repairing the common real-world mistakes.

    A root without a type becomes an object schema with ``properties`` (providers require one). The input is not
    modified.
    """
    root = _node(schema)
    if not isinstance(root, dict):  # a boolean schema at the root
        root = {}
    if "type" not in root and not any(k in root for k in ("anyOf", "oneOf", "allOf", "$ref")):
        root["type"] = "object"
    if root.get("type") == "object" and not isinstance(root.get("properties"), dict):
        root["properties"] = {}
    return root


def _type_name(raw: str) -> tuple[str | None, str | None]:
    """``(json type or None for any, format or None)`` for a type name as written by a tool author."""
    key = raw.strip()
    if key.startswith("java.") or key.startswith("javax."):
        key = key.rsplit(".", 1)[-1]
    key = key.split("[", 1)[0].split("<", 1)[0].strip().lower()  # List[str], List<String>, Map<String, X>
    if raw.strip() == "java.lang.Object":
        return None, None  # Java's Object means "anything"
    if key in _TYPE_ALIASES:
        return _TYPE_ALIASES[key], _FORMATS.get(key)
    return None, None  # an unknown type name: accept any value rather than make the whole tool unusable


def _node(value: Any, *, in_properties: bool = False) -> Any:
    if isinstance(value, bool):
        return value
    if not isinstance(value, Mapping):
        return {}  # not a schema at all: accept anything rather than fail the whole tool
    node: dict[str, Any] = {}
    for key, sub in value.items():
        if key in _SCHEMA_MAPS and isinstance(sub, Mapping):
            node[key] = {str(k): _node(v, in_properties=key == "properties") for k, v in sub.items()}
        elif key in _SCHEMA_LISTS and isinstance(sub, list):
            node[key] = [_node(v) for v in sub]
        elif key in _SCHEMA_ONE and isinstance(sub, Mapping | bool):
            node[key] = _node(sub)
        elif key == "items":
            if isinstance(sub, list):  # draft-4 tuple form
                node["prefixItems"] = [_node(v) for v in sub]
            elif isinstance(sub, Mapping | bool):
                node["items"] = _node(sub)
        else:
            node[str(key)] = sub
    _drop_malformed(node)
    if not in_properties and isinstance(node.get("required"), bool):
        node.pop("required")  # a draft-3 flag outside an object's properties means nothing
    _fix_type(node)
    _enum_on_array(node)
    if node.get("nullable") is True:
        node.pop("nullable")
        _add_null(node)
    elif "nullable" in node and isinstance(node["nullable"], bool):
        node.pop("nullable")
    if "properties" in node or node.get("type") == "object":
        _fix_object(node)
    return node


_NON_NEGATIVE = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)
_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_STRINGS = ("pattern", "format", "title", "description", "$ref", "$id", "$schema", "$comment")


def _drop_malformed(node: dict[str, Any]) -> None:
    """Drop keyword values of the wrong JSON type (they would make the whole schema invalid)."""
    for key in _NON_NEGATIVE:
        value = node.get(key)
        if key in node and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            node.pop(key)
    for key in _NUMBERS:
        if key in node and (isinstance(node[key], bool) or not isinstance(node[key], int | float)):
            node.pop(key)
    multiple = node.get("multipleOf")
    if "multipleOf" in node and (
        isinstance(multiple, bool) or not isinstance(multiple, int | float) or multiple <= 0
    ):
        node.pop("multipleOf")
    for key in _STRINGS:
        if key in node and not isinstance(node[key], str):
            node.pop(key)
    if "pattern" in node:
        try:
            re.compile(node["pattern"])
        except re.error:
            node.pop("pattern")
    for key in ("uniqueItems",):
        if key in node and not isinstance(node[key], bool):
            node.pop(key)
    if "enum" in node and not isinstance(node["enum"], list):
        node.pop("enum")
    for key in _SCHEMA_LISTS:
        if key in node and (not isinstance(node[key], list) or not node[key]):
            node.pop(key)
    for key in (*_SCHEMA_MAPS, *_SCHEMA_ONE, "items"):
        if (key in node and not isinstance(node[key], dict | bool)) or (
            key in _SCHEMA_MAPS and isinstance(node.get(key), bool)
        ):
            node.pop(key, None)
    required = node.get("required")
    if "required" in node and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        if isinstance(required, str):
            node["required"] = [required]
        elif not isinstance(required, bool):  # draft-3 booleans are read by the parent object
            node.pop("required")
    elif isinstance(required, list):
        node["required"] = list(dict.fromkeys(required))


def _fix_type(node: dict[str, Any]) -> None:
    if "type" not in node:
        if isinstance(node.get("properties"), dict):
            node["type"] = "object"
        elif "items" in node or "prefixItems" in node:
            node["type"] = "array"
        return
    raw = node["type"]
    names: list[Any] = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    anything = False
    for name in names:
        if not isinstance(name, str):
            continue
        mapped, fmt = _type_name(name)
        if mapped is None:
            anything = True
            continue
        if fmt and "format" not in node:
            node["format"] = fmt
        if mapped not in out:
            out.append(mapped)
    if anything or not out:
        node.pop("type")
        return
    node["type"] = out[0] if len(out) == 1 else out


def _enum_on_array(node: dict[str, Any]) -> None:
    """An ``enum`` of strings on an ``array`` lists what its items may be (every array value would fail it as
    written): move it to ``items``, unless the items already say."""
    values = node.get("enum")
    if node.get("type") != "array" or not isinstance(values, list) or not values:
        return
    if not all(isinstance(v, str) for v in values):  # pyright: ignore[reportUnknownVariableType]
        return
    node.pop("enum")
    items = node.get("items")
    if not isinstance(items, dict):
        node["items"] = {"type": "string", "enum": values}
    elif "enum" not in items:
        items.setdefault("type", "string")
        items["enum"] = values


def _add_null(node: dict[str, Any]) -> None:
    kind = node.get("type")
    if isinstance(kind, str) and kind != "null":
        node["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        node["type"] = [*kind, "null"]
    if isinstance(node.get("enum"), list) and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]


def _fix_object(node: dict[str, Any]) -> None:
    props = node.get("properties")
    if props is None or not isinstance(props, dict):
        props = {}
        if "properties" in node:
            node["properties"] = props
    raw_required = node.get("required")
    required: list[str] = []
    if isinstance(raw_required, list):
        required = [r for r in raw_required if isinstance(r, str)]
    elif isinstance(raw_required, str):
        required = [raw_required]
    for name, prop in props.items():
        if not isinstance(prop, dict):
            continue
        flag = prop.get("required")
        if isinstance(flag, bool):  # draft-3: "required": true on the property
            prop.pop("required")
            if flag and name not in required:
                required.append(name)
        optional = prop.get("optional")
        if isinstance(optional, bool):
            prop.pop("optional")
            if optional and name in required:
                required.remove(name)
            elif not optional and name not in required:
                required.append(name)
    for name in required:
        prop = props.get(name)
        # A default on a required field contradicts itself; keep it required (the tool then always receives
        # the value) and keep the default visible to the model in the description.
        if isinstance(prop, dict) and "default" in prop:
            default = prop.pop("default")
            text = json.dumps(default, ensure_ascii=False, default=str)
            described = prop.get("description")
            prop["description"] = f"{described} (default: {text})" if described else f"Default: {text}"
    kept = [name for name in dict.fromkeys(required) if not props or name in props]
    if kept:
        node["required"] = kept
    else:
        node.pop("required", None)


def provider_tool_name(name: str) -> str:
    """A name every provider accepts (``^[A-Za-z0-9_-]{1,64}$``): ``fs.read`` → ``fs_read``.

    Legal names come back unchanged. Names longer than 64 characters keep a prefix and a short hash so that two
    long names stay distinct.
    """
    cleaned = _invalid_name_chars().sub("_", name) or "tool"
    if len(cleaned) > _MAX_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        cleaned = f"{cleaned[: _MAX_NAME - 9]}_{digest}"
    return cleaned

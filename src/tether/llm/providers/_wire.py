"""Pure conversions shared by the adapters: tool-result text, schema strictness, finish reasons, usage numbers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...tools import Content, File, Text
from .._events import FinishReason

__all__ = ["as_int", "openai_strict_ok", "result_text", "split_content"]

# Keywords OpenAI's strict mode accepts (structured outputs subset). Anything else makes a schema non-strict.
_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
_STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def openai_strict_ok(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` already fits OpenAI's strict mode as is (we never rewrite a schema to force it).

    Strict mode needs: an object root, ``additionalProperties: false`` and every property required on every
    object, and only the supported keywords.
    """
    if schema.get("type") != "object":
        return False
    return _strict_node(schema)


def _strict_node(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    for key in node:
        if key not in _STRICT_KEYWORDS:
            return False
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if any(k not in _STRICT_TYPES for k in kinds):
        return False
    if "object" in kinds or "properties" in node:
        props = node.get("properties", {})
        if not isinstance(props, Mapping) or node.get("additionalProperties") is not False:
            return False
        if sorted(node.get("required", [])) != sorted(props):
            return False
        if not all(_strict_node(p) for p in props.values()):
            return False
    elif "additionalProperties" in node and node["additionalProperties"] is not False:
        return False
    if "items" in node and not _strict_node(node["items"]):
        return False
    for key in ("anyOf",):
        if key in node and not all(_strict_node(s) for s in node[key]):
            return False
    for key in ("$defs", "definitions"):
        if key in node and not all(_strict_node(s) for s in node[key].values()):
            return False
    if not kinds and not any(k in node for k in ("anyOf", "$ref", "enum", "const")):
        return False  # strict mode needs every value typed
    return True


def result_text(parts: tuple[Content, ...]) -> str:
    """The text of a tool result for APIs that take only text (files are sent separately)."""
    texts = [p.text for p in parts if isinstance(p, Text)]
    if texts:
        return "\n".join(texts)
    return "(no text output; the files are attached)" if parts else ""


def split_content(parts: tuple[Content, ...]) -> tuple[list[Text], list[File]]:
    texts: list[Text] = []
    files: list[File] = []
    for part in parts:
        if isinstance(part, Text):
            texts.append(part)
        else:
            files.append(part)
    return texts, files


def as_int(value: Any) -> int:
    return value if isinstance(value, int) else 0


FINISH_OPENAI_CHAT: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
    "eos": "stop",
    "end_turn": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
}

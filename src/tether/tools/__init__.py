"""The tool contract, scoped registries, materialize/settle and hooks.

This package never imports ``tether.permissions``: the registry does not authorize (law 4).
"""

from ._codec import Codec, DecodeError, Issue, JsonSchemaCodec, PydanticCodec, make_codec, simplify_schema
from ._content import Content, File, Text, content_from_json, content_to_json, text_of
from ._tool import DEFAULT_TIMEOUT, UNSET, Tool, ToolCall, ToolContext, ToolDefinition, ToolResponse
from ..errors import RegistrationError, ToolFailure

__all__ = [
    "DEFAULT_TIMEOUT",
    "UNSET",
    "Codec",
    "Content",
    "DecodeError",
    "File",
    "Issue",
    "JsonSchemaCodec",
    "PydanticCodec",
    "RegistrationError",
    "Text",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolFailure",
    "ToolResponse",
    "content_from_json",
    "content_to_json",
    "make_codec",
    "simplify_schema",
    "text_of",
]

"""The tool contract, scoped registries, materialize/settle and hooks.

This package never imports ``tether.permissions``: the registry does not authorize (law 4).
"""

from ..content import Content, File, Text, content_from_json, content_to_json, text_of
from ..errors import RegistrationError, ToolFailure
from ._codec import Codec, DecodeError, Issue, JsonSchemaCodec, PydanticCodec, make_codec, simplify_schema
from ._deadlines import Deadlines
from ._decision import PermissionRecord, Reply, Verdict
from ._decorator import tool
from ._hooks import AfterEvent, AfterHook, BeforeEvent, BeforeHook
from ._names import effective_name, normalize_name
from ._outcome import Completed, Failed, FailureKind, Outcome
from ._registry import Entry, Registration, ToolRegistry
from ._settle import DECLINED_ERROR, FINAL_STEP_ERROR, Materialization, is_hidden, normalize_content
from ._tool import (
    DEFAULT_TIMEOUT,
    UNSET,
    Asker,
    PermissionRecorder,
    Tool,
    ToolCall,
    ToolContext,
    ToolDefinition,
    ToolResponse,
)

__all__ = [
    "DECLINED_ERROR",
    "DEFAULT_TIMEOUT",
    "FINAL_STEP_ERROR",
    "UNSET",
    "AfterEvent",
    "AfterHook",
    "Asker",
    "BeforeEvent",
    "BeforeHook",
    "Codec",
    "Completed",
    "Content",
    "Deadlines",
    "DecodeError",
    "Entry",
    "Failed",
    "FailureKind",
    "File",
    "Issue",
    "JsonSchemaCodec",
    "Materialization",
    "Outcome",
    "PermissionRecord",
    "PermissionRecorder",
    "PydanticCodec",
    "Registration",
    "RegistrationError",
    "Reply",
    "Text",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinition",
    "ToolFailure",
    "ToolRegistry",
    "ToolResponse",
    "Verdict",
    "content_from_json",
    "content_to_json",
    "effective_name",
    "is_hidden",
    "make_codec",
    "normalize_content",
    "normalize_name",
    "simplify_schema",
    "text_of",
    "tool",
]

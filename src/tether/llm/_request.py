"""The provider-neutral request: system prompt, history, tool definitions, tool choice and options.

History is a sequence of messages. An assistant message holds text, reasoning and tool-call parts in stream order;
the results of its tool calls follow in one :class:`ToolMessage`, in the model's call order. Adapters convert this
into their wire format; nothing here knows a provider.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..tools import Content, ToolDefinition
from ._events import ProviderMetadata

__all__ = [
    "AssistantContent",
    "AssistantMessage",
    "Message",
    "ModelRequest",
    "ReasoningContent",
    "TextContent",
    "ToolCallContent",
    "ToolChoice",
    "ToolMessage",
    "ToolResultContent",
    "UserMessage",
]

ToolChoice = Literal["auto", "none", "required"] | str
"""``auto``, ``none``, ``required``, or the name of one tool the model must call."""


@dataclass(frozen=True, kw_only=True, slots=True)
class UserMessage:
    content: tuple[Content, ...]
    role: Literal["user"] = "user"


@dataclass(frozen=True, kw_only=True, slots=True)
class TextContent:
    text: str
    provider_metadata: ProviderMetadata | None = None
    type: Literal["text"] = "text"


@dataclass(frozen=True, kw_only=True, slots=True)
class ReasoningContent:
    text: str
    provider_metadata: ProviderMetadata | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallContent:
    call_id: str
    name: str
    input: Any
    provider_metadata: ProviderMetadata | None = None
    type: Literal["tool-call"] = "tool-call"


AssistantContent = TextContent | ReasoningContent | ToolCallContent


@dataclass(frozen=True, kw_only=True, slots=True)
class AssistantMessage:
    content: tuple[AssistantContent, ...]
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResultContent:
    """The result of one call: content parts (text, images) or an error message (``is_error``)."""

    call_id: str
    name: str
    content: tuple[Content, ...]
    is_error: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolMessage:
    results: tuple[ToolResultContent, ...]
    role: Literal["tool"] = "tool"


Message = UserMessage | AssistantMessage | ToolMessage


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """One step's request. ``options`` holds provider-neutral knobs (temperature, max_tokens, reasoning effort)."""

    system: Sequence[str] = ()
    messages: Sequence[Message] = ()
    tools: Sequence[ToolDefinition] = ()
    tool_choice: ToolChoice = "auto"
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])

"""The provider-neutral request: system prompt, history, tool definitions, tool choice and options.

History is a sequence of messages. An assistant message holds text, reasoning and tool-call parts in stream order;
the results of its tool calls follow in one :class:`ToolMessage`, in the model's call order. Adapters convert this
into their wire format; nothing here knows a provider.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from .._record import record
from ..errors import UsageError
from ..tools import Content, ToolDefinition
from ._events import ProviderMetadata

__all__ = [
    "AssistantContent",
    "AssistantMessage",
    "Message",
    "ModelRequest",
    "ReasoningContent",
    "RequestOptions",
    "TextContent",
    "ToolCallContent",
    "ToolChoice",
    "ToolMessage",
    "ToolResultContent",
    "UserMessage",
    "request_options",
]

ToolChoice = Literal["auto", "none", "required"] | str
"""``auto``, ``none``, ``required``, or the name of one tool the model must call."""


@record
class UserMessage:
    content: tuple[Content, ...]
    role: Literal["user"] = "user"


@record
class TextContent:
    text: str
    provider_metadata: ProviderMetadata | None = None
    type: Literal["text"] = "text"


@record
class ReasoningContent:
    text: str
    provider_metadata: ProviderMetadata | None = None
    type: Literal["reasoning"] = "reasoning"


@record
class ToolCallContent:
    call_id: str
    name: str
    input: Any
    provider_metadata: ProviderMetadata | None = None
    type: Literal["tool-call"] = "tool-call"


AssistantContent = TextContent | ReasoningContent | ToolCallContent


@record
class AssistantMessage:
    content: tuple[AssistantContent, ...]
    role: Literal["assistant"] = "assistant"


@record
class ToolResultContent:
    """The result of one call: content parts (text, images) or an error message (``is_error``)."""

    call_id: str
    name: str
    content: tuple[Content, ...]
    is_error: bool = False


@record
class ToolMessage:
    results: tuple[ToolResultContent, ...]
    role: Literal["tool"] = "tool"


Message = UserMessage | AssistantMessage | ToolMessage


@with_config(ConfigDict(extra="forbid", strict=True))
class RequestOptions(TypedDict, total=False):
    """Provider-neutral knobs of a request; every key is optional, and a key not listed here is an error.

    Each adapter sends the ones its API takes under its API's name (``max_tokens`` is Chat's
    ``max_completion_tokens`` or ``max_tokens``, Responses' ``max_output_tokens``; ``stop`` is Anthropic's
    ``stop_sequences``) and rejects the others with a :class:`~tether.errors.UsageError`. ``extra_body`` is the one
    escape hatch: its members are merged into the wire body last, as given (provider-specific fields such as
    Responses' ``store`` or Anthropic's ``metadata``).
    """

    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    stop: list[str]
    seed: int
    presence_penalty: float
    frequency_penalty: float
    user: str
    reasoning_effort: str
    """OpenAI's reasoning effort (``minimal``, ``low``, ``medium``, ``high``, ...)."""
    thinking_budget: int
    """Anthropic's extended thinking budget in tokens."""
    extra_body: dict[str, Any]


OPTION_NAMES: tuple[str, ...] = tuple(sorted(RequestOptions.__annotations__))


@functools.cache
def _options() -> TypeAdapter[RequestOptions]:
    return TypeAdapter(RequestOptions)  # built when a request first has options


def request_options(options: Mapping[str, Any]) -> RequestOptions:
    """``options`` checked against :class:`RequestOptions` (a copy; ``{}`` stays cheap).

    Raises:
        UsageError: a key that is not a request option (the message names it and the accepted keys), or a value
            of the wrong type.
    """
    if not options:
        return {}
    try:
        return _options().validate_python(dict(options))
    except ValidationError as exc:
        problems: list[str] = []
        for error in exc.errors(include_url=False):
            key = ".".join(str(part) for part in error["loc"])
            if error["type"] == "extra_forbidden":
                problems.append(f"unknown request option {key!r}")
            else:
                problems.append(f"request option {key!r}: {error['msg']}")
        raise UsageError(
            f"{'; '.join(problems)}. Accepted options: {', '.join(OPTION_NAMES)} "
            "(provider-specific fields go in extra_body)."
        ) from None


@record
class ModelRequest:
    """One step's request. ``options`` holds provider-neutral knobs (:class:`RequestOptions`), checked here.

    Raises:
        UsageError: ``options`` holds a key that is not a request option, or a value of the wrong type.
    """

    system: Sequence[str] = ()
    messages: Sequence[Message] = ()
    tools: Sequence[ToolDefinition] = ()
    tool_choice: ToolChoice = "auto"
    options: RequestOptions = field(default_factory=lambda: RequestOptions())

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", request_options(self.options))

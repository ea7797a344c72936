"""The one event vocabulary every provider adapter emits (law 8).

Adapters turn their wire format into these events; the session only ever sees these. Events are frozen dataclasses
with a ``type`` tag. ``provider_metadata`` is keyed by provider name and carries what must travel back to the same
provider on the next step (Anthropic thinking signatures, OpenAI encrypted reasoning, item ids).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any, ClassVar, Literal

from .._record import record

__all__ = [
    "Event",
    "FinishReason",
    "ProviderErrorEvent",
    "ProviderMetadata",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "StepFinish",
    "StepStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolCallEvent",
    "ToolErrorEvent",
    "ToolInputDelta",
    "ToolInputEnd",
    "ToolInputStart",
    "ToolResultEvent",
    "Usage",
]

ProviderMetadata = Mapping[str, Mapping[str, Any]]
FinishReason = Literal["stop", "length", "tool-calls", "content-filter", "error", "unknown"]


@record
class Usage:
    """Token usage of one step. ``input_tokens`` includes cache reads/writes; ``output_tokens`` includes reasoning."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost=cost,
        )


@record
class StepStart:
    type: ClassVar[str] = "step-start"


@record
class TextStart:
    type: ClassVar[str] = "text-start"
    id: str
    provider_metadata: ProviderMetadata | None = None


@record
class TextDelta:
    type: ClassVar[str] = "text-delta"
    id: str
    text: str


@record
class TextEnd:
    type: ClassVar[str] = "text-end"
    id: str
    provider_metadata: ProviderMetadata | None = None


@record
class ReasoningStart:
    type: ClassVar[str] = "reasoning-start"
    id: str
    provider_metadata: ProviderMetadata | None = None


@record
class ReasoningDelta:
    type: ClassVar[str] = "reasoning-delta"
    id: str
    text: str


@record
class ReasoningEnd:
    """End of a reasoning block; ``provider_metadata`` carries signatures / encrypted content to send back."""

    type: ClassVar[str] = "reasoning-end"
    id: str
    provider_metadata: ProviderMetadata | None = None


@record
class ToolInputStart:
    type: ClassVar[str] = "tool-input-start"
    id: str
    name: str


@record
class ToolInputDelta:
    type: ClassVar[str] = "tool-input-delta"
    id: str
    name: str
    text: str


@record
class ToolInputEnd:
    type: ClassVar[str] = "tool-input-end"
    id: str
    name: str


@record
class ToolCallEvent:
    """A complete tool call.

    The adapter parses the arguments once, where it builds the event, and the event carries the result: ``input``
    is the parsed JSON value, or, when the arguments were not a JSON object, the raw argument text with ``invalid``
    saying why. The session never parses them again: a call with ``invalid`` set fails without running, and the
    model reads ``invalid`` and its arguments back (law 2). When the stream ended before the input was complete
    (``max_tokens`` mid-input), ``incomplete`` is true and the call must not be executed.
    """

    type: ClassVar[str] = "tool-call"
    id: str
    name: str
    input: Any
    invalid: str | None = None
    incomplete: bool = False
    provider_executed: bool = False
    provider_metadata: ProviderMetadata | None = None


@record
class ToolResultEvent:
    """The result of a provider-executed tool call (web search run by the provider, ...)."""

    type: ClassVar[str] = "tool-result"
    id: str
    name: str
    result: Any
    provider_metadata: ProviderMetadata | None = None


@record
class ToolErrorEvent:
    """A provider-executed tool call failed."""

    type: ClassVar[str] = "tool-error"
    id: str
    name: str
    message: str
    provider_metadata: ProviderMetadata | None = None


@record
class StepFinish:
    type: ClassVar[str] = "step-finish"
    reason: FinishReason
    usage: Usage | None = None
    provider_metadata: ProviderMetadata | None = None


@record
class ProviderErrorEvent:
    """A provider failure reported inside the stream (the stream ends after it).

    ``error`` is the mapped :class:`~tether.errors.ProviderError` (its class says whether a retry may help).
    """

    type: ClassVar[str] = "provider-error"
    message: str
    error: Exception | None = field(default=None, compare=False)


Event = (
    StepStart
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolInputStart
    | ToolInputDelta
    | ToolInputEnd
    | ToolCallEvent
    | ToolResultEvent
    | ToolErrorEvent
    | StepFinish
    | ProviderErrorEvent
)

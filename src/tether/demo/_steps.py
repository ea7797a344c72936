"""Turning a planned step (text and tool calls) into tether's event vocabulary, and reading a request back.

Shared by the replay model and the JSON script model: both decide *what* a step says, this module decides *how* it
is streamed (``StepStart``, text start/delta/end, tool-input events, ``ToolCallEvent``, ``StepFinish``) and how the
previous step's tool results are read from a :class:`~tether.llm.ModelRequest`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any

from .._record import record
from ..content import Text, text_of
from ..llm import (
    AssistantMessage,
    Event,
    Message,
    ModelRequest,
    StepFinish,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallContent,
    ToolCallEvent,
    ToolInputDelta,
    ToolInputEnd,
    ToolInputStart,
    ToolMessage,
    ToolResultContent,
    Usage,
    UserMessage,
)

__all__ = ["PlannedCall", "PlannedStep", "Result", "last_results", "stream_step", "turn_step"]

_WORDS = re.compile(r"\S+\s*|\s+")


@record
class PlannedCall:
    name: str
    input: Mapping[str, Any]


@record
class PlannedStep:
    """What one step says: optional text, then tool calls (none means the turn ends)."""

    text: str = ""
    calls: Sequence[PlannedCall] = field(default_factory=tuple[PlannedCall, ...])
    echo: str | None = None


@record
class Result:
    """One tool result the model received: its text and whether it was an error."""

    name: str
    text: str
    is_error: bool


def turn_step(request: ModelRequest) -> int:
    """How many assistant messages the current turn (after the last user message) already holds."""
    count = 0
    for message in reversed(request.messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            count += 1
    return count


def _result(item: ToolResultContent) -> Result:
    return Result(name=item.name, text=text_of(item.content), is_error=item.is_error)


def last_results(request: ModelRequest) -> list[Result]:
    """The tool results of the previous step, in the model's call order (empty at the start of a turn)."""
    for message in reversed(request.messages):
        if isinstance(message, ToolMessage):
            return [_result(item) for item in message.results]
        if isinstance(message, UserMessage | AssistantMessage):
            return []
    return []


def _content_size(parts: Sequence[Any]) -> int:
    return sum(len(p.text) if isinstance(p, Text) else len(p.data or p.uri or "") for p in parts)


def _message_size(message: Message) -> int:
    if isinstance(message, ToolMessage):
        return sum(len(r.name) + len(r.call_id) + 16 + _content_size(r.content) for r in message.results)
    if isinstance(message, UserMessage):
        return _content_size(message.content)
    size = 0
    for part in message.content:
        if isinstance(part, ToolCallContent):
            # the input as the model wrote it: a mapping of short values (its JSON would be about as long)
            size += len(part.name) + len(part.call_id) + 16 + len(str(part.input))
        else:
            size += len(part.text)
    return size


def _estimate_tokens(request: ModelRequest) -> int:
    """About four characters a token over the text the request carries (the system text and every message's).

    Counted from the texts' lengths (no string is built: a 1,000-call step's request holds megabytes of results).
    """
    size = sum(len(s) for s in request.system)
    for message in request.messages:
        size += _message_size(message)
    return max(1, size // 4)


def stream_step(request: ModelRequest, step: PlannedStep, *, call_prefix: str) -> Iterator[Event]:
    """The events of one planned step, as a provider adapter would emit them."""
    yield StepStart()
    if step.text:
        text_id = f"{call_prefix}_text"
        yield TextStart(id=text_id)
        for chunk in _WORDS.findall(step.text):
            yield TextDelta(id=text_id, text=chunk)
        yield TextEnd(id=text_id)
    written = len(step.text)
    for index, call in enumerate(step.calls):
        call_id = f"{call_prefix}_{index}"
        arguments = json.dumps(dict(call.input))
        written += len(arguments)
        yield ToolInputStart(id=call_id, name=call.name)
        yield ToolInputDelta(id=call_id, name=call.name, text=arguments)
        yield ToolInputEnd(id=call_id, name=call.name)
        yield ToolCallEvent(id=call_id, name=call.name, input=dict(call.input))
    output_tokens = max(1, written // 4)
    yield StepFinish(
        reason="tool-calls" if step.calls else "stop",
        usage=Usage(input_tokens=_estimate_tokens(request), output_tokens=output_tokens),
    )

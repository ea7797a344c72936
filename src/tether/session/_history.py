"""The model-facing history of a session, kept incrementally (law 10).

The runner appends each user message and each finished step; a step never re-reads or re-serializes earlier ones.
:meth:`History.view` hands the provider a read-only, fixed-length view of the list (no copy), so building a request
costs the same at the 10,000th step as at the first. Loading a stored session replays it once, in
:meth:`History.from_stored`.

Replay rules: completed tool parts become tool results (text and files, e.g. images); errored parts become error
results (partial content first, then the error); a part still pending or running (never expected after recovery)
becomes an error result, so every call in the history has a result. Provider-executed calls are not replayed as
calls. An assistant message that produced nothing is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from ..llm import (
    AssistantContent,
    AssistantMessage,
    Message,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolMessage,
    ToolResultContent,
    UserMessage,
)
from ..records import FilePart, Part, ReasoningPart, StepFinishPart, StepStartPart, TextPart, ToolPart
from ..storable import visible
from ..store import StoredMessage
from ..tools import Content, Text
from ._prompts import REPLAY_UNFINISHED

__all__ = ["History", "HistoryView", "step_messages", "tool_result"]


class HistoryView(Sequence[Message]):
    """A read-only view of the first ``length`` history items, plus optional ``tail`` items (no copy)."""

    __slots__ = ("_items", "_length", "_tail")

    def __init__(self, items: list[Message], length: int, tail: tuple[Message, ...] = ()) -> None:
        self._items = items
        self._length = length
        self._tail = tail

    def __len__(self) -> int:
        return self._length + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("history index out of range")
        if index < self._length:
            return self._items[index]
        return self._tail[index - self._length]

    def __iter__(self) -> Iterator[Message]:
        items = self._items
        for i in range(self._length):
            yield items[i]
        yield from self._tail


def tool_result(part: ToolPart) -> ToolResultContent:
    """The model-facing result of a tool part."""
    if part.state == "completed":
        return ToolResultContent(call_id=part.call_id, name=part.tool, content=part.content or (Text(""),))
    if part.state == "error":
        error = part.error or "Tool execution failed"
        content: tuple[Content, ...] = (*part.content, Text(error)) if part.content else (Text(error),)
        return ToolResultContent(call_id=part.call_id, name=part.tool, content=content, is_error=True)
    return ToolResultContent(
        call_id=part.call_id, name=part.tool, content=(Text(REPLAY_UNFINISHED),), is_error=True
    )


def _sendable(value: Any) -> Any:
    """A JSON value with lone surrogates shown as visible escapes (the part keeps the exact value it was sent)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible(str(k)): _sendable(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list):
        return [_sendable(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def step_messages(parts: Iterable[Part]) -> tuple[Message, ...]:
    """The assistant message (and tool results, in call order) for one step's parts."""
    content: list[AssistantContent] = []
    results: list[ToolResultContent] = []
    for part in parts:
        kind = type(part)
        if (
            kind is StepStartPart or kind is StepFinishPart
        ):  # a step's bounds (two a step) hold nothing to send
            continue
        if isinstance(part, ToolPart):  # the kinds are disjoint: the most frequent first
            if part.provider_executed:
                continue
            value = part.input if part.raw is None else part.raw
            if part.error_kind == "invalid_input":  # never run; may hold lone surrogates: send a copy
                value = _sendable(value)
            content.append(
                ToolCallContent(
                    call_id=visible(part.call_id),
                    name=visible(part.tool),
                    input=value,
                    provider_metadata=part.provider_metadata,
                )
            )
            results.append(tool_result(part))
        elif isinstance(part, TextPart):
            if part.text:
                content.append(TextContent(text=part.text, provider_metadata=part.provider_metadata))
        elif isinstance(part, ReasoningPart):
            content.append(ReasoningContent(text=part.text, provider_metadata=part.provider_metadata))
    if not content:
        return ()
    if results:
        return (AssistantMessage(content=tuple(content)), ToolMessage(results=tuple(results)))
    return (AssistantMessage(content=tuple(content)),)


def user_content(parts: Iterable[Part]) -> tuple[Content, ...]:
    out: list[Content] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append(Text(part.text))
        elif isinstance(part, FilePart):
            out.append(part.content)
    return tuple(out)


class History:
    """The append-only list of model messages for one session."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Message] = []

    def __len__(self) -> int:
        return len(self._items)

    @classmethod
    def from_stored(cls, messages: Iterable[StoredMessage]) -> History:
        """Replay stored messages once (used when a session is reopened)."""
        history = cls()
        for message in messages:
            if message.info.role == "user":
                content = user_content(message.parts)
                if content:
                    history.add_user(content)
            else:
                history.add_step(message.parts)
        return history

    def add_user(self, content: Sequence[Content]) -> None:
        self._items.append(UserMessage(content=tuple(content)))

    def add_step(self, parts: Iterable[Part]) -> None:
        self._items.extend(step_messages(parts))

    def view(self, tail: tuple[Message, ...] = ()) -> HistoryView:
        """A fixed snapshot of the history as it is now (later appends are not visible), plus ``tail``."""
        return HistoryView(self._items, len(self._items), tail)

"""Session events: what the runner appends to the store and publishes on the bus.

Durable events (``session.updated``, ``message.updated``, ``message.part.updated``) are appended to the store the
moment they happen and projected there into the sessions, messages and parts tables. Live-only events
(``message.part.delta``, ``tool.progress``, ``session.status``) go to the bus only: text deltas reach the store
coalesced into ``message.part.updated`` events, so no write waits per token.

Every text a durable event carries is storable (law 12): :func:`storable_part` and :func:`storable_event` show each
lone surrogate in it as a visible escape (``tether.storable``), in every field that holds outside text (a tool's
input, valid or refused, its raw argument text, error, content, title, metadata, output paths and permission records;
model and user text; a file part's name; a session's title; a message's error). They are applied where events are
written: ``StepProcessor.put`` for a step's parts (the store, the bus and the step's history then hold the same
part) and ``Emitter.durable`` for everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Literal, TypeVar

from .._record import record
from ..content import File, Text
from ..storable import has_surrogates, storable, visible
from ._model import (
    AssistantInfo,
    FilePart,
    MessageInfo,
    Part,
    ReasoningPart,
    SessionInfo,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
)

__all__ = [
    "DurableEvent",
    "MessageUpdated",
    "PartDelta",
    "PartUpdated",
    "SessionStatus",
    "SessionUpdated",
    "ToolProgress",
    "storable_event",
    "storable_part",
]


@record(kw_only=False)
class SessionUpdated:
    """A session was created or changed (title, agent, rules)."""

    type: ClassVar[str] = "session.updated"
    session: SessionInfo


@record(kw_only=False)
class MessageUpdated:
    """A message was created or changed (an assistant's finish, usage, error, completion time)."""

    type: ClassVar[str] = "message.updated"
    message: MessageInfo


@record(kw_only=False)
class PartUpdated:
    """A part was created or changed: the whole new part (tool state transitions, finished text)."""

    type: ClassVar[str] = "message.part.updated"
    part: Part


@record
class PartDelta:
    """Live text appended to a text or reasoning part (bus only; the store receives coalesced updates)."""

    type: ClassVar[str] = "message.part.delta"
    session_id: str
    message_id: str
    part_id: str
    field: Literal["text"]
    delta: str


@record
class ToolProgress:
    """A running tool reported progress (``ctx.progress``). Bus only; published on the event loop (also for a tool reporting from a worker thread)."""

    type: ClassVar[str] = "tool.progress"
    session_id: str
    message_id: str
    call_id: str
    update: Mapping[str, Any]


@record
class SessionStatus:
    """``busy`` while a turn runs, ``retry`` while waiting to retry a provider error, ``idle`` after the turn."""

    type: ClassVar[str] = "session.status"
    session_id: str
    status: Literal["busy", "retry", "idle"]
    attempt: int = 0
    message: str | None = None
    retry_in: float | None = None


DurableEvent = SessionUpdated | MessageUpdated | PartUpdated

P = TypeVar("P", bound=Part)

_TOOL_TEXTS = (
    "call_id",
    "tool",
    "input",
    "raw",
    "content",
    "metadata",
    "title",
    "output_paths",
    "error",
    "permissions",
    "provider_metadata",
)
"""The fields of a tool part that may hold outside text (its ids, state, kinds and times are tether's own)."""


def _content_part(value: Any) -> Any:
    if isinstance(value, Text):
        text = value.text
        return value if text.isascii() or not has_surrogates(text) else Text(visible(text))
    if isinstance(value, File):
        mime, data, uri, name = (storable(v) for v in (value.mime, value.data, value.uri, value.name))
        if mime is value.mime and data is value.data and uri is value.uri and name is value.name:
            return value
        return replace(value, mime=mime, data=data, uri=uri, name=name)
    return storable(value)


def _content(value: Any) -> Any:
    """A part's content (one part, or a tuple of them) made storable; the same object when it holds nothing to show."""
    if type(value) is not tuple:
        return _content_part(value)
    shown: list[Any] | None = None
    for index, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        found = _content_part(item)
        if found is not item:
            if shown is None:
                shown = list(value)  # pyright: ignore[reportUnknownArgumentType]
            shown[index] = found
    return value if shown is None else tuple(shown)


_NO_FIELDS: dict[str, Any] = {}


def _records(value: Any, before: Any) -> Any:
    """A tool part's permission records made storable: the records it kept from ``before`` (the same objects, in
    front: ``StepProcessor.record_permission`` appends) were checked then, so only the ones appended are walked."""
    start = 0
    if type(before) is tuple and type(value) is tuple and len(before) <= len(value):  # pyright: ignore[reportUnknownArgumentType]
        start = len(before)  # pyright: ignore[reportUnknownArgumentType]
        for index in range(start):
            if value[index] is not before[index]:
                start = 0
                break
    if start == 0:
        return storable(value)
    shown: list[Any] | None = None
    for index in range(start, len(value)):  # pyright: ignore[reportUnknownArgumentType]
        item = value[index]
        found = storable(item)
        if found is not item:
            if shown is None:
                shown = list(value)  # pyright: ignore[reportUnknownArgumentType]
            shown[index] = found
    return value if shown is None else tuple(shown)


def _tool(part: ToolPart, before: ToolPart | None) -> ToolPart:
    # Called at every write of every tool part (3-5 per call): a plain loop that skips what is unset, unchanged
    # since ``before`` or ASCII text before calling anything.
    state = vars(part)  # a tool part keeps an instance dict (``_processor._evolve``)
    old = _NO_FIELDS if before is None else vars(before)
    changes: dict[str, Any] | None = None
    for name in _TOOL_TEXTS:
        value = state[name]
        if value is None or old.get(name) is value:
            continue
        kind = type(value)
        if kind is str:
            if value.isascii() or not has_surrogates(value):
                continue
            shown = visible(value)
        elif kind is tuple and not value:
            continue
        elif name == "permissions":
            shown = _records(value, old.get(name))
            if shown is value:
                continue
        else:
            shown = _content(value) if name == "content" else storable(value)
            if shown is value:
                continue
        if changes is None:
            changes = {}
        changes[name] = shown
    return part if changes is None else replace(part, **changes)


def storable_part(part: P, before: Part | None = None) -> P:
    """``part`` with every lone surrogate in its outside text shown as a visible escape; ``part`` itself when none.

    ``before`` is the part's previous version: a tool part's field that is still the very same object was checked
    then and is not walked again (its input is checked once, not at each state change).
    """
    if type(part) is StepStartPart:  # once a step, no outside text: not through the checks below
        return part
    shown: Part = part
    if isinstance(part, ToolPart):
        shown = _tool(part, before if isinstance(before, ToolPart) else None)
    elif isinstance(part, TextPart | ReasoningPart):
        text, metadata = visible(part.text), storable(part.provider_metadata)
        if text is not part.text or metadata is not part.provider_metadata:
            shown = replace(part, text=text, provider_metadata=metadata)
    elif isinstance(part, FilePart):
        content = _content(part.content)
        if content is not part.content:
            shown = replace(part, content=content)
    elif isinstance(part, StepFinishPart):
        reason = visible(part.reason)
        if reason is not part.reason:
            shown = replace(part, reason=reason)
    return shown  # pyright: ignore[reportReturnType]  # the same kind of part as given


def storable_event(event: DurableEvent) -> DurableEvent:
    """``event`` with every lone surrogate in its outside text shown as a visible escape; ``event`` itself when none.

    A session keeps its ``project`` and ``directory`` exact (the store holds them losslessly, so a session reopens in
    a directory whose name is not UTF-8); its title and parent call id are shown.
    """
    # A message's update first, by its exact class (two a step: the ones ``Emitter.durable`` walks; a step's parts
    # are made storable by ``StepProcessor.put``).
    if type(event) is MessageUpdated or isinstance(event, MessageUpdated):
        message = event.message
        if not (type(message) is AssistantInfo or isinstance(message, AssistantInfo)):
            return event
        error = message.error
        text = None if error is None else visible(error.message)
        finish = message.finish if message.finish is None else visible(message.finish)
        model = visible(message.model)
        if finish is message.finish and model is message.model and (error is None or text is error.message):
            return event
        shown = error if error is None or text is None else replace(error, message=text)
        return MessageUpdated(replace(message, error=shown, finish=finish, model=model))
    if isinstance(event, PartUpdated):
        part = storable_part(event.part)
        return event if part is event.part else PartUpdated(part)
    info = event.session
    title = visible(info.title)
    parent_call_id = info.parent_call_id if info.parent_call_id is None else visible(info.parent_call_id)
    if title is info.title and parent_call_id is info.parent_call_id:
        return event
    return SessionUpdated(replace(info, title=title, parent_call_id=parent_call_id))

"""Records: what a session is made of and what the stores persist (sessions, messages, parts, durable events).

The records stand below both the store (``tether.store``, which persists them) and the runner (``tether.session``,
which makes them), so that neither has to import the other for its data. They are immutable (an update is a new
record with the same id); their JSON form is declared on the classes and read and written by one codec
(:mod:`tether.records.internal`). Nothing here knows about a database or the runner.

The names here are the user surface: a turn returns these parts, a UI reads these events on the bus, a store
implements ``append(event: DurableEvent)``. ``tether.session`` re-exports them (they are its surface too).
"""

from ._events import (
    DurableEvent,
    MessageUpdated,
    PartDelta,
    PartUpdated,
    SessionStatus,
    SessionUpdated,
    ToolProgress,
)
from ._model import (
    AssistantInfo,
    FilePart,
    MessageError,
    MessageInfo,
    Part,
    ReasoningPart,
    SessionInfo,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    ToolState,
    UserInfo,
)

__all__ = [
    "AssistantInfo",
    "DurableEvent",
    "FilePart",
    "MessageError",
    "MessageInfo",
    "MessageUpdated",
    "Part",
    "PartDelta",
    "PartUpdated",
    "ReasoningPart",
    "SessionInfo",
    "SessionStatus",
    "SessionUpdated",
    "StepFinishPart",
    "StepStartPart",
    "TextPart",
    "ToolPart",
    "ToolProgress",
    "ToolState",
    "UserInfo",
]

"""Sessions: the durable store, the runner (steps, dispatch, final step, cancellation) and the tool-part state machine.

See ``docs/sessions.md``. The public surface: :class:`Sessions` / :class:`Session` (``prompt``, ``cancel``), the
:class:`SessionStore` protocol and :class:`SQLiteStore`, the data model (sessions, messages, parts) and the events
published on the bus.
"""

from ._dispatch import DOOM_LOOP_THRESHOLD, DoomLoopDetector, PermissionAsserter
from ._events import (
    DurableEvent,
    MessageUpdated,
    PartDelta,
    PartUpdated,
    SessionStatus,
    SessionUpdated,
    ToolProgress,
)
from ._history import History
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
    part_from_json,
    part_to_json,
)
from ._prompts import ABORTED_ERROR, INCOMPLETE_CALL_ERROR, MAX_STEPS_MARKERS, MAX_STEPS_PROMPT
from ._runner import AgentLike, RetryPolicy, StopReason, TurnResult
from ._session import Session, SessionLocation, Sessions
from ._sqlite import SQLiteStore
from ._step import CANCEL_GRACE
from ._store import INTERRUPTED_ERROR, SessionStore, StoredMessage

__all__ = [
    "ABORTED_ERROR",
    "CANCEL_GRACE",
    "DOOM_LOOP_THRESHOLD",
    "INCOMPLETE_CALL_ERROR",
    "INTERRUPTED_ERROR",
    "MAX_STEPS_MARKERS",
    "MAX_STEPS_PROMPT",
    "AgentLike",
    "AssistantInfo",
    "DoomLoopDetector",
    "DurableEvent",
    "FilePart",
    "History",
    "MessageError",
    "MessageInfo",
    "MessageUpdated",
    "Part",
    "PartDelta",
    "PartUpdated",
    "PermissionAsserter",
    "ReasoningPart",
    "RetryPolicy",
    "SQLiteStore",
    "Session",
    "SessionInfo",
    "SessionLocation",
    "SessionStatus",
    "SessionStore",
    "SessionUpdated",
    "Sessions",
    "StepFinishPart",
    "StepStartPart",
    "StopReason",
    "StoredMessage",
    "TextPart",
    "ToolPart",
    "ToolProgress",
    "ToolState",
    "TurnResult",
    "UserInfo",
    "part_from_json",
    "part_to_json",
]

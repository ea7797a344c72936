"""Sessions: the durable store, the runner (steps, dispatch, final step, cancellation) and the tool-part state machine.

See ``docs/sessions.md``. The names here are the user surface: :class:`Sessions` / :class:`Session` (``prompt``,
``cancel``), what a turn returns (:class:`TurnResult`, :class:`TurnCall`), the :class:`SessionStore` protocol and
:class:`SQLiteStore`, the stored records (sessions, messages, parts) and the events a UI reads on the bus. What
tether's own packages share beyond that (the runner's texts, the durable event union, the part codec) is in
:mod:`tether.session.internal`.
"""

from typing import TYPE_CHECKING, Any

from ._events import (
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
from ._questions import (
    PendingQuestion,
    Question,
    QuestionAsked,
    QuestionOption,
    QuestionReplied,
    QuestionService,
)
from ._runner import RetryPolicy, StopReason, TurnCall, TurnResult
from ._session import Session, Sessions
from ._sqlite import SQLiteStore
from ._step import CANCEL_GRACE
from ._store import SessionStore, StoredMessage

if TYPE_CHECKING:
    from ._postgres import PostgresStore

__all__ = [
    "CANCEL_GRACE",
    "AssistantInfo",
    "FilePart",
    "MessageError",
    "MessageInfo",
    "MessageUpdated",
    "Part",
    "PartDelta",
    "PartUpdated",
    "PendingQuestion",
    "PostgresStore",
    "Question",
    "QuestionAsked",
    "QuestionOption",
    "QuestionReplied",
    "QuestionService",
    "ReasoningPart",
    "RetryPolicy",
    "SQLiteStore",
    "Session",
    "SessionInfo",
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
    "TurnCall",
    "TurnResult",
    "UserInfo",
]


def __getattr__(name: str) -> Any:
    # The PostgreSQL store loads only when a process uses it: a run on the SQLite file never imports it.
    if name == "PostgresStore":
        from ._postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Sessions: the runner (steps, dispatch, final step, cancellation) and the tool-part state machine.

See ``docs/sessions.md``. The names here are the user surface: :class:`Sessions` / :class:`Session` (``prompt``,
``cancel``), what a turn returns (:class:`TurnResult`, :class:`TurnCall`), questions, the stored records (sessions,
messages, parts) and the events a UI reads on the bus. What tether's own packages share beyond that (the runner's
texts, the step processor, the protocols the runner asks of its collaborators) is in :mod:`tether.session.internal`.

The records (``SessionInfo``, the parts, the bus events) live in :mod:`tether.records`, below both the store and the
runner; they are re-exported here without a warning because they are this package's surface too: a turn returns its
parts and a UI reads these events from a session, so ``from tether.session import ToolPart`` stays the way to name
them. The stores moved to :mod:`tether.store`: ``tether.session.SQLiteStore``, ``PostgresStore``, ``SessionStore``
and ``StoredMessage`` still work for one release, with a ``DeprecationWarning`` naming the new path.
"""

import warnings
from typing import Any

from ..records import (
    AssistantInfo,
    FilePart,
    MessageError,
    MessageInfo,
    MessageUpdated,
    Part,
    PartDelta,
    PartUpdated,
    ReasoningPart,
    SessionInfo,
    SessionStatus,
    SessionUpdated,
    StepFinishPart,
    StepStartPart,
    TextPart,
    ToolPart,
    ToolProgress,
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
from ._step import CANCEL_GRACE

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
    "Question",
    "QuestionAsked",
    "QuestionOption",
    "QuestionReplied",
    "QuestionService",
    "ReasoningPart",
    "RetryPolicy",
    "Session",
    "SessionInfo",
    "SessionStatus",
    "SessionUpdated",
    "Sessions",
    "StepFinishPart",
    "StepStartPart",
    "StopReason",
    "TextPart",
    "ToolPart",
    "ToolProgress",
    "ToolState",
    "TurnCall",
    "TurnResult",
    "UserInfo",
]


def __getattr__(name: str) -> Any:
    # The stores moved to tether.store (the old names work for one release); PostgresStore still loads only when used.
    from .. import store

    match name:
        case "SQLiteStore":
            moved: Any = store.SQLiteStore
        case "PostgresStore":
            moved = store.PostgresStore
        case "SessionStore":
            moved = store.SessionStore
        case "StoredMessage":
            moved = store.StoredMessage
        case _:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"tether.session.{name} moved to tether.store.{name}; import it from there "
        "(the old path is removed in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )
    return moved

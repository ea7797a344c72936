"""What tether's own packages share from ``tether.session`` beyond its user surface.

``tether.session.__all__`` is what README.md and docs/ show: sessions, turn results, the stored records and the bus
events a UI reads. The names here are for sibling packages (``testing``, ``cli``, ``server``, ...): the runner's
texts, the protocols the runner asks of its collaborators, and the runner's own steps that ``temporal``'s activities
replay (the turn's title and user parts, the step's catalog, a call's input checks and permission asker). They may
change without notice. ``tests/test_exports.py`` pins both lists.
"""

from ._children import MAX_DEPTH, Children, ChildRequest, ChildResult, Subagent
from ._dispatch import (
    DOOM_LOOP_THRESHOLD,
    SURROGATE_INPUT_ERROR,
    DoomLoopDetector,
    PermissionAsserter,
    permission_asker,
)
from ._dispatch import _has_lone_surrogate as has_lone_surrogate
from ._dispatch import _invalid_arguments as invalid_arguments
from ._family import Descendants
from ._history import History
from ._observer import Observe, StepObserver, TurnObserver, TurnSoFar
from ._onecall import OneCallModel
from ._processor import Emitter, StepProcessor
from ._prompts import ABORTED_ERROR, INCOMPLETE_CALL_ERROR, MAX_STEPS_MARKERS, MAX_STEPS_PROMPT
from ._questions import Answers
from ._runner import DEFAULT_MAX_STEPS, resolve_agent
from ._runner import _user_parts as user_parts
from ._session import SessionLocation
from ._session import _model_catalog as model_catalog
from ._session import _title as session_title
from ._turn import AgentLike

__all__ = [
    "ABORTED_ERROR",
    "DEFAULT_MAX_STEPS",
    "DOOM_LOOP_THRESHOLD",
    "INCOMPLETE_CALL_ERROR",
    "MAX_DEPTH",
    "MAX_STEPS_MARKERS",
    "MAX_STEPS_PROMPT",
    "SURROGATE_INPUT_ERROR",
    "AgentLike",
    "Answers",
    "ChildRequest",
    "ChildResult",
    "Children",
    "Descendants",
    "DoomLoopDetector",
    "Emitter",
    "History",
    "Observe",
    "OneCallModel",
    "PermissionAsserter",
    "SessionLocation",
    "StepObserver",
    "StepProcessor",
    "Subagent",
    "TurnObserver",
    "TurnSoFar",
    "has_lone_surrogate",
    "invalid_arguments",
    "model_catalog",
    "permission_asker",
    "resolve_agent",
    "session_title",
    "user_parts",
]

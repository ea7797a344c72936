"""What tether's own packages share from ``tether.session`` beyond its user surface.

``tether.session.__all__`` is what README.md and docs/ show: sessions, turn results, the stored records and the bus
events a UI reads. The names here are for sibling packages (``testing``, ``cli``, ``server``, ...): the runner's
texts, the protocols the runner asks of its collaborators. They may change
without notice. ``tests/test_exports.py`` pins both lists.
"""

from ._children import MAX_DEPTH, Children, ChildRequest, ChildResult, Subagent
from ._dispatch import DOOM_LOOP_THRESHOLD, DoomLoopDetector, PermissionAsserter
from ._family import Descendants
from ._history import History
from ._observer import Observe, StepObserver, TurnObserver, TurnSoFar
from ._onecall import OneCallModel
from ._processor import StepProcessor
from ._prompts import ABORTED_ERROR, INCOMPLETE_CALL_ERROR, MAX_STEPS_MARKERS, MAX_STEPS_PROMPT
from ._questions import Answers
from ._session import SessionLocation
from ._turn import AgentLike

__all__ = [
    "ABORTED_ERROR",
    "DOOM_LOOP_THRESHOLD",
    "INCOMPLETE_CALL_ERROR",
    "MAX_DEPTH",
    "MAX_STEPS_MARKERS",
    "MAX_STEPS_PROMPT",
    "AgentLike",
    "Answers",
    "ChildRequest",
    "ChildResult",
    "Children",
    "Descendants",
    "DoomLoopDetector",
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
]

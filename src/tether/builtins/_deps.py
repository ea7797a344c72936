"""The services a built-in tool captures when it is constructed (built-ins never look services up per call)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Literal

from .._record import record
from ..session import Question
from ..session.internal import Answers, ChildRequest, ChildResult
from ..tools import ToolContext

if TYPE_CHECKING:
    from ..bus import Bus
    from ..location import Location
    from ..output import OutputStore
    from ..permissions import PermissionService
    from ..sandbox import Sandbox
    from ..session.internal import Subagent
    from ..store.internal import TodoStore
    from ._skills import Skills

__all__ = ["AskQuestions", "BuiltinDeps", "RunChild"]

AskQuestions = Callable[[ToolContext, Sequence[Question]], Awaitable[Answers]]
"""What the runtime gives the ``question`` tool: ask a person ``questions`` for the call ``ctx``, return the answers."""

RunChild = Callable[[ChildRequest], Awaitable[ChildResult]]
"""What the runtime gives the ``task`` tool: run one subagent turn in a new or resumed child session."""


@record
class BuiltinDeps:
    """Location (path resolution), the permission service (asked at the point of action), the output store.

    ``todos`` is where the session todo lists live (the runtime's session store): without it ``todowrite`` and
    ``todoread`` are not built. ``bus`` receives ``TodoUpdated`` when a list changes. ``skills`` are the Agent
    Skills found for the Location (``skill.discover_skills``): the ``skill`` tool is built when there is at least one.

    ``questions`` and ``children`` are narrow callables the runtime provides (ask a person structured questions; run
    a subagent's turn in a child session): without them ``question`` and ``task`` are not built. ``subagents`` are
    the agents ``task``'s description lists (the Location's tool lists those of the default agent; each session gets
    a ``task`` listing its own agent's).

    ``sandbox`` holds every process the bash tool starts (``tether.sandbox``): ``"auto"`` (the default) is the best
    mechanism this machine offers with the default settings, found once per process; ``None`` runs them unconfined.
    The runtime passes its own (the user's ``sandbox`` settings and rules).
    """

    location: Location
    permissions: PermissionService
    output: OutputStore
    shell: str | None = None
    todos: TodoStore | None = None
    skills: Skills | None = None
    bus: Bus | None = None
    questions: AskQuestions | None = None
    children: RunChild | None = None
    subagents: tuple[Subagent, ...] = ()
    sandbox: Sandbox | Literal["auto"] | None = "auto"

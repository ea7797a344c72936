"""What one turn carries: :class:`TurnContext`, built by the session when a turn starts and read by every step."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from .._record import record
from ..llm import Model, RetryPolicy
from ..records import SessionInfo
from ..rules import Rule
from ..tools import ToolRegistry
from ..tools.internal import Entry, Materialization
from ._dispatch import CallPool, DoomLoopDetector, PermissionAsserter
from ._history import History
from ._processor import Emitter

if TYPE_CHECKING:
    from ._observer import TurnObserver

__all__ = ["AgentLike", "TurnContext"]


class AgentLike(Protocol):
    """What the runner needs from an agent (``tether.permissions.Agent`` satisfies it)."""

    @property
    def name(self) -> str: ...
    @property
    def rules(self) -> Sequence[Rule]: ...
    @property
    def steps(self) -> int | None: ...
    @property
    def prompt(self) -> str | None: ...
    @property
    def options(self) -> Mapping[str, Any]: ...


@record
class TurnContext:
    """Everything one turn needs, fixed for the turn (the agent is resolved again at every step, by name).

    ``pool`` holds the turn's call tasks (opened by :func:`~tether.session._failures.turn_calls`); ``limiter`` caps
    the calls that settle at once (``None``: no cap); ``cancel_grace`` is how long a cancelled step waits for its
    calls' cleanup. ``system`` texts are already storable (``tether.storable.visible``). ``root`` (the Location's
    root) and ``deps`` (the session's application dependencies) reach every call's ``ToolContext``. ``trace`` is the
    turn's observer (``_observer.py``: telemetry's trace; ``None``: not observed, no hook does anything). ``visible`` is the
    turn's model's catalog rules (hides more than the agent's rules, at every step's materialize).
    """

    info: SessionInfo
    tools: ToolRegistry
    agents: Mapping[str, AgentLike]
    emitter: Emitter
    history: History
    doom: DoomLoopDetector
    permissions: PermissionAsserter | None
    retry: RetryPolicy
    model: Model
    visible: Callable[[Entry], bool] | None = None
    pool: CallPool
    system: Sequence[str] = ()
    options: Mapping[str, Any]
    limiter: anyio.CapacityLimiter | None = None
    cancel_grace: float
    root: Path | None = None
    deps: Any = None
    codemode: Callable[[str, Materialization, ToolRegistry], Materialization] | None = None
    """Code Mode's catalog transform (``tether.codemode.CodeMode``), applied after each step's materialize."""
    trace: TurnObserver | None = None

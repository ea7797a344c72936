"""The hooks a turn calls on whatever observes it: the interface ``session`` defines and an observer implements.

An observer (today ``tether.telemetry``'s traces) stands above the runner and is never imported by it: the service
is given a factory (``Sessions(observe=...)``, :data:`Observe`; the runtime installs telemetry's ``turn_trace``)
that is called once per turn with the session's record and the turn's model, and returns the turn's
:class:`TurnObserver` or ``None``. ``None`` means the turn is not observed, and then every later hook is one
``is None`` test: nothing is built per step or per call.

What the runner calls, in order:

1. :meth:`TurnObserver.run`, once, with the turn's steps as ``work``: it awaits them (it may make its own context
   current around them) and sees whatever they raise, which it re-raises unchanged;
2. :meth:`TurnObserver.chat`, once per step, after the step's assistant message was recorded: the step's
   :class:`StepObserver`, or ``None`` when this step is not observed;
3. :meth:`StepObserver.wrap` around the step's model request and its stream, and :meth:`StepObserver.tool_part`
   with each tool part the store has taken during the step (pending, running, settled: the durable record of law 7,
   whatever settled the call), through the step's emitter (:class:`ObservedEmitter`).

Hooks run in the runner's path: they must not raise anything but what ``work`` or ``stream`` raised, and must not
block.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..records import PartUpdated, ToolPart
from ._processor import Emitter

if TYPE_CHECKING:
    from ..content import Content
    from ..errors import ProviderError
    from ..llm import Model, ModelRequest, Usage
    from ..records import AssistantInfo, DurableEvent, SessionInfo
    from ._processor import StepProcessor

__all__ = ["Observe", "ObservedEmitter", "StepObserver", "TurnObserver", "TurnSoFar"]


class TurnSoFar(Protocol):
    """What a turn has done, as its observer reads it (the runner's ``TurnProgress``), complete once it ended."""

    @property
    def steps(self) -> int: ...
    @property
    def tool_calls(self) -> int: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def text(self) -> str:
        """The last step's text."""
        ...

    @property
    def stop(self) -> str:
        """Why the turn stopped (``TurnResult.stop``: ``done``, ``declined``, ``max_steps``, ``cancelled``)."""
        ...


class StepObserver(Protocol):
    """What one step tells its observer (see the module)."""

    def wrap(
        self,
        stream: Callable[[], Awaitable[ProviderError | None]],
        processor: StepProcessor,
        defect: Callable[[], BaseException | None],
    ) -> Callable[[], Awaitable[ProviderError | None]]:
        """``stream`` (the step's model request and its consumption, returning the provider error it ended with)
        wrapped by the observer. ``processor`` holds the step's parts, finish reason and usage once ``stream`` has
        returned; ``defect`` tells the defect the step's failure policy contained instead of raising, if any."""
        ...

    def tool_part(self, part: ToolPart) -> None:
        """The store has taken ``part`` (a tool part of this step, in any state)."""
        ...


class TurnObserver(Protocol):
    """What one turn tells its observer (see the module)."""

    async def run(
        self,
        work: Awaitable[None],
        system: Sequence[str],
        progress: TurnSoFar,
        user_id: str,
        user: Sequence[Content],
    ) -> None:
        """Await ``work`` (the turn's steps), re-raising whatever it raises.

        ``system`` is the turn's system texts, ``user_id`` and ``user`` its user message and parts; ``progress`` is
        what the turn has done, complete once ``work`` has ended.
        """
        ...

    def chat(self, request: ModelRequest, info: AssistantInfo, step: int) -> StepObserver | None:
        """The observer of step ``step`` (its request and assistant message), or ``None`` to leave it unobserved."""
        ...


Observe = Callable[["SessionInfo", "Model"], "TurnObserver | None"]
"""Called once per turn (the session's record, the turn's model): the turn's observer, or ``None``."""


class ObservedEmitter(Emitter):
    """The turn's emitter for an observed step: each tool part the store has taken goes to the step's observer."""

    __slots__ = ("_inner", "_observer")

    def __init__(self, inner: Emitter, observer: StepObserver) -> None:  # pyright: ignore[reportMissingSuperCall]
        self._inner = inner
        self._observer = observer

    def durable(self, event: DurableEvent) -> None:
        self._inner.durable(event)
        if isinstance(event, PartUpdated) and isinstance(event.part, ToolPart):
            self._observer.tool_part(event.part)

    def stored(self, event: PartUpdated) -> None:
        self._inner.stored(event)
        if isinstance(event.part, ToolPart):
            self._observer.tool_part(event.part)

    def live(self, event: Any) -> None:
        self._inner.live(event)

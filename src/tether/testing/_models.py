"""Test double models: :class:`ScriptedModel` plays a fixed list of steps; :class:`FunctionModel` computes each.

Both record every request they receive (``requests``) and emit the normal event vocabulary, so a session cannot tell
them from a provider adapter.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType

from ..llm import Event, Model, ModelRequest
from ._script import Step, StepItem

__all__ = ["FunctionModel", "ScriptError", "ScriptedModel"]

StepLike = Step | StepItem | Sequence[StepItem]


class ScriptError(AssertionError):
    """A scripted model was asked for a step it does not have, or finished with steps left over."""


async def _play(step: Step) -> AsyncIterator[Event]:
    for event in step.events():
        if isinstance(event, BaseException):
            raise event
        yield event


class ScriptedModel(Model):
    """Plays ``steps`` in order, one per request; fails loudly on an unexpected or a leftover step.

    Use as a context manager (or call :meth:`assert_done`) to check that every step was played.
    """

    provider = "test"
    model_id = "scripted"

    def __init__(self, steps: Sequence[StepLike] = ()) -> None:
        self._steps = [Step.of(s) for s in steps]
        self._next = 0
        self.requests: list[ModelRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._next

    def add(self, *steps: StepLike) -> None:
        """Append more steps to the script."""
        self._steps.extend(Step.of(s) for s in steps)

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        """Play the next step.

        Raises:
            ScriptError: the script has no step left.
        """
        if self._next >= len(self._steps):
            raise ScriptError(
                f"ScriptedModel: unexpected step {self._next + 1}; the script has {len(self._steps)} step(s)"
            )
        step = self._steps[self._next]
        self._next += 1
        self.requests.append(request)
        return _play(step)

    def assert_done(self) -> None:
        """Raises:
        ScriptError: some scripted steps were never requested."""
        if self.remaining:
            raise ScriptError(f"ScriptedModel: {self.remaining} scripted step(s) were never played")

    def __enter__(self) -> ScriptedModel:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if t is None:
            self.assert_done()


StepFunction = Callable[[ModelRequest], StepLike | Awaitable[StepLike]]


class FunctionModel(Model):
    """Computes each step from the request with ``function(request) -> step`` (sync or async)."""

    provider = "test"
    model_id = "function"

    def __init__(self, function: StepFunction) -> None:
        self._function = function
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        self.requests.append(request)
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[Event]:
        value = self._function(request)
        if inspect.isawaitable(value):
            value = await value
        async for event in _play(Step.of(value)):
            yield event

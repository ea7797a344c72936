"""In-process typed event bus.

Events are frozen dataclasses with a class-level ``type`` string (``"permission.asked"``, ``"tool.progress"``, ...).
Subscribers are plain callables invoked synchronously, in subscription order, on the publisher's thread; they must be
quick and must not block (hand work to a task or a memory stream if it is slow). A failing subscriber is logged and
never breaks the publisher. Durable events are written to the store by the session layer, not by the bus.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = ["Bus", "Event", "Subscription"]

log = logging.getLogger(__name__)


class Event(Protocol):
    """What the bus carries: any object with a ``type`` name."""

    type: ClassVar[str]


E = TypeVar("E")


@dataclass(eq=False, slots=True)
class Subscription:
    """A handle that removes its subscriber when closed (also a context manager)."""

    _bus: Bus
    _key: str
    _handler: Callable[[Any], None]
    _closed: bool = field(default=False)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._bus._remove(self._key, self._handler)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Bus:
    """Publish/subscribe for typed events, keyed by the event class (or ``"*"`` for every event)."""

    def __init__(self) -> None:
        self._handlers: dict[str, tuple[Callable[[Any], None], ...]] = {}

    def subscribe(self, event_type: type[E] | str, handler: Callable[[E], None]) -> Subscription:
        """Call ``handler`` for every published event of ``event_type`` (a class with ``type``, or ``"*"``)."""
        key = event_type if isinstance(event_type, str) else event_type.type  # type: ignore[attr-defined]
        self._handlers[key] = (*self._handlers.get(key, ()), handler)
        return Subscription(self, key, handler)

    def subscribed(self, event_type: type[Any]) -> bool:
        """Whether a handler is subscribed to ``event_type`` by its class (``"*"`` subscribers do not count).

        How a service that needs someone to act on an event (answering a question) knows that someone is there.
        """
        return bool(self._handlers.get(event_type.type))

    def delivers(self, event_type: type[Any]) -> bool:
        """Whether publishing an event of ``event_type`` would reach a handler (its subscribers or ``"*"``'s).

        How a publisher on a hot path skips building an event that nobody receives.
        """
        handlers = self._handlers
        return event_type.type in handlers or "*" in handlers

    def _remove(self, key: str, handler: Callable[[Any], None]) -> None:
        handlers = list(self._handlers.get(key, ()))
        if handler in handlers:
            handlers.remove(handler)
        if handlers:
            self._handlers[key] = tuple(handlers)
        else:
            self._handlers.pop(key, None)

    def publish(self, event: Any) -> None:
        """Deliver ``event`` to its type's subscribers, then to ``"*"`` subscribers."""
        handlers = self._handlers
        if not handlers:
            return
        for key in (event.type, "*"):
            for handler in handlers.get(key, ()):
                try:
                    handler(event)
                except Exception:
                    log.exception("bus subscriber failed for %s", event.type)

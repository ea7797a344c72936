"""The tool calls running in this process, by session and call id: where permission events are recorded.

Call ids are unique only within a session (local servers number them ``call_0``, ``call_1``, ... in every session),
so a call is keyed by ``(session_id, call_id)``. A ``permission.replied`` event carries only the request's id, so
the ids of requests asked for a live call map back to it; each is forgotten when the request is answered or when
its call ends (a request withdrawn by a cancelled waiter publishes nothing), so nothing here grows with history.
"""

from __future__ import annotations

from ._processor import StepProcessor

__all__ = ["CallKey", "LiveCalls"]

CallKey = tuple[str, str]
"""``(session_id, call_id)``."""


class LiveCalls:
    """The live calls of every session of one :class:`~tether.session.Sessions` and their pending permission ids."""

    __slots__ = ("_asks", "_calls", "_requests")

    def __init__(self) -> None:
        self._calls: dict[CallKey, StepProcessor] = {}
        self._requests: dict[str, CallKey] = {}
        self._asks: dict[CallKey, list[str]] = {}

    def __len__(self) -> int:
        return len(self._calls)

    @property
    def pending_requests(self) -> int:
        """How many asked permission requests are remembered (each for a live call)."""
        return len(self._requests)

    def add(self, session_id: str, call_id: str, processor: StepProcessor) -> None:
        self._calls[(session_id, call_id)] = processor

    def discard(self, session_id: str, call_id: str) -> None:
        """The call ended: forget it and the requests asked for it."""
        key = (session_id, call_id)
        self._calls.pop(key, None)
        if self._asks:
            for request_id in self._asks.pop(key, ()):
                self._requests.pop(request_id, None)

    def get(self, key: CallKey) -> StepProcessor | None:
        return self._calls.get(key)

    def asked(self, request_id: str, key: CallKey) -> None:
        """Remember that request ``request_id`` was asked for the call ``key`` (only while the call is live)."""
        if key in self._calls and request_id not in self._requests:
            self._requests[request_id] = key
            self._asks.setdefault(key, []).append(request_id)

    def answered(self, request_id: str) -> CallKey | None:
        """The call request ``request_id`` was asked for, forgotten now that it is answered."""
        key = self._requests.pop(request_id, None)
        if key is not None:
            asks = self._asks.get(key)
            if asks is not None:
                asks.remove(request_id)
                if not asks:
                    del self._asks[key]
        return key

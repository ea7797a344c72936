"""The stream deadlines: the first event of a request, and the idle time between events.

The deadlines are measured on *parsed* events, so an SSE keep-alive comment (``: ping``), which the SDK's decoder
drops, never resets them. They are enforced on the response's byte stream, one anyio cancel scope per network read
(not per event: a read carries many events, and a scope with a deadline costs several microseconds):

* before the first event, a read must finish by ``start + first_event`` (``start`` is when the request was sent);
* once events flow, a read that starts after new events were parsed gets ``now + idle``; a read that starts when no
  event was parsed since the previous read (only a comment, or part of an event, arrived) keeps the old deadline.

The adapter counts the events it receives (:attr:`StreamClock.events`: one integer increment per event). The
response's ``stream`` (the local client's body, or httpx's public ``Response.stream``, an ``AsyncByteStream``) is
wrapped right after the response opens and before anything reads it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio

from ...errors import ProviderTimeoutError

__all__ = ["StreamClock", "WatchedStream", "watch"]


class StreamClock:
    """The deadlines of one request's stream and the count of events parsed so far."""

    __slots__ = ("events", "first_deadline", "first_event", "idle")

    def __init__(self, *, first_deadline: float, first_event: float, idle: float) -> None:
        self.first_deadline = first_deadline
        self.first_event = first_event
        self.idle = idle
        self.events = 0


def _seconds(value: float) -> str:
    return f"{value:g}"


class WatchedStream:
    """A response body whose reads fail with :class:`ProviderTimeoutError` when the clock's deadline passes."""

    def __init__(self, inner: Any, clock: StreamClock) -> None:
        self._inner = inner
        self._clock = clock

    async def __aiter__(self) -> AsyncIterator[bytes]:
        clock = self._clock
        chunks = self._inner.__aiter__()
        seen = 0
        deadline = clock.first_deadline
        while True:
            if clock.events != seen:
                seen = clock.events
                deadline = anyio.current_time() + clock.idle
            chunk: bytes | None = None
            with anyio.CancelScope(deadline=deadline) as scope:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
            if scope.cancelled_caught:
                if seen == 0:
                    raise ProviderTimeoutError(
                        f"no stream event within {_seconds(clock.first_event)} s of the request "
                        "(timeouts.first_event)",
                        deadline="first_event",
                        seconds=clock.first_event,
                    )
                raise ProviderTimeoutError(
                    f"no stream event for {_seconds(clock.idle)} s (timeouts.idle; keep-alive comments do not "
                    "count)",
                    deadline="idle",
                    seconds=clock.idle,
                )
            if chunk is not None:
                yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


_httpx_watched: type[WatchedStream] | None = None


def _watched_class(stream: Any) -> type[WatchedStream]:
    """:class:`WatchedStream`, or for an httpx response its twin that httpx accepts (an ``AsyncByteStream``)."""
    global _httpx_watched
    httpx2 = sys.modules.get("httpx2")  # loaded when the response is httpx's: never imported here
    if httpx2 is None or not isinstance(stream, httpx2.AsyncByteStream):
        return WatchedStream
    if _httpx_watched is None:
        _httpx_watched = type("HttpxWatchedStream", (WatchedStream, httpx2.AsyncByteStream), {})
    return _httpx_watched


def watch(response: Any, clock: StreamClock) -> None:
    """Wrap ``response``'s body so that its reads keep ``clock``'s deadlines (before anything reads it)."""
    stream = getattr(response, "stream", None)
    if stream is not None and not isinstance(stream, WatchedStream):
        response.stream = _watched_class(stream)(stream, clock)

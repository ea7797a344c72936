"""Tool deadlines on one shared timer: each call keeps a cancel scope of its own, the timer is one task.

A tool's deadline (``Tool(timeout=...)``, 300 s by default) used to be a cancel scope with a deadline per call: anyio
arms an event-loop timer when such a scope is entered and disarms it when it exits, which was half the cost of
settling a quick call. Calls settled in a session share :class:`Deadlines` instead: each call still runs in a
cancel scope of its own (cancelling it touches that call only), without a deadline, and the call is put on a queue;
one watcher task sleeps until the earliest deadline and cancels the calls still running then. A call whose deadline
comes before the watcher's next wake-up moves that wake-up (the deadline of the watcher's sleep) without waking it. Deadlines of one
timeout arrive in ascending order, so a queue per timeout value is kept sorted by appending, and settled calls are
dropped from its head as new ones come (memory stays bounded by the calls behind a still-running one).

Deadlines are kept on ``time.monotonic()`` (a clock read costs a tenth of ``anyio.current_time()``, which looks up
the running backend every time) and turned into the backend's clock only for the watcher's sleep, as a delay from
now, so any backend's clock works. Everything here runs on the event loop thread; nothing is shared with other
threads. A call settled without a
``Deadlines`` (outside a session) keeps its own timer: the result is the same, only the cost differs.
"""

from __future__ import annotations

import math
import time
from collections import deque

import anyio

__all__ = ["Deadlines", "Watch"]


class Watch:
    """One call on the timer: its scope and deadline; ``expired`` once the watcher cancelled it for its deadline."""

    __slots__ = ("deadline", "done", "expired", "scope")

    def __init__(self, scope: anyio.CancelScope, deadline: float) -> None:
        self.scope = scope
        self.deadline = deadline
        self.done = False  # the call left its scope: the watcher skips it
        self.expired = False


class Deadlines:
    """The shared timer of the calls settled on one task group (see the module docstring).

    Start :meth:`run` in a task group that outlives the calls, and :meth:`close` it when they are over.
    """

    __slots__ = ("_closed", "_closing", "_next", "_queues", "_sleep")

    def __init__(self) -> None:
        self._queues: dict[float, deque[Watch]] = {}
        self._next = math.inf  # when the watcher wakes up next
        self._sleep: anyio.CancelScope | None = None  # the watcher's sleep, until ``_next``
        self._closing = anyio.Event()
        self._closed = False

    def watch(self, scope: anyio.CancelScope, timeout: float) -> Watch:
        """Put a call's ``scope`` on the timer: it is cancelled if the call still runs ``timeout`` s from now."""
        deadline = time.monotonic() + timeout
        queue = self._queues.get(timeout)
        if queue is None:
            queue = self._queues[timeout] = deque()
        while queue and queue[0].done:
            queue.popleft()
        entry = Watch(scope, deadline)
        queue.append(entry)
        if deadline < self._next:  # earlier than the watcher's next wake-up: it wakes up then instead
            self._next = deadline
            if self._sleep is not None:
                self._sleep.deadline = anyio.current_time() + timeout
        return entry

    def close(self) -> None:
        """Stop the watcher (calls still on the timer are no longer cancelled for their deadline)."""
        self._closed = True
        self._closing.set()

    async def run(self) -> None:
        """The watcher: sleep until the earliest deadline, cancel what is due, repeat until :meth:`close`."""
        while not self._closed:
            now = time.monotonic()
            earliest = math.inf
            for queue in self._queues.values():
                while queue and (queue[0].done or queue[0].deadline <= now):
                    entry = queue.popleft()
                    if not entry.done:
                        entry.expired = True
                        entry.scope.cancel()
                if queue:
                    earliest = min(earliest, queue[0].deadline)
            self._next = earliest
            wake = math.inf if earliest == math.inf else anyio.current_time() + (earliest - now)
            with anyio.CancelScope(deadline=wake) as self._sleep:
                await self._closing.wait()
            self._sleep = None

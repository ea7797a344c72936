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

A **lane** (:class:`Lane`) removes the last per-call cost: entering and leaving a cancel scope (about a third of
settling a quick call). A task that settles calls one after another (a session's call task) keeps one cancel scope
open across them, and each call's deadline cancels that scope. A call's timeout then does not come back from
``settle`` as a result: the cancellation unwinds the call up to the task's scope, which anyio's own rules decide
(the scope swallows its own cancellation only; an outer cancellation, ``Session.cancel``, goes on). Out of the
scope, the task finishes the expired call through the :class:`Expiry` the call left on the lane (its ``Tool "x"
timed out`` outcome, after hooks and bounding, recorded like any other) and opens a fresh scope for the next call.
A tool never sees the difference: its own scopes nest inside the lane's, as they nested inside a scope per call.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["Deadlines", "Expiry", "Lane", "Watch"]


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


class Expiry:
    """How a lane's task finishes a call whose deadline cancelled the lane (see :class:`Lane`).

    ``expired()`` records the call's timeout (run out of the cancelled scope, in the lane's task); ``abandon()`` is
    called instead when an outer cancellation came with the deadline (the call is over without an outcome).
    """

    __slots__ = ("abandon", "expired")

    def __init__(self, expired: Callable[[], Awaitable[None]], abandon: Callable[[], None]) -> None:
        self.expired = expired
        self.abandon = abandon


class Lane:
    """One task's calls, settled one after another under one cancel scope (see the module docstring).

    The task opens ``scope`` and keeps it open across calls; ``settle(..., lane=lane)`` puts each call's deadline
    on ``deadlines`` against that scope and leaves its :class:`Watch` in ``watch``. When a deadline cancels the scope,
    the cancellation unwinds the call; whoever ran it leaves an :class:`Expiry` in ``expiry``, and the task, once
    out of the scope, runs it and opens a new scope.
    """

    __slots__ = ("deadlines", "expiry", "raw", "scope", "watch")

    def __init__(self, deadlines: Deadlines) -> None:
        self.deadlines = deadlines
        self.scope = anyio.CancelScope()
        self.watch: Watch | None = None
        """The deadline of the call settling now (or last)."""
        self.raw: object = None
        """The input of that call as its before hooks left it (its after hooks see the same on a timeout)."""
        self.expiry: Expiry | None = None

    @property
    def expired(self) -> bool:
        """Whether the current call's deadline cancelled the lane."""
        watch = self.watch
        return watch is not None and watch.expired

"""The turn's call tasks (:class:`CallPool`): where a step's tool calls run, and what the failure policy opens per turn.

Calls run on long-lived tasks of the turn's task group. Spawning an anyio task costs more than settling a quick call
(a task scope, a handle, a wrapper coroutine), so tasks are called one at a time: while calls are queued, one task
(idle, or new when none is idle) is always on its way, and the task that takes a call calls the next one before it
runs its own. A call that waits therefore never holds up the calls behind it (they start one loop iteration apart),
and a burst of quick calls (a 100-call parallel step) runs on a task or two, not a hundred. Each task settles its
calls on a :class:`~tether.tools.internal.Lane`: one cancel scope across its calls, which a call's deadline cancels;
the task then records that call's timeout out of the scope and opens a new one (``tether.tools._deadlines``), so a
quick call enters no cancel scope of its own.

The dispatcher (``_dispatch.py``) submits calls here; the failure policy (``_failures.turn_calls``) opens and closes
the pool with the turn. Both import this module, neither imports the other for it. What another thread hands to the
turn (a tool's progress from a worker thread) comes back through the loop (:meth:`CallPool.call_soon`), no task kept
for it: a turn starts one task of its own (the deadlines' timer) besides the call tasks.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.lowlevel import current_token

from ..tools.internal import Deadlines, Lane

__all__ = ["CallPool", "Job"]

_TASK_NAME = "tether.session.CallPool._work"
_DEADLINES_NAME = "tether.tools.Deadlines.run"

Job = Callable[[Lane], Awaitable[None]]
"""A job of the pool: it runs on the lane of the task that took it."""


class CallPool:
    """Tasks in ``task_group`` that run submitted jobs; a job never waits for another (see the module docstring).

    While jobs are queued, one task is on its way for them (an idle task woken, or a new one started); the task that
    takes a job calls the next task first, so a job that waits never holds up the queue. ``close()`` lets idle tasks
    end; an exception in a job propagates to the task group like any child's. Each task runs its jobs on a
    :class:`Lane` of :attr:`deadlines` (one cancel scope across jobs; see the module docstring). :meth:`call_soon`
    carries work from other threads to the loop until ``close()``.
    """

    __slots__ = (
        "_closed",
        "_coming",
        "_idle",
        "_jobs",
        "_task_group",
        "_token",
        "deadlines",
        "event",
        "loop_thread",
    )

    def __init__(self, task_group: TaskGroup) -> None:
        self._task_group = task_group
        self._jobs: deque[Job] = deque()
        self._idle: list[anyio.Event] = []
        self._closed = False
        self._coming = False  # a task was called (started or woken) and has not taken a job yet
        self.loop_thread = threading.get_ident()
        self._token = current_token()
        self.event: Callable[[], anyio.Event] = type(anyio.Event())
        """A new ``anyio.Event`` of the running backend, without looking the backend up (a step makes two)."""
        self.deadlines = Deadlines()
        """The tool deadlines of the turn's calls, on one timer (``tether.tools._deadlines``)."""
        task_group.start_soon(self.deadlines.run, name=_DEADLINES_NAME)

    def call_soon(self, func: Callable[[Any], object], arg: Any) -> None:
        """From any thread: run ``func(arg)`` on the turn's event loop soon, without waiting (dropped once it ended).

        ``func`` runs as a callback of the loop, not in a task: it must not block.
        A blocking portal did this before, a task of the turn's group started at every turn (with a task group, an
        event and two wake-ups of its own) for what only a tool reporting from a thread uses.
        """
        if self._closed:
            return
        token = self._token
        try:  # anyio's way back to a loop (``tether._blocking.run_soon``): one wake-up of the loop
            token.backend_class.run_sync_soon(self._deliver, (func, arg), token.native_token)
        except anyio.RunFinishedError:
            pass  # the loop is gone

    def _deliver(self, func: Callable[[Any], object], arg: Any) -> None:
        if not self._closed:  # the turn ended after it was handed over: dropped, as one handed over after
            func(arg)

    def submit(self, job: Job) -> None:
        """Queue ``job``: a task takes it once the jobs queued before it are taken, whatever they then wait for."""
        self._jobs.append(job)
        self._call()

    def _call(self) -> None:
        """Have one task come for the queue (an idle one, else a new one), unless one is already on its way."""
        if self._coming:
            return
        self._coming = True
        if self._idle:
            self._idle.pop().set()
        else:
            # named here: anyio would otherwise build the name from the function at every start (a task per call)
            self._task_group.start_soon(self._work, name=_TASK_NAME)

    def close(self) -> None:
        """No more jobs: each task ends once it is idle."""
        self._closed = True
        self.deadlines.close()
        for wake in self._idle:
            wake.set()
        self._idle.clear()

    async def _work(self) -> None:
        self._coming = False  # started: only ever by ``_call``, which had one task on its way
        lane = Lane(self.deadlines)
        while True:
            closed = left = False
            try:
                with lane.scope:
                    closed = await self._run_jobs(lane)
                left = True  # else an outer cancellation (or a job's exception) is ending the task
            finally:
                if not left and lane.expiry is not None:
                    lane.expiry.abandon()
            if closed:
                return
            # A call's deadline cancelled the lane's scope (which caught its own cancellation): the call that
            # expired, if it was still running, is finished here, and the task goes on in a new scope.
            lane.scope = anyio.CancelScope()
            expiry, lane.expiry = lane.expiry, None
            if expiry is not None:
                await expiry.expired()

    async def _run_jobs(self, lane: Lane) -> bool:
        """Take jobs until the pool closes (``True``) or a deadline cancels the lane's scope (``False``)."""
        jobs = self._jobs
        scope = lane.scope
        while True:
            while jobs:
                job = jobs.popleft()
                if jobs:
                    self._call()  # the rest must not wait if this job does
                lane.watch = None
                await job(lane)
                if scope.cancel_called:  # the deadline came as the call returned anyway: a new scope
                    return False
            if self._closed:
                return True
            wake = self.event()
            self._idle.append(wake)
            await wake.wait()
            self._coming = False  # woken: only ever by ``_call``

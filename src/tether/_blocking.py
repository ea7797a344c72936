"""Blocking work off the event loop in batches: one worker-thread hand-off for all the calls waiting at that moment.

Law 9 puts filesystem work in worker threads. A hand-off costs far more than a path resolution or a one-page read
(two thread switches and a wake-up of the loop: ~80 µs of CPU each in a burst, against ~10 µs for the work), and
a parallel step asks for them all at once: 100 ``read`` calls made 200 hand-offs. :func:`run_batched` queues the
work instead. The first caller with nothing running becomes the leader: it hands the queue to one worker thread,
which runs the work queued so far and, before it returns, whatever was queued meanwhile (the calls of a parallel
step start one loop iteration apart, so most of a step's work joins a run already under way). Every caller whose
work that thread ran is woken by one event, the run's, when the leader is back. Each caller gets its own result or
exception, as from ``anyio.to_thread.run_sync``.

``bench/blocking.py`` measures it against one ``anyio.to_thread.run_sync`` per piece (a burst of 100 stat + 4 KiB
reads).

The cost of batching is head-of-line blocking: work in a run goes one piece after the other, and a caller hears of
its result when the run ends (a run takes at most :data:`RUN_LIMIT` pieces), so use it only for short filesystem
work (resolving a path, reading one page), never for process waits or network calls.

:func:`hand_off` is one piece of blocking work that may take long (a turn's environment: instruction files, git), on
a thread of its own: an idle one of this module's, woken through its queue, answers by waking the loop
(:func:`run_soon`). ``anyio.to_thread.run_sync`` does the same with a capacity limiter, a checkpoint before and a
shielded scope around: a no-op hand-off 47-120 µs of wall and 44-108 of CPU against 21-23 and 21-22 here (runs of
2,000, load 2-4); a turn makes one.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable
from queue import Empty, SimpleQueue
from typing import Any, Generic, TypeVar, TypeVarTuple

import anyio
import anyio.to_thread
from anyio import RunFinishedError
from anyio.lowlevel import EventLoopToken, RunVar, current_token

__all__ = ["IDLE_SECONDS", "RUN_LIMIT", "THREAD_LIMIT", "hand_off", "run_batched", "run_soon"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

RUN_LIMIT = 1_000
"""Pieces one worker-thread run takes at most; what is queued after them starts a run of its own."""


class _Job(Generic[T]):
    __slots__ = ("abandoned", "args", "error", "func", "ran", "result")

    def __init__(self, func: Callable[..., T], args: tuple[Any, ...]) -> None:
        self.func = func
        self.args = args
        self.ran = False
        self.abandoned = False  # its caller was cancelled while it waited in the queue: never run
        self.result: T | None = None
        self.error: Exception | None = None

    def run(self) -> None:
        try:
            self.result = self.func(*self.args)
        except Exception as exc:  # handed to the caller, which raises it as its own
            self.error = exc
        self.ran = True


class _Queue:
    """The work waiting for this event loop's worker-thread run; ``lock`` orders the loop and the worker thread."""

    __slots__ = ("done", "jobs", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: list[_Job[Any]] = []
        self.done: anyio.Event | None = None
        """The run under way: set when its leader is back (``None``: no run, the next caller leads one)."""


_queue: RunVar[_Queue] = RunVar("tether_blocking_queue")


def _run_all(batch: list[_Job[Any]]) -> None:
    for job in batch:
        if not job.abandoned:
            job.run()


def _drain(queue: _Queue, first: _Job[Any]) -> None:
    """In the worker thread: run ``first``, then what was queued meanwhile, until nothing is or the run is full.

    What is still queued when the run is full is left out of it: woken with the run, those callers queue again.
    """
    first.run()
    taken = 1
    while True:
        with queue.lock:
            batch = queue.jobs
            room = RUN_LIMIT - taken
            if not batch or room <= 0:
                queue.jobs = []  # what is left waits for this run: woken with it, it queues again
                queue.done = None  # from here on, a new caller leads a run of its own
                return
            queue.jobs = batch[room:]
            batch = batch[:room]
        taken += len(batch)
        _run_all(batch)


async def run_batched(func: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run ``func(*args)`` in a worker thread, batched with the other calls waiting (see the module docstring).

    Raises:
        Exception: whatever ``func`` raised.
    """
    try:
        queue = _queue.get()
    except LookupError:
        queue = _Queue()
        _queue.set(queue)
    job: _Job[T] = _Job(func, args)
    while True:
        with queue.lock:
            run = queue.done
            queued = run is not None
            if run is None:
                run = queue.done = anyio.Event()
            else:
                queue.jobs.append(job)
        if queued:
            waited = False
            try:
                await run.wait()
                waited = True
            finally:
                if (
                    not waited
                ):  # cancelled: a run that has not taken it skips it; one that has runs it for no one
                    job.abandoned = True
            if job.ran:
                return _outcome(job)
            continue  # queued when the run was full, or its leader was cancelled before the thread started
        try:
            # Not abandoned on cancel: once the thread has started, this returns when the whole run is over.
            await anyio.to_thread.run_sync(_drain, queue, job)
        finally:
            with queue.lock:
                if queue.done is run:  # cancelled before the thread started: the run never happened
                    queue.done = None
                    queue.jobs = []  # all queued for this run: woken below, they queue again
            run.set()  # everyone woken: those whose work ran have their outcome, the others queue again
        return _outcome(job)


def _outcome(job: _Job[T]) -> T:
    if job.error is not None:
        raise job.error
    return job.result  # type: ignore[return-value]  # set by run() when there is no error


def run_soon(token: EventLoopToken, func: Callable[[*Ts], object], *args: *Ts) -> bool:
    """From any thread: have the event loop of ``token`` (``anyio.lowlevel.current_token()``) run ``func(*args)``
    soon, without waiting for it; false when that loop has finished (nothing runs then).

    anyio's own way back to a loop (``run_sync_soon`` of its backend, what a blocking portal uses to answer its
    caller): one wake-up of the loop, no worker thread blocked on a future, no portal task. ``func`` runs as a
    callback of the loop, not in a task: it must not block, and what it raises goes to the loop's exception handler.
    """
    try:
        token.backend_class.run_sync_soon(func, args, token.native_token)
    except RunFinishedError:
        return False
    return True


IDLE_SECONDS = 10.0
"""Seconds an idle :func:`hand_off` thread waits for work before it ends (as anyio's worker threads)."""

THREAD_LIMIT = 8
"""At most this many :func:`hand_off` threads live at once (busy or idle); a hand-off beyond it (a server with many
turns starting together, or pieces stuck on a hung filesystem) runs through ``anyio.to_thread``, whose own limiter
bounds it: no burst of turns makes threads without end."""


class _Handed:
    """One :func:`hand_off`: the work, its outcome, and the event the loop sets when the thread is done."""

    __slots__ = ("args", "context", "done", "error", "func", "result", "token")

    def __init__(self, func: Callable[..., Any], args: tuple[Any, ...], token: EventLoopToken) -> None:
        self.func = func
        self.args = args
        self.context = contextvars.copy_context()  # what the work sees, as with anyio.to_thread
        self.token = token
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None


class _Worker(threading.Thread):
    """A thread of :func:`hand_off`: takes one piece at a time from its queue while it is in ``_idle``."""

    def __init__(self) -> None:
        super().__init__(name="tether-hand-off", daemon=True)
        self.work: SimpleQueue[_Handed] = SimpleQueue()
        self.waiting = False
        """In ``_idle`` (set and cleared under ``_idle_lock``): a thread whose wait for work ends while it still
        waits has been handed nothing and may end."""

    def run(self) -> None:
        while True:
            try:
                handed = self.work.get(timeout=IDLE_SECONDS)
            except Empty:
                with _idle_lock:
                    if self.waiting:  # nobody took it meanwhile: it ends; else a piece is on its way
                        if self in _idle:
                            _idle.remove(self)
                        _alive.discard(self)
                        return
                continue
            try:
                handed.result = handed.context.run(handed.func, *handed.args)
            except BaseException as exc:  # handed to the caller, which raises it as its own
                handed.error = exc
            with _idle_lock:
                self.waiting = True
                _idle.append(self)  # idle again before the caller hears: its next hand-off finds this thread
            run_soon(handed.token, handed.done.set)  # a caller whose loop has ended has nothing to wake


_idle_lock = threading.Lock()
_idle: list[_Worker] = []
_alive: set[_Worker] = set()


def _forget_threads() -> None:
    """In a forked child: none of the parent's threads exist there (nor may its lock be released)."""
    global _idle_lock
    _idle_lock = threading.Lock()
    _idle.clear()
    _alive.clear()


os.register_at_fork(after_in_child=_forget_threads)


async def hand_off(func: Callable[[*Ts], T], *args: *Ts) -> T:
    """Run ``func(*args)`` in a thread of its own and return its result (see the module docstring).

    A cancelled caller does not wait for it (the work is abandoned: it finishes in its thread, its outcome dropped),
    as ``anyio.to_thread.run_sync(abandon_on_cancel=True)``; so bound the work itself (a hung filesystem keeps only
    its thread). The thread runs it in a copy of the caller's context.

    Raises:
        Exception: whatever ``func`` raised.
    """
    fresh = False
    with _idle_lock:
        worker = _idle.pop() if _idle else None
        if worker is not None:
            worker.waiting = False
        elif len(_alive) < THREAD_LIMIT:
            worker = _Worker()
            _alive.add(worker)
            fresh = True
    if worker is None:  # THREAD_LIMIT threads are busy
        return await anyio.to_thread.run_sync(func, *args, abandon_on_cancel=True)
    handed = _Handed(func, args, current_token())
    worker.work.put(handed)
    if fresh:
        try:
            worker.start()
        except RuntimeError:  # "can't start new thread": the process is at its limit; no phantom counts
            with _idle_lock:
                _alive.discard(worker)
            raise
    await handed.done.wait()
    if handed.error is not None:
        raise handed.error
    return handed.result

"""What the SQLite and PostgreSQL stores share: one thread writes, everyone else queues.

A store keeps one connection, in one thread of its own (law 9: no database work on the event loop). ``append``
queues a durable event and never blocks; a read or a flush queues a :class:`~tether.store._rows.Call` that the
thread runs in its next transaction and answers once that transaction has committed, by waking the caller's loop
(``tether._blocking.run_soon``: no worker thread waits on the answer, so a flush is one hand-off each way). The
thread lets a burst of events gather for a short window before it writes them (:meth:`QueuedStore._batch`), and
whatever is still queued when the thread ends is answered with the store's error, so nothing waits forever.

Each store brings its own connection, transaction and rows (``_sqlite.py``, ``_postgres.py``); this module is the
queue and the answers around them, written once.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import current_token

from .._blocking import run_soon
from ..errors import StoreError
from ..records import DurableEvent
from ._rows import STOP, Call, Stop

__all__ = ["QueuedStore", "nothing"]

T = TypeVar("T")


def nothing(conn: Any) -> None:
    """The read a flush queues: it only waits for what was queued before it to be committed (a store may tell it by
    identity: the PostgreSQL writer answers it without a savepoint)."""


class QueuedStore:
    """The queue, the batch and the answers of a store written by one thread (see the module docstring).

    A subclass connects in its thread (started by its ``open``, which ``__aenter__`` awaits), sets ``_started``'s
    outcome once the connection is open or failed, and writes each batch; ``_max_batch`` caps what one transaction
    takes from the queue.
    """

    _max_batch: int

    def __init__(self, *, window: float) -> None:
        self._window = window
        self._wake = threading.Event()
        """Set by a read or a flush (and by closing): it cuts the batch's window short."""
        self._asking = threading.Lock()
        """Holds a call's put and its wake together against the thread's clear and drain (:meth:`_batch`)."""
        self._queue: queue.SimpleQueue[DurableEvent | Call | Stop] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._started: Future[None] | None = None
        """The thread's connection: its result once open, its exception when it could not be opened."""
        self._closed = False
        self._error: StoreError | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    async def open(self) -> Self:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Write what is queued, then let the thread release what the store holds and close its connection.
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        thread = self._thread
        if thread is None:
            return
        self._queue.put(STOP)
        self._wake.set()
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(thread.join)

    # -- writes ------------------------------------------------------------------------------------------------------

    def append(self, event: DurableEvent) -> None:
        """Queue a durable event (never blocks).

        Raises:
            StoreError: the store is closed or not open, or an earlier write failed.
        """
        if self._error is not None:
            raise self._error
        if self._closed or self._thread is None:
            raise StoreError("The session store is closed")
        self._queue.put(event)

    async def flush(self) -> None:
        """Wait until everything appended so far is committed.

        Raises:
            StoreError: a write failed.
        """
        await self._ask(Call(nothing))
        if self._error is not None:
            raise self._error

    @property
    def error(self) -> StoreError | None:
        """The first write failure, if any (every later append raises it)."""
        return self._error

    # -- the thread's answers ----------------------------------------------------------------------------------------

    async def _ask(self, call: Call) -> Any:
        """Queue ``call`` and wait for the thread's answer (its result, or what it raised).

        Raises:
            StoreError: the store is closed, or its connection could not be opened.
        """
        if self._closed or self._thread is None:
            raise StoreError("The session store is closed")
        answered = anyio.Event()
        token = current_token()
        call.future.add_done_callback(lambda _: run_soon(token, answered.set))
        with self._asking:
            self._queue.put(call)
            self._wake.set()
        started = self._started
        if started is not None and started.done() and started.exception() is not None:
            self._fail_queued()  # the connection never opened: the thread serves nothing, and answered it or will not
        await answered.wait()  # a cancelled caller stops waiting: the answer, when it comes, is dropped
        return call.future.result()

    def _batch(self, first: DurableEvent | Call | Stop) -> list[DurableEvent | Call | Stop]:
        """In the thread: ``first`` and what is queued behind it, up to ``_max_batch``, for one transaction."""
        batch = [first]
        if self._window and not isinstance(first, Call | Stop):
            # Let a burst of events accumulate: one transaction, and fewer GIL hand-offs with the loop.
            # A read or a flush cuts the wait short.
            self._wake.wait(self._window)
        # Cleared and drained under the lock a call's put and wake take together: a wake cleared here is for a call
        # this batch takes, and a call this batch leaves sets it after. A wake left set by a call a batch already
        # took would cut the next burst's window short (its first event committed alone); the thread took the
        # call between its caller's put and set once the writer had the GIL in between.
        limit = self._max_batch
        q = self._queue
        with self._asking:
            self._wake.clear()
            while len(batch) < limit:
                try:
                    batch.append(q.get_nowait())
                except queue.Empty:
                    break
        return batch

    def _fail_queued(self) -> None:
        """Answer every call still queued with the store's error (the thread has ended, or never served)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, Call) and not item.future.done():
                item.future.set_exception(self._error or StoreError("The session store is closed"))

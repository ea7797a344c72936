"""The SQLite store's WAL checkpoint, off the writer's commits: :class:`Checkpointer` (a thread and connection of its
own) and the limits the writer thread (``_sqlite``) asks it by.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from pathlib import Path

__all__ = [
    "CHECKPOINT_EVENTS",
    "CHECKPOINT_SECONDS",
    "WAL_BACKSTOP_PAGES",
    "WAL_RESTART_PAGES",
    "Checkpointer",
]

log = logging.getLogger("tether.store")

CHECKPOINT_EVENTS = 1_024
"""Events the writer commits before it asks :class:`Checkpointer` to copy the WAL into the database file (a 10-step
turn appends ~80 events, ~40 WAL pages): every ~500 pages, against SQLite's default of a checkpoint inside the commit
that reaches 1,000. A short run (a scripted ``tether run`` appends ~10 events) never starts the checkpointer: closing
the store checkpoints."""
CHECKPOINT_SECONDS = 0.05
"""At most one checkpoint this often (each syncs the WAL and the database file to disk)."""
WAL_RESTART_PAGES = 2_000
"""A WAL this long (~8 MB) after a checkpointer's run is made to start over by the writer (see :class:`Checkpointer`)."""
WAL_BACKSTOP_PAGES = 4_000
"""The writer's own automatic checkpoint, at this many WAL pages (~16 MB): what bounds the WAL should the checkpointer
be gone (it could not open the file)."""


class Checkpointer:
    """Copies the WAL into the database file from a thread and connection of its own, so no commit waits for it.

    SQLite's automatic checkpoint runs inside the commit that makes the WAL reach its limit: it reads back and writes
    every page of ~1,000 and syncs both files, and the writer answers nothing meanwhile (in a steady 10-step turn,
    ~8 µs of the writer's CPU per call on average, and on a busy disk milliseconds of waiting for the flush that met
    it). Here the writer only asks (:meth:`request`, every :data:`CHECKPOINT_EVENTS` events at most every
    :data:`CHECKPOINT_SECONDS`, never while a run is under way) and this thread runs a ``PASSIVE`` checkpoint (it
    blocks no reader and no writer; committed data is as durable before as after). Started at the first request: a
    short run never pays for the thread or the connection.

    The WAL starts over (is written again from its beginning) only at a transaction that finds every page of it
    copied, which a checkpoint in another thread misses whenever a commit lands while it runs. So when a run saw the
    WAL at :data:`WAL_RESTART_PAGES` or more, the writer checkpoints once itself (:meth:`restart`) between two of
    its commits, copying only what was committed during that run: the checkpoint completes, and its next
    transaction starts the WAL over. Should this thread be gone, the writer's automatic checkpoint
    (:data:`WAL_BACKSTOP_PAGES`) bounds the WAL; closing the store checkpoints what is left.
    """

    __slots__ = (
        "_closed",
        "_next",
        "_path",
        "_thread",
        "_wake",
        "_written",
        "busy",
        "checkpoints",
        "wal_pages",
    )

    def __init__(self, path: Path) -> None:
        self._path = (
            path.absolute()
        )  # the store's file even after a chdir (a relative path would name another)
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._written = 0
        """Events committed since the last run was asked for."""
        self._next = 0.0
        """When the next run may be asked for (``time.monotonic``)."""
        self.busy = False
        """Set by the writer as it asks for a run, cleared by this thread when the run is over."""
        self.wal_pages = 0
        """The WAL's length in pages as the last run found it."""
        self.checkpoints = threading.Semaphore(0)
        """Released after each run (what a test waits on)."""

    def committed(self, conn: sqlite3.Connection, events: int) -> None:
        """The writer's thread, after each batch it committed (``events`` items): ask for a run, or checkpoint on
        ``conn`` so the WAL starts over (see the class)."""
        self._written += events
        if self.busy:
            return
        if self.wal_pages >= WAL_RESTART_PAGES:
            self.restart(conn)
        elif self._written >= CHECKPOINT_EVENTS and time.monotonic() >= self._next:
            self._written = 0
            self._next = time.monotonic() + CHECKPOINT_SECONDS
            self.request()

    def request(self) -> None:
        self.busy = (
            True  # stays set if the thread cannot start: the writer's automatic checkpoint bounds the WAL
        )
        if self._thread is None:
            thread = threading.Thread(target=self._serve, name="tether-store-checkpoint", daemon=True)
            try:
                thread.start()
            except (
                RuntimeError
            ) as exc:  # "can't start new thread": the process is at its limit; the store writes on
                log.warning("session store checkpointer not started (%s): %s", self._path, exc)
                return
            self._thread = thread
        self._wake.set()

    def restart(self, conn: sqlite3.Connection) -> None:
        """Checkpoint on the writer's connection, between two of its commits (no run under way): the next
        transaction starts the WAL over."""
        self.wal_pages = 0
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:  # the WAL stays longer: the next run's report asks again
            log.warning("session store checkpoint failed (%s): %s", self._path, exc)

    def close(self) -> None:
        """End the thread (if it started) and wait for it; never raises (the writer's close goes on after it)."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def _serve(self) -> None:
        try:
            # mode=rw: never create a file (the store's file gone meanwhile is an error here, not a new empty file)
            uri = f"{self._path.as_uri()}?mode=rw"
            with contextlib.closing(
                sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            ) as conn:
                while True:
                    self._wake.wait()
                    self._wake.clear()
                    if self._closed:
                        return
                    [(_, self.wal_pages, _)] = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.busy = False
                    self.checkpoints.release()
        except sqlite3.Error as exc:  # ``busy`` stays set: the writer's automatic checkpoint bounds the WAL
            log.warning("session store checkpointer stopped (%s): %s", self._path, exc)

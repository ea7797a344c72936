"""The SQLite store's checkpointer: copies the write-ahead log back into the database file, off the writer's thread.

In WAL mode every commit appends pages to ``tether.db-wal``; a *checkpoint* copies them into ``tether.db`` so the log
can start over. SQLite's default (``wal_autocheckpoint``, 1,000 pages) runs it inside the commit that crosses the
threshold, on the committing connection: the store's writer thread then reads and writes about 4 MB and syncs the file
while every event queued behind that commit waits, and it does so holding the GIL between its SQLite calls, in turn
with the event loop. Measured on a 100-call parallel step (``bench/vs_pydantic_ai.py``): about 8 % of the wall time
per call was the writer's checkpoints.

The writer's connection turns the automatic checkpoint off, and a :class:`Checkpointer` (its own thread and
connection on the same file) runs ``PRAGMA wal_checkpoint(PASSIVE)`` after every :data:`COMMITS` commits or
:data:`EVENTS` events: the copying happens in SQLite's C code, which releases the GIL, so on a second core it runs
beside both the loop and the writer. A passive checkpoint never blocks the writer; it copies what it can.

Bounded: under a writer that never pauses, passive passes may never find the log wholly copied, and SQLite restarts
the log from its start only after such a pass; once the ``-wal`` file is larger than :data:`WAL_LIMIT` bytes, the
checkpointer runs a ``TRUNCATE`` checkpoint, which copies everything and empties the file. It must wait until no
transaction is under way and no reader (another process) is on an older snapshot, and new write transactions wait
for it meanwhile: it waits at most :data:`TRUNCATE_WAIT_MS` (the writer's next commit waits no longer than that),
then gives up until the next pass. A failed checkpoint is logged and tried again at the next wake: it costs
disk space, never data (every commit is in the log until it is copied).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

__all__ = ["COMMITS", "EVENTS", "TRUNCATE_WAIT_MS", "WAL_LIMIT", "Checkpointer"]

log = logging.getLogger("tether.session")

COMMITS = 16
"""Commits between two passes (a commit of a few events writes a few pages)."""
EVENTS = 4_096
"""Events committed between two passes, whatever the number of commits (a 10,000-call step commits few, large)."""
WAL_LIMIT = 64 * 1024 * 1024
"""Bytes of ``-wal`` file past which a pass also empties it (``TRUNCATE``)."""
TRUNCATE_WAIT_MS = 200
"""How long a ``TRUNCATE`` checkpoint waits for the writer and for readers on older snapshots (a passive one never
waits)."""


class Checkpointer:
    """Runs the checkpoints of one database file on a thread of its own; told of commits by the writer thread.

    :meth:`committed` is called by one thread only (the writer) and costs a counter unless a pass is due. Tests read
    :attr:`passes` after :meth:`wait_pass`.
    """

    __slots__ = (
        "_commits",
        "_done",
        "_events",
        "_path",
        "_stopped",
        "_thread",
        "_wake",
        "commits",
        "events",
        "passes",
        "wal_limit",
    )

    def __init__(
        self,
        path: Path,
        *,
        commits: int = COMMITS,
        events: int = EVENTS,
        wal_limit: int = WAL_LIMIT,
    ) -> None:
        self._path = path
        self.commits = commits
        self.events = events
        self.wal_limit = wal_limit
        self._commits = 0
        self._events = 0
        self._wake = threading.Event()
        self._done = threading.Condition()
        self._stopped = False
        self.passes = 0
        """Checkpoint passes finished (successful or not)."""
        self._thread = threading.Thread(target=self._run, name="tether-store-checkpoint", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def committed(self, events: int) -> None:
        """A commit of ``events`` events happened (the writer thread): wake the checkpointer when a pass is due."""
        self._commits += 1
        self._events += events
        if self._commits >= self.commits or self._events >= self.events:
            self._commits = self._events = 0
            self._wake.set()

    def close(self) -> None:
        """Stop after the pass under way (if any); the writer's own close checkpoints what is left."""
        self._stopped = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def wait_pass(self, after: int, timeout: float) -> bool:
        """Wait until more than ``after`` passes have finished; false when ``timeout`` seconds passed first."""
        with self._done:
            return self._done.wait_for(lambda: self.passes > after, timeout)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopped:
                    return
                try:
                    if conn is None:
                        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
                        conn.execute(f"PRAGMA busy_timeout={TRUNCATE_WAIT_MS}")
                    self._pass(conn)
                except (sqlite3.Error, OSError) as exc:  # space, not data: the log keeps every commit
                    log.warning("session store checkpoint of %s failed: %s", self._path, exc)
                with self._done:
                    self.passes += 1
                    self._done.notify_all()
        finally:
            if conn is not None:
                conn.close()

    def _pass(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        wal = f"{self._path}-wal"
        try:
            size = os.path.getsize(wal)
        except FileNotFoundError:
            return
        if size > self.wal_limit:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

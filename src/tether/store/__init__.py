"""The store: what the runner needs from durable storage, and its two backends side by side.

:class:`SessionStore` is the interface the runner writes through (``append`` never blocks the event loop; reads see
every event appended before them); :class:`SQLiteStore` (the default, one file per data directory) and
:class:`PostgresStore` (one database many workers share, docs/postgres.md) implement it, each with its migrations,
owners (a pid on one host, a lease across hosts), admin (find, delete, prune) and row codec. Saved approvals on
PostgreSQL persist here too (:class:`PgSavedApprovals`, the ``tether.permissions.ApprovalsDatabase`` it asks for).

The store stands below the runner (``tether.session``) and above the records it persists (``tether.records``). What
tether's own packages share beyond these names (todos, the interrupted-call text, admin records) is in
:mod:`tether.store.internal`. The PostgreSQL store loads only when a process uses it: a run on the SQLite file never
imports it (nor psycopg).
"""

from typing import TYPE_CHECKING, Any

from ._interface import SessionStore, StoredMessage
from ._sqlite import SQLiteStore

if TYPE_CHECKING:
    from ._postgres import PostgresStore
    from ._postgres_approvals import PgSavedApprovals

__all__ = ["PgSavedApprovals", "PostgresStore", "SQLiteStore", "SessionStore", "StoredMessage"]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":
        from ._postgres import PostgresStore

        return PostgresStore
    if name == "PgSavedApprovals":
        from ._postgres_approvals import PgSavedApprovals

        return PgSavedApprovals
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

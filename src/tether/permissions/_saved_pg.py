"""Saved approvals in the PostgreSQL store's database (``permission_saved``, created by its migrations).

Workers sharing a PostgreSQL store share the saved approvals too: an ``always`` given to one worker is seen by every
other within the ``refresh`` period (:meth:`SavedApprovals.rules` re-reads at most that often). Everything but the
connection is :class:`SavedApprovals`' (its caching, its statements): the connection is wrapped so that the
statements written for SQLite run on PostgreSQL (``?`` placeholders, ``INSERT OR IGNORE``, ``with conn:`` as a
transaction). The password of the URL never appears in an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio.to_thread

from ..errors import StoreError
from ._saved import SavedApprovals

__all__ = ["PgSavedApprovals"]

T = TypeVar("T")


class _Conn:
    """A psycopg connection shaped like the ``sqlite3`` one :class:`SavedApprovals` drives."""

    __slots__ = ("_conn", "_transactions")

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._transactions: list[Any] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        ignore = sql.startswith("INSERT OR IGNORE ")
        if ignore:
            sql = "INSERT " + sql.removeprefix("INSERT OR IGNORE ") + " ON CONFLICT DO NOTHING"
        return self._conn.execute(sql.replace("?", "%s"), tuple(params))

    def __enter__(self) -> _Conn:
        transaction = self._conn.transaction()
        transaction.__enter__()
        self._transactions.append(transaction)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._transactions.pop().__exit__(*exc)

    def close(self) -> None:
        self._conn.close()


class PgSavedApprovals(SavedApprovals):
    """The saved approvals in a PostgreSQL database (``url``: the store's ``postgresql://`` URL)."""

    def __init__(self, url: str, *, refresh: float = 1.0) -> None:
        from ..session._postgres_conn import describe

        super().__init__(describe(url), refresh=refresh)
        self._url = url
        self._pg: _Conn | None = None

    def _connect_pg(self) -> _Conn:
        if self._pg is None:
            if self._closed:
                raise StoreError("Saved approvals are closed")
            from ..session._postgres_conn import connect
            from ..session._postgres_schema import migrate

            conn = connect(self._url, application_name="tether-approvals")
            try:
                migrate(conn)
            except BaseException:
                conn.close()
                raise
            self._pg = self._conn = _Conn(conn)  # type: ignore[assignment]  # closed by SavedApprovals.close
        return self._pg

    async def _run(self, work: Callable[[Any], T]) -> T:
        import psycopg

        from ..session._postgres_conn import redact

        def call() -> T:
            with self._lock:
                try:
                    return work(self._connect_pg())
                except (psycopg.Error, ValueError) as exc:
                    raise StoreError(
                        f"Saved approvals ({self.path}): {redact(str(exc), self._url)}"
                    ) from None

        return await anyio.to_thread.run_sync(call)

"""Saved approvals in the PostgreSQL store's database (``permission_saved``, created by its migrations).

Workers sharing a PostgreSQL store share the saved approvals too: an ``always`` given to one worker is seen by every
other within the ``refresh`` period (``SavedApprovals.rules`` re-reads at most that often). Everything but the
connection is ``tether.permissions.SavedApprovals``' (its caching, its statements): this module implements the
narrow :class:`~tether.permissions.ApprovalsDatabase` it asks for, a connection wrapped so that the statements
written for SQLite run on PostgreSQL (``?`` placeholders, ``INSERT OR IGNORE``, ``with conn:`` as a transaction).
The password of the URL never appears in an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..permissions import SavedApprovals
from ._postgres_conn import connect, describe, redact
from ._postgres_schema import migrate

__all__ = ["PgSavedApprovals", "PostgresApprovals"]


class _Conn:
    """A psycopg connection shaped like the ``sqlite3`` one :class:`SavedApprovals` drives."""

    __slots__ = ("_conn", "_transactions")

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._transactions: list[Any] = []

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        ignore = sql.startswith("INSERT OR IGNORE ")
        if ignore:
            sql = "INSERT " + sql.removeprefix("INSERT OR IGNORE ") + " ON CONFLICT DO NOTHING"
        return self._conn.execute(sql.replace("?", "%s"), tuple(parameters))

    def __enter__(self) -> _Conn:
        transaction = self._conn.transaction()
        transaction.__enter__()
        self._transactions.append(transaction)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._transactions.pop().__exit__(*exc)

    def close(self) -> None:
        self._conn.close()


class PostgresApprovals:
    """The PostgreSQL database at ``url`` as the place of saved approvals (a ``tether.permissions.ApprovalsDatabase``)."""

    __slots__ = ("_url", "name")

    def __init__(self, url: str) -> None:
        self._url = url
        self.name = describe(url)

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        import psycopg

        return (psycopg.Error, ValueError)

    def redact(self, text: str) -> str:
        return redact(text, self._url)

    def connect(self) -> _Conn:
        conn = connect(self._url, application_name="tether-approvals")
        try:
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        return _Conn(conn)


class PgSavedApprovals(SavedApprovals):
    """The saved approvals in a PostgreSQL database (``url``: the store's ``postgresql://`` URL)."""

    def __init__(self, url: str, *, refresh: float = 1.0) -> None:
        super().__init__(PostgresApprovals(url), refresh=refresh)

"""Fixtures of the PostgreSQL store's own tests (the server and the store factory of ``fixtures``)."""

from tests.postgres.fixtures import open_store, postgres, store_kind, store_target

__all__ = ["open_store", "postgres", "store_kind", "store_target"]

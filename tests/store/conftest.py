"""Fixtures for store tests: the store factory over both stores (SQLite; PostgreSQL when a server is at hand)."""

from tests.postgres.fixtures import open_store, postgres, store_kind, store_target

__all__ = ["open_store", "postgres", "store_kind", "store_target"]

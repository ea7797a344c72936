"""The session store is private to the user: a new ``tether.db`` (and so its ``-wal``/``-shm``) is 0600."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.store import SQLiteStore

pytestmark = pytest.mark.anyio


async def test_a_new_store_file_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "store" / "tether.db"
    async with SQLiteStore(path) as store:
        await store.list_sessions()
        for name in ("tether.db", "tether.db-wal", "tether.db-shm"):
            file = path.parent / name
            if file.exists():
                assert file.stat().st_mode & 0o777 == 0o600, name
    assert path.stat().st_mode & 0o777 == 0o600

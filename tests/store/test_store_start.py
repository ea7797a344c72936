"""Starting a SQLite store: its writer thread opens and migrates the file while the caller goes on (issue 38)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.errors import StoreError
from tether.store import SQLiteStore

pytestmark = pytest.mark.anyio


async def test_a_started_store_opens_once_and_answers_what_was_queued_meanwhile(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "tether.db")
    store.start()
    store.start()  # idempotent: one writer thread
    with anyio.fail_after(60):
        # a read queued before open() waits for the file to be migrated, then is answered
        assert list(await store.list_sessions()) == []
        assert await store.open() is store
        assert await store.open() is store
    await store.aclose()


async def test_a_store_that_cannot_be_opened_fails_open_and_the_reads_queued_since_start(
    tmp_path: Path,
) -> None:
    (tmp_path / "file").write_text("not a directory", encoding="utf-8")
    store = SQLiteStore(tmp_path / "file" / "tether.db")
    store.start()
    with anyio.fail_after(60):
        with pytest.raises(StoreError, match="Cannot open session store"):
            await store.list_sessions()
        with pytest.raises(StoreError, match="Cannot open session store"):
            await store.open()
        with pytest.raises(StoreError, match="Cannot open session store"):
            await store.open()  # still failing, not taken for open
        with pytest.raises(StoreError, match="Cannot open session store"):
            await store.list_sessions()  # queued once the writer is gone: answered all the same
    await store.aclose()


async def test_a_runtime_whose_store_cannot_be_opened_fails_to_open(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "tether.db").write_bytes(b"this is not a database file" * 100)
    with anyio.fail_after(60), pytest.raises(StoreError):
        async with Runtime(data_dir=data, plugins=False):
            pass

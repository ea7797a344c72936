"""Saved approvals over a broken or closed database: a StoreError naming the file, never a raw sqlite3 error, and
nothing is treated as approved."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.errors import StoreError
from tether.permissions import SavedApprovals


@pytest.mark.anyio
async def test_a_file_that_is_not_a_database_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "saved.db"
    path.write_bytes(b"this is not an SQLite database, just text that a crash or a user left here\n" * 100)
    async with SavedApprovals(path) as saved:
        with pytest.raises(StoreError, match=f"Saved approvals \\({path}\\)"):
            await saved.rules("/project")
        with pytest.raises(StoreError):
            await saved.add("/project", "edit", ["*"])
    assert b"not an SQLite database" in path.read_bytes()  # left as it was


@pytest.mark.anyio
async def test_closed_saved_approvals_refuse_every_call(tmp_path: Path) -> None:
    saved = SavedApprovals(tmp_path / "saved.db")
    await saved.add("/project", "bash", ["git status*"])
    await saved.close()
    with pytest.raises(StoreError, match="Saved approvals are closed"):
        await saved.list("/project")
    reopened = SavedApprovals(tmp_path / "saved.db")
    try:
        assert [a.resource for a in await reopened.list("/project")] == ["git status*"]
    finally:
        await reopened.close()

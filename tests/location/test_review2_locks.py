"""Attack tests (review 2, hole 4): another local user cannot disable our writes through the lock directory.

Without ``XDG_RUNTIME_DIR`` the lock files used to live in ``<tmp>/tether-<uid>-locks``, a name any local user can
create first in the shared, sticky ``/tmp``: every write then failed. The fallback is now ``locks`` in the data
directory, private to the user.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from tether.location import (
    _locks,  # pyright: ignore[reportPrivateUsage]
    write_bytes_sync,
)


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sticky, world-writable temp directory standing in for /tmp, with no XDG_RUNTIME_DIR (ssh, cron, containers)."""
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(_locks, "_directory", None)
    return shared


@pytest.mark.parametrize("planted", ["directory", "symlink", "file"])
def test_a_planted_temp_lock_directory_does_not_stop_writes(
    tmp_path: Path, shared_tmp: Path, planted: str
) -> None:
    squatted = shared_tmp / f"tether-{os.getuid()}-locks"
    if planted == "directory":
        squatted.mkdir(mode=0o777)
        os.chmod(squatted, 0o777)  # as another user's would be: not ours to trust
        if os.getuid() == 0:
            os.chown(squatted, 65534, 65534)
    elif planted == "symlink":
        (tmp_path / "mallory").mkdir()
        squatted.symlink_to(tmp_path / "mallory")
    else:
        squatted.write_text("")
    target = tmp_path / "project" / "x.txt"
    target.parent.mkdir()
    write_bytes_sync(target, b"hi\n")
    assert target.read_bytes() == b"hi\n"
    locks = tmp_path / "data" / "locks"
    st = os.lstat(locks)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    assert [p.suffix for p in locks.iterdir()] == [".lock"]
    if planted == "symlink":
        assert not list((tmp_path / "mallory").iterdir())  # nothing of ours went where the link points


def test_a_lock_directory_planted_in_the_data_directory_is_still_refused(
    tmp_path: Path, shared_tmp: Path
) -> None:
    (tmp_path / "data").mkdir(mode=0o700)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "data" / "locks").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError, match="not a private directory"):
        write_bytes_sync(tmp_path / "x.txt", b"hi\n")
    assert not (tmp_path / "x.txt").exists()

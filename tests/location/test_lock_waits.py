"""Waiting for a file lock another process holds: the wait ends when that process is killed, a cancelled call leaves
without writing, and a lock directory that a temp cleaner removed is made again."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tether.location import _locks, lock_files


@pytest.fixture
def private_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lock directory of this test alone (other suites on the machine share the default one)."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(_locks, "_directory", None)
    return runtime / "tether-locks"


@pytest.fixture
def holder(tmp_path: Path, private_locks: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock of ``tmp_path / "a.txt"`` until it is killed."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from tether.location import lock_files\n"
            "with lock_files([pathlib.Path(sys.argv[1])]):\n"
            "    print('locked', flush=True)\n"
            "    sys.stdin.readline()\n",
            str(tmp_path / "a.txt"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "locked\n"
    yield process
    process.kill()
    process.communicate()


def write_locked(target: Path, text: str) -> None:
    with lock_files([target]):
        target.write_text(text, encoding="utf-8")


@pytest.mark.anyio
async def test_a_lock_held_by_a_killed_process_is_free_for_the_waiting_call(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    target = tmp_path / "a.txt"
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, write_locked, target, "after the kill")
            holder.kill()  # the kernel drops a dead process's flock
            await anyio.to_thread.run_sync(holder.wait)
    assert target.read_text(encoding="utf-8") == "after the kill"


@pytest.mark.anyio
async def test_a_call_cancelled_while_another_process_holds_the_lock_leaves_without_writing(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    target = tmp_path / "a.txt"
    with anyio.move_on_after(0.2) as scope:  # cancels the wait, whenever it began
        await anyio.to_thread.run_sync(write_locked, target, "written while locked")
    assert scope.cancelled_caught
    assert not target.exists()
    holder.kill()
    holder.wait()
    with anyio.fail_after(30):
        await anyio.to_thread.run_sync(write_locked, target, "later")
    assert target.read_text(encoding="utf-8") == "later"


def test_a_lock_directory_removed_by_a_temp_cleaner_is_made_again(
    tmp_path: Path, private_locks: Path
) -> None:
    target = tmp_path / "b.txt"
    write_locked(target, "one")
    assert private_locks.is_dir()
    shutil.rmtree(private_locks)
    write_locked(target, "two")
    assert target.read_text(encoding="utf-8") == "two"
    assert private_locks.is_dir()

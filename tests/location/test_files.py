from __future__ import annotations

import errno
import fcntl
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tether.errors import ToolFailure, UsageError
from tether.location import (
    FILE_CHANGED_MESSAGE,
    _locks,
    adapt_line_endings,
    check_path_sync,
    decode_text,
    encode_text,
    line_ending,
    lock_files,
    open_for_reading_sync,
    read_bytes,
    read_bytes_sync,
    remove_if_unchanged_sync,
    write_bytes_sync,
    write_if_unchanged,
    write_if_unchanged_sync,
)
from tether.location._dirfd import open_target
from tether.location._locks import lock_file


@pytest.mark.anyio
async def test_write_if_unchanged_refuses_a_concurrent_change(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"one\n")
    read = await read_bytes(target)
    target.write_bytes(b"someone else\n")  # changed between our read and our write
    with pytest.raises(ToolFailure) as info:
        await write_if_unchanged(target, read, b"mine\n")
    assert info.value.message == FILE_CHANGED_MESSAGE
    assert target.read_bytes() == b"someone else\n"


@pytest.mark.anyio
async def test_write_if_unchanged_refuses_a_file_that_appeared(tmp_path: Path) -> None:
    target = tmp_path / "new.txt"
    target.write_bytes(b"appeared\n")
    with pytest.raises(ToolFailure, match="File changed after permission approval"):
        await write_if_unchanged(target, None, b"mine\n")
    assert target.read_bytes() == b"appeared\n"


@pytest.mark.anyio
async def test_write_if_unchanged_refuses_a_file_that_vanished(tmp_path: Path) -> None:
    target = tmp_path / "gone.txt"
    with pytest.raises(ToolFailure, match="File changed after permission approval"):
        await write_if_unchanged(target, b"was here\n", b"mine\n")
    assert not target.exists()


@pytest.mark.anyio
async def test_write_replaces_atomically_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_bytes(b"#!/bin/sh\n")
    os.chmod(target, 0o751)
    inode = target.stat().st_ino
    await write_if_unchanged(target, b"#!/bin/sh\n", b"#!/bin/sh\necho hi\n")
    assert target.read_bytes() == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert target.stat().st_ino != inode  # replaced by rename, never truncated in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["script.sh"]  # no temporary file left


def test_new_files_get_the_default_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    write_bytes_sync(tmp_path / "d" / "new.txt", b"x")
    assert stat.S_IMODE((tmp_path / "d" / "new.txt").stat().st_mode) == 0o666 & ~umask


def test_exclusive_write_fails_when_the_file_exists(tmp_path: Path) -> None:
    (tmp_path / "x").write_bytes(b"old")
    with pytest.raises(FileExistsError):
        write_bytes_sync(tmp_path / "x", b"new", exclusive=True)
    assert (tmp_path / "x").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]


@pytest.mark.anyio
async def test_read_bytes_of_missing_and_directory(tmp_path: Path) -> None:
    assert await read_bytes(tmp_path / "missing") is None
    with pytest.raises(IsADirectoryError):
        await read_bytes(tmp_path)


def test_bom_round_trip() -> None:
    decoded = decode_text(b"\xef\xbb\xbfhello")
    assert decoded.text == "hello" and decoded.bom
    assert encode_text("hello", bom=True) == b"\xef\xbb\xbfhello"
    assert encode_text("\ufeffhello", bom=False) == b"\xef\xbb\xbfhello"  # never two BOMs, never lost
    assert encode_text("\ufeffhello", bom=True) == b"\xef\xbb\xbfhello"


def test_invalid_utf8_raises() -> None:
    with pytest.raises(UnicodeDecodeError):
        decode_text(b"\xff\xfe bad")


def test_line_endings() -> None:
    assert line_ending("a\r\nb\n") == "\r\n"
    assert line_ending("a\nb\n") == "\n"
    assert adapt_line_endings("x\ny\n", "a\r\nb\r\n") == "x\r\ny\r\n"
    assert adapt_line_endings("x\ny\n", "a\nb\n") == "x\ny\n"
    assert adapt_line_endings("x\r\ny\n", "a\r\n") == "x\r\ny\n"  # content that chose its endings keeps them
    assert adapt_line_endings("x\n", None) == "x\n"


# -- descriptor-relative operations: a symlink that appeared after resolution is never followed ------------------


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A canonical (symlink-free) directory with ``project/sub/a.txt`` and an ``outside/a.txt`` canary."""
    real = tmp_path.resolve()
    (real / "project" / "sub").mkdir(parents=True)
    (real / "project" / "sub" / "a.txt").write_bytes(b"inside\n")
    (real / "outside").mkdir()
    (real / "outside" / "a.txt").write_bytes(b"canary\n")
    return real


def swap_for_symlink(directory: Path, target: Path) -> None:
    os.rename(directory, directory.with_name(directory.name + "-moved"))
    directory.symlink_to(target, target_is_directory=True)


def test_a_read_through_a_directory_now_a_symlink_is_refused(base: Path) -> None:
    swap_for_symlink(base / "project" / "sub", base / "outside")
    with pytest.raises(ToolFailure) as info:
        read_bytes_sync(base / "project" / "sub" / "a.txt")
    assert info.value.message == (
        f"{base.as_posix()}/project/sub/a.txt changed while waiting for approval: "
        f"{base.as_posix()}/project/sub is now a symlink. Nothing was written."
    )


@pytest.mark.parametrize("operation", ["write_bytes", "write_if_unchanged", "remove_if_unchanged"])
def test_mutations_through_a_directory_now_a_symlink_leave_the_canary_untouched(
    base: Path, operation: str
) -> None:
    target = base / "project" / "sub" / "a.txt"
    swap_for_symlink(base / "project" / "sub", base / "outside")
    with pytest.raises(ToolFailure, match=r"sub is now a symlink\. Nothing was written\."):
        if operation == "write_bytes":
            write_bytes_sync(target, b"payload\n")
        elif operation == "write_if_unchanged":
            write_if_unchanged_sync(target, b"canary\n", b"payload\n")
        else:
            remove_if_unchanged_sync(target, b"canary\n")
    assert sorted(p.name for p in (base / "outside").iterdir()) == ["a.txt"]
    assert (base / "outside" / "a.txt").read_bytes() == b"canary\n"


@pytest.mark.parametrize(
    "operation", ["read", "write_bytes", "write_if_unchanged", "remove_if_unchanged", "check"]
)
def test_a_file_now_a_symlink_is_refused_and_not_followed(base: Path, operation: str) -> None:
    target = base / "project" / "sub" / "a.txt"
    target.unlink()
    target.symlink_to(base / "outside" / "a.txt")
    with pytest.raises(ToolFailure, match=r"sub/a\.txt is now a symlink"):
        if operation == "read":
            read_bytes_sync(target)
        elif operation == "write_bytes":
            write_bytes_sync(target, b"payload\n")
        elif operation == "write_if_unchanged":
            write_if_unchanged_sync(target, b"canary\n", b"payload\n")
        elif operation == "remove_if_unchanged":
            remove_if_unchanged_sync(target, b"canary\n")
        else:
            check_path_sync(target)
    assert target.is_symlink()
    assert (base / "outside" / "a.txt").read_bytes() == b"canary\n"


def test_a_directory_to_create_that_appears_as_a_symlink_is_refused(base: Path) -> None:
    target = base / "project" / "new" / "deeper" / "f.txt"
    with open_target(target) as opened:
        assert opened.missing
        (base / "project" / "new").symlink_to(base / "outside", target_is_directory=True)  # raced in
        with pytest.raises(ToolFailure, match=r"project/new is now a symlink\. Nothing was written\."):
            opened.write(b"payload\n", mode=None, exclusive=False)
    assert sorted(p.name for p in (base / "outside").iterdir()) == ["a.txt"]


def test_missing_directories_are_created_only_when_something_is_written(base: Path) -> None:
    target = base / "project" / "x" / "y" / "f.txt"
    assert read_bytes_sync(target) is None
    check_path_sync(target)
    assert not (base / "project" / "x").exists()
    with pytest.raises(ToolFailure, match="File changed after permission approval"):
        write_if_unchanged_sync(target, b"expected\n", b"payload\n")
    assert not (base / "project" / "x").exists()
    write_if_unchanged_sync(target, None, b"payload\n")
    assert target.read_bytes() == b"payload\n"


def test_remove_if_unchanged_removes_only_the_bytes_it_was_given(base: Path) -> None:
    target = base / "project" / "sub" / "a.txt"
    with pytest.raises(ToolFailure, match="File changed after permission approval"):
        remove_if_unchanged_sync(target, b"something else\n")
    assert target.exists()
    remove_if_unchanged_sync(target, b"inside\n")
    assert not target.exists()


def test_a_fifo_is_refused_at_once_instead_of_blocking(base: Path) -> None:
    fifo = base / "project" / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="Not a regular file"):
        read_bytes_sync(fifo)


def test_a_path_that_is_not_canonical_is_a_usage_error(base: Path) -> None:
    with pytest.raises(UsageError):
        read_bytes_sync(Path("relative.txt"))
    with pytest.raises(UsageError):
        read_bytes_sync(base / "project" / ".." / "outside" / "a.txt")


# -- opening a file for reading ---------------------------------------------------------------------------------------

_OPENS: list[tuple[str, int]] = []
"""What ``open`` events the audit hook below saw while a test listened (audit hooks cannot be removed)."""
_LISTENING: list[bool] = []


def _audit_opens(event: str, args: tuple[object, ...]) -> None:
    if _LISTENING and event == "open" and isinstance(args[0], str) and isinstance(args[2], int):
        _OPENS.append((args[0], args[2]))


sys.addaudithook(_audit_opens)


def _opens_of(path: Path) -> list[tuple[str, int]]:
    _OPENS.clear()
    _LISTENING.append(True)
    try:
        fd = open_for_reading_sync(path)
    finally:
        _LISTENING.clear()
    assert fd is not None
    try:
        assert os.read(fd, 100) == path.read_bytes()
    finally:
        os.close(fd)
    return list(_OPENS)


def test_a_read_reaches_the_file_in_one_lookup_and_opens_it_through_its_descriptor(base: Path) -> None:
    """Where the kernel names what a descriptor reached, the path is looked up once (``O_PATH``), not walked."""
    if not sys.platform.startswith("linux"):
        pytest.skip("/proc/self/fd")
    path = base / "project" / "sub" / "a.txt"
    opens = _opens_of(path)
    (first, first_flags), (second, second_flags) = opens  # two opens, no directory opened by name
    assert first == str(path) and first_flags & os.O_PATH and first_flags & os.O_NOFOLLOW
    assert second.startswith("/proc/self/fd/") and not second_flags & os.O_PATH


def test_a_read_through_a_directory_now_a_symlink_is_refused_and_names_it(base: Path) -> None:
    # The one lookup reaches the canary (its link names outside/): the walk then says what changed.
    swap_for_symlink(base / "project" / "sub", base / "outside")
    with pytest.raises(ToolFailure) as info:
        open_for_reading_sync(base / "project" / "sub" / "a.txt")
    assert info.value.message == (
        f"{base.as_posix()}/project/sub/a.txt changed while waiting for approval: "
        f"{base.as_posix()}/project/sub is now a symlink. Nothing was read."
    )


def test_a_file_now_a_symlink_is_not_opened_for_reading(base: Path) -> None:
    link = base / "project" / "sub" / "b.txt"
    link.symlink_to(base / "outside" / "a.txt")
    with pytest.raises(ToolFailure, match=r"sub/b\.txt is now a symlink\. Nothing was read\."):
        open_for_reading_sync(link)


def test_a_missing_file_opens_nothing_and_a_socket_fails_as_the_walk_fails(base: Path) -> None:
    import socket

    assert open_for_reading_sync(base / "project" / "sub" / "missing.txt") is None
    assert open_for_reading_sync(base / "project" / "nodir" / "missing.txt") is None
    path = base / "project" / "s"
    if len(str(path)) > 100:
        pytest.skip("a socket's path is limited to ~108 bytes")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        # its one lookup finds it, its reopen fails (ENXIO): the walk opens it by name and fails the same way
        with pytest.raises(OSError) as info:
            open_for_reading_sync(path)
    assert info.value.errno == errno.ENXIO


def test_reading_a_path_that_is_not_canonical_is_a_usage_error(base: Path) -> None:
    for path in (Path("relative.txt"), Path("/"), base / "project" / ".." / "outside" / "a.txt"):
        with pytest.raises(UsageError):
            open_for_reading_sync(path)


# -- the per-file lock ----------------------------------------------------------------------------------------------


def test_the_file_lock_is_reentrant_within_a_thread(base: Path) -> None:
    target = base / "project" / "sub" / "a.txt"
    with lock_files([target, target]), lock_files([target]):
        write_if_unchanged_sync(target, b"inside\n", b"changed\n")  # takes the same lock again
    assert target.read_bytes() == b"changed\n"


def test_the_file_lock_excludes_another_process_until_it_releases(base: Path) -> None:
    target = base / "project" / "sub" / "a.txt"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from tether.location import lock_files\n"
            "with lock_files([pathlib.Path(sys.argv[1])]):\n"
            "    print('locked', flush=True)\n"
            "    sys.stdin.readline()\n",
            str(target),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        fd = os.open(lock_file(target), os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            holder.communicate("release\n", timeout=30)
            assert holder.returncode == 0
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once the other process let go
        finally:
            os.close(fd)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.communicate()


def test_lock_files_live_outside_the_project_in_a_private_directory(base: Path) -> None:
    path = lock_file(base / "project" / "sub" / "a.txt")
    assert not path.is_relative_to(base)
    st = os.lstat(path.parent)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) & 0o077 == 0


def test_a_lock_directory_others_can_write_is_refused(
    tmp_path: Path, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "runtime"
    (runtime / "tether-locks").mkdir(parents=True)
    os.chmod(runtime / "tether-locks", 0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(_locks, "_directory", None)
    with pytest.raises(OSError, match="not a private directory"):
        write_bytes_sync(base / "project" / "sub" / "a.txt", b"payload\n")
    assert (base / "project" / "sub" / "a.txt").read_bytes() == b"inside\n"

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tether.errors import ToolFailure
from tether.location import (
    FILE_CHANGED_MESSAGE,
    adapt_line_endings,
    decode_text,
    encode_text,
    line_ending,
    read_bytes,
    write_bytes_sync,
    write_if_unchanged,
)


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

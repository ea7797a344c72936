"""The read tool's two page readers (a small file decoded whole, a large or non-UTF-8 file streamed) agree."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.builtins import read as read_module
from tether.builtins.read import MAX_READ_BYTES, _read_text_page, _streamed_page, _whole_page
from tether.errors import ToolFailure

_pieces = st.sampled_from(["a", "é", "\r", "\n", "\r\n", "x" * 700, "日本", " ", "\t", "\n\n"])


def _handle(data: bytes) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO(data))  # type: ignore[arg-type]


def _both(data: bytes, start: int, max_lines: int) -> tuple[object, object]:
    whole: object
    streamed: object
    try:
        whole = _whole_page(data.decode("utf-8"), start, max_lines, "f")
    except ToolFailure as exc:
        whole = exc.message
    try:
        streamed = _streamed_page(_handle(data), start, max_lines, "f")
    except ToolFailure as exc:
        streamed = exc.message
    return whole, streamed


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_pieces, max_size=120).map("".join),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=1, max_value=30),
)
def test_whole_and_streamed_pages_are_equal(text: str, start: int, max_lines: int) -> None:
    whole, streamed = _both(text.encode("utf-8"), start, max_lines)
    assert whole == streamed


@pytest.mark.parametrize(
    "text",
    [
        "",
        "one",
        "one\n",
        "one\n\n",
        "a\r\nb\r\n",
        "\r",
        ("y" * 3000 + "\n") * 3,  # lines cut to MAX_LINE_CHARS
        ("z" * 1000 + "\n") * 120,  # the byte cap stops the page
        ("é" * 900 + "\n") * 60,  # the byte cap counts UTF-8 bytes, not characters
    ],
)
@pytest.mark.parametrize(("start", "max_lines"), [(1, 2000), (2, 5), (3, 1), (200, 10)])
def test_edge_files_read_alike(text: str, start: int, max_lines: int) -> None:
    whole, streamed = _both(text.encode("utf-8"), start, max_lines)
    assert whole == streamed


def test_the_byte_cap_stops_a_whole_page_where_the_stream_would() -> None:
    page = _whole_page(("z" * 1000 + "\n") * 120, 1, 2000, "f")
    assert len(page.lines) == MAX_READ_BYTES // 1001 and page.truncated and page.next == len(page.lines) + 1


def test_a_small_file_with_bad_bytes_outside_the_page_is_read_as_before() -> None:
    data = b"good\nalso good\nthird\n\xff\xfe bad\n"
    page = _read_text_page(_handle(data), 1, 2, "f")
    assert page.lines == ["good", "also good"] and page.total == 4 and page.truncated
    with pytest.raises(ToolFailure, match="not valid UTF-8"):
        _read_text_page(_handle(data), 4, 1, "f")


def test_a_file_larger_than_the_whole_file_limit_is_streamed(tmp_path: Path) -> None:
    size = read_module._WHOLE_FILE_BYTES
    line = "0123456789" * 9 + "\n"
    path = tmp_path / "big.txt"
    path.write_text("\ufeff" + line * (size // len(line) + 50), encoding="utf-8")
    fd = os.open(path, os.O_RDONLY)
    try:
        reader = io.BufferedReader(io.FileIO(fd, "rb", closefd=False))
        page = _read_text_page(reader, 2900, 3, "big.txt")
    finally:
        os.close(fd)
    assert page.lines == [line[:-1]] * 3
    assert page.total == size // len(line) + 50 and page.truncated and page.next == 2903


@pytest.mark.parametrize(
    ("start", "count"), [(1, 0), (1, 1), (1, 2000), (7, 30), (1990, 11), (2000, 1), (2001, 2), (5000, 3)]
)
def test_lines_are_numbered_from_the_page_start_on_both_sides_of_the_prefix_table(
    start: int, count: int
) -> None:
    lines = [f"text {i}" for i in range(count)]
    numbered = read_module._numbered(start, lines)  # pyright: ignore[reportPrivateUsage]
    assert numbered == [f"{start + i}: {line}" for i, line in enumerate(lines)]


class _CountingReader(io.BytesIO):
    """A file whose reads are recorded (what ``read`` asked for)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int] = []

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        self.asked.append(len(buffer))
        return super().readinto(buffer)


def test_a_page_asks_for_the_files_size_not_the_whole_file_limit() -> None:
    data = "".join(f"line {i}\n" for i in range(200)).encode()
    raw = _CountingReader(data)
    page = _read_text_page(io.BufferedReader(raw, buffer_size=64), 1, None, "f", size=len(data))  # type: ignore[arg-type]
    assert page.lines == [f"line {i}" for i in range(200)] and page.total == 200
    assert max(raw.asked) <= len(data) + 1  # not _WHOLE_FILE_BYTES + 1 (a 256 KiB buffer for a 2 KB file)


@pytest.mark.parametrize("size", [0, 1, 10, 99, 100])
def test_a_file_with_more_than_its_size_said_is_read_to_the_end(size: int) -> None:
    # It grew after fstat, or it is a /proc file (size 0): the page is the one without a size.
    data = "".join(f"line {i}\n" for i in range(20)).encode()
    with_size = _read_text_page(_handle(b"\xef\xbb\xbf" + data), 1, None, "f", size=size)
    assert with_size == _read_text_page(_handle(data), 1, None, "f")
    assert with_size.lines == [f"line {i}" for i in range(20)]


def test_a_file_of_the_size_it_said_is_read_in_one_read_and_any_other_from_its_start(tmp_path: Path) -> None:
    data = "".join(f"line {i}\n" for i in range(50)).encode()
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_module._whole_file(fd, len(data)) == data  # pyright: ignore[reportPrivateUsage]
        os.lseek(fd, 0, os.SEEK_SET)
        # it says less than it has (it grew since fstat; a /proc file says 0): left to the stream, from its start
        assert read_module._whole_file(fd, 10) is None  # pyright: ignore[reportPrivateUsage]
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
        # larger than the whole-file limit: never read here
        assert read_module._whole_file(fd, read_module._WHOLE_FILE_BYTES + 1) is None  # pyright: ignore[reportPrivateUsage]
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
    finally:
        os.close(fd)

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.output import OutputStore, bounded_preview, marker_for, utf8_len
from tether.tools import File, Text

MARKER = marker_for("/data/tool-output/tool_x")


def lines_of(text: str) -> int:
    return text.count("\n") + 1


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=3000),
    max_lines=st.integers(1, 60),
    max_bytes=st.integers(1, 2000),
)
def test_preview_fits_the_limits(text: str, max_lines: int, max_bytes: int) -> None:
    preview = bounded_preview(text, MARKER, max_lines, max_bytes)
    assert utf8_len(preview) <= max_bytes
    assert lines_of(preview) <= max_lines
    preview.encode("utf-8")  # never splits a code point


@settings(max_examples=300)
@given(
    text=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=3000),
    max_lines=st.integers(5, 60),
    max_bytes=st.integers(200, 2000),
)
def test_preview_keeps_head_and_tail(text: str, max_lines: int, max_bytes: int) -> None:
    preview = bounded_preview(text, MARKER, max_lines, max_bytes)
    head, sep, tail = preview.partition(f"\n\n{MARKER}")
    assert sep
    assert text.startswith(head)
    tail = tail.removeprefix("\n\n")
    assert text.endswith(tail)


@pytest.mark.parametrize("char", ["é", "€", "𝄞", "中"])
def test_byte_cut_never_splits_a_multibyte_character(char: str) -> None:
    text = char * 5000
    for budget in range(120, 140):
        preview = bounded_preview(text, MARKER, 2000, budget)
        head = preview.split("\n\n", 1)[0]
        assert set(head) <= {char}
        assert utf8_len(preview) <= budget


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=5000), max_lines=st.integers(5, 50), max_bytes=st.integers(100, 3000))
def test_store_retains_the_full_text(tmp_path: Path, text: str, max_lines: int, max_bytes: int) -> None:
    store = OutputStore(tmp_path, max_lines=max_lines, max_bytes=max_bytes)
    bounded = store.bound_sync([Text(text), File(mime="image/png", data="AAAA")])
    if not bounded.output_paths:
        assert bounded.content[0] == Text(text)
        return
    saved = Path(bounded.output_paths[0]).read_bytes()
    assert saved == text.encode("utf-8", "surrogatepass")
    preview = bounded.content[0].text  # type: ignore[union-attr]
    assert utf8_len(preview) <= max_bytes and lines_of(preview) <= max_lines
    assert bounded.content[1] == File(mime="image/png", data="AAAA")  # media passes unchanged


def test_text_parts_are_measured_together(tmp_path: Path) -> None:
    store = OutputStore(tmp_path, max_lines=10, max_bytes=10_000)
    parts = [Text("a\n" * 6), Text("b\n" * 6)]
    bounded = store.bound_sync(parts)
    assert bounded.truncated
    assert Path(bounded.output_paths[0]).read_text() == "a\n" * 6 + "b\n" * 6


def test_within_limits_nothing_is_written(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    bounded = store.bound_sync([Text("small")], {"k": 1})
    assert not bounded.truncated and not (tmp_path / "out").exists()


def test_managed_files_are_created_exclusively_with_ascending_names(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    first = store.retain_text("a")
    second = store.retain_text("b")
    assert first.name.startswith("tool_") and first.name < second.name


def test_unwritable_directory_raises_output_store_error(tmp_path: Path) -> None:
    from tether.errors import OutputStoreError

    (tmp_path / "blocked").write_text("")
    store = OutputStore(tmp_path / "blocked", max_bytes=10)
    with pytest.raises(OutputStoreError, match=r"^Failed to write tool output: "):
        store.bound_sync([Text("x" * 100)])


def test_cleanup_removes_only_old_managed_files(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    old = store.retain_text("old")
    fresh = store.retain_text("fresh")
    other = tmp_path / "notes.txt"
    other.write_text("keep")
    eight_days_ago = time.time() - 8 * 24 * 3600
    os.utime(old, (eight_days_ago, eight_days_ago))
    os.utime(other, (eight_days_ago, eight_days_ago))
    assert store.cleanup_sync() == 1
    assert not old.exists() and fresh.exists() and other.exists()


def test_cleanup_of_missing_directory_is_a_no_op(tmp_path: Path) -> None:
    assert OutputStore(tmp_path / "missing").cleanup_sync() == 0

"""Retained outputs live in their session's directory; cleanup walks those directories and nothing else."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tether.content import Text
from tether.output import OutputStore

EIGHT_DAYS_AGO = time.time() - 8 * 24 * 3600


def age(path: Path) -> None:
    os.utime(path, (EIGHT_DAYS_AGO, EIGHT_DAYS_AGO), follow_symlinks=False)


def test_a_sessions_output_is_retained_in_its_own_directory(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out", max_lines=3)
    bounded = store.bound_sync([Text("x\n" * 10)], session="ses_abc")
    (path,) = bounded.output_paths
    assert Path(path).parent == tmp_path / "out" / "ses_abc" == store.session_directory("ses_abc")
    assert Path(path).read_text() == "x\n" * 10
    handle_path, handle = store.open_managed("ses_abc")
    handle.close()
    assert handle_path.parent == tmp_path / "out" / "ses_abc"


def test_output_without_a_session_stays_at_the_top(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    assert store.retain_text("x").parent == tmp_path / "out"


@pytest.mark.parametrize("session", ["../escape", "/abs", "a/b", "..", "", "tool_1", "x" * 200, "ses é"])
def test_a_session_id_never_picks_a_directory_outside_or_a_managed_name(tmp_path: Path, session: str) -> None:
    store = OutputStore(tmp_path / "out")
    directory = store.session_directory(session)
    assert directory.parent == tmp_path / "out"
    assert directory.name.startswith("session-") and len(directory.name) == len("session-") + 32
    assert store.retain_text("x", session).parent == directory
    assert not (tmp_path / "escape").exists()


def test_different_unsafe_session_ids_get_different_directories(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    assert store.session_directory("a/b") != store.session_directory("a/c")


def test_cleanup_walks_session_directories_and_removes_old_files_only(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    old = store.retain_text("old", "ses_a")
    fresh = store.retain_text("fresh", "ses_a")
    top = store.retain_text("top")
    other = store.session_directory("ses_a") / "notes.txt"
    other.write_text("keep")
    for path in (old, top, other):
        age(path)
    assert store.cleanup_sync() == 2
    assert not old.exists() and not top.exists() and fresh.exists() and other.exists()


def test_cleanup_removes_a_session_directory_once_it_has_stayed_empty(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    old = store.retain_text("old", "ses_a")
    age(old)
    assert store.cleanup_sync() == 1
    directory = store.session_directory("ses_a")
    assert directory.is_dir()  # just emptied: a session may be about to write there
    age(directory)
    store.cleanup_sync()
    assert not directory.exists()
    assert store.retain_text("again", "ses_a").parent == directory  # made again when needed


def test_cleanup_never_follows_a_symlinked_directory_out_of_the_store(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    canary = outside / "tool_canary"
    canary.write_text("keep")
    age(canary)
    store = OutputStore(tmp_path / "out")
    store.retain_text("x", "ses_a")
    (tmp_path / "out" / "ses_link").symlink_to(outside, target_is_directory=True)
    (tmp_path / "out" / "tool_link").symlink_to(canary)
    age(tmp_path / "out" / "tool_link")
    store.cleanup_sync()
    assert canary.read_text() == "keep"

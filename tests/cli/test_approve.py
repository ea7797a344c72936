"""The approval prompt's rendering of a call's input (the diff a person approves)."""

from __future__ import annotations

from tether.cli._approve import _input_diff  # pyright: ignore[reportPrivateUsage]

PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-old\n+new\n*** End Patch"


def test_apply_patch_prompt_shows_the_patch_from_its_patch_text_field() -> None:
    assert _input_diff("apply_patch", {"patch_text": PATCH}) == PATCH


def test_edit_prompt_shows_old_and_new_lines() -> None:
    diff = _input_diff("edit", {"path": "a.py", "old_string": "old", "new_string": "new"})
    assert diff == "--- a.py\n+++ a.py\n-old\n+new"

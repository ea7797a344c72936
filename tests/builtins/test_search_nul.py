"""A NUL byte in a search pattern is an input the model is told to fix, never a defect with a traceback.

No argument of a process can hold a NUL, so ripgrep could not be started with it (``embedded null byte``); grep's
``pattern`` and ``include`` and glob's ``pattern`` are refused at validation, with the field named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("tool", "input", "field"),
    [
        ("grep", {"pattern": "a\x00"}, "pattern"),
        ("grep", {"pattern": "\x00"}, "pattern"),
        ("grep", {"pattern": "a", "include": "*.py\x00"}, "include"),
        ("glob", {"pattern": "*\x00"}, "pattern"),
    ],
)
async def test_a_nul_in_a_pattern_is_invalid_input(
    project: Any, root: Path, tool: str, input: dict[str, Any], field: str
) -> None:
    (root / "a.py").write_text("a\n", encoding="utf-8")
    failed = await project.fail(tool, **input)
    assert failed.kind == "invalid_input", failed
    assert f"{field}: Value error, must not contain a NUL character" in failed.error
    assert "Traceback" not in failed.error


async def test_the_same_search_without_the_nul_runs(project: Any, root: Path) -> None:
    # control
    (root / "a.py").write_text("a\n", encoding="utf-8")
    assert f"{root / 'a.py'}" in await project.text("grep", pattern="a", include="*.py")
    assert await project.text("glob", pattern="*.py") == str(root / "a.py")

"""glob respects .gitignore exactly as ripgrep does: ripgrep's own gitignore unit cases, run through the tool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = json.loads(
    (Path(__file__).parent / "fixtures" / "glob_grep" / "ripgrep_gitignore_unit_cases.json").read_text()
)
CASES = [
    c
    for c in DATA["cases"]
    if c["root"] == "/home/foobar/rust/rg"
    and not c["path"].removeprefix("./").startswith(".")  # hidden: glob skips those anyway
    # A directory is observed through a file inside it; that only works when the directory itself is ignored
    # (a kept directory's files may still be ignored by another rule, e.g. "foo/**").
    and (c["expect_ignored"] or not c["is_dir"])
]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
@pytest.mark.anyio
async def test_gitignore_case(case: dict, root: Path, project) -> None:
    rel = case["path"].removeprefix("./")
    (root / ".gitignore").write_text(case["gitignore"])
    target = root / rel
    if case["is_dir"]:
        target.mkdir(parents=True)
        listed = target / "inner.txt"
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        listed = target
    listed.write_text("x")
    text = await project.text("glob", pattern="**/*")
    assert (str(listed) in text.splitlines()) is (not case["expect_ignored"])

"""Diffs in metadata are capped, so settle's 16 KiB metadata limit never drops the whole record of a large change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.builtins._common import METADATA_DIFF_BUDGET, cap_patch

pytestmark = pytest.mark.anyio

BIG = "".join(f'line {i} of some text with "quotes" and \u00e9\u00e8 accents\n' for i in range(2000))


def encoded(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


async def test_write_of_a_large_file_keeps_its_metadata_with_a_capped_diff(project, root: Path) -> None:
    outcome = await project.ok("write", path="big.txt", content=BIG)
    meta = outcome.metadata
    assert meta is not None and meta["existed"] is False and meta["resource"] == "big.txt"
    diff = meta["files"][0]
    assert diff["diffTruncated"] is True and diff["additions"] == 2000 and diff["status"] == "added"
    assert diff["patch"].startswith("--- a/big.txt\n+++ b/big.txt\n@@ -0,0 +1,2000 @@\n+line 0 ")
    assert diff["patch"].endswith("more lines)\n")
    assert encoded(diff["patch"]) <= METADATA_DIFF_BUDGET


async def test_small_write_diff_is_whole(project) -> None:
    meta = (await project.ok("write", path="s.txt", content="a\nb\n")).metadata
    assert meta is not None
    assert meta["files"][0]["diffTruncated"] is False
    assert meta["files"][0]["patch"] == "--- a/s.txt\n+++ b/s.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"


async def test_edit_of_a_large_file_keeps_metadata_and_a_compact_diff(project, root: Path) -> None:
    (root / "big.txt").write_text(BIG)
    outcome = await project.ok(
        "edit",
        path="big.txt",
        old_string="line 0 of some",
        new_string="first line of some",
        replace_all=False,
    )
    meta = outcome.metadata
    assert meta is not None and meta["replacements"] == 1
    assert meta["diff"] == meta["files"][0]["patch"]
    assert "+first line of some" in meta["diff"]


async def test_edit_replacing_everything_keeps_metadata(project, root: Path) -> None:
    (root / "big.txt").write_text(BIG)
    outcome = await project.ok(
        "edit", path="big.txt", old_string="text", new_string="words", replace_all=True
    )
    meta = outcome.metadata
    assert meta is not None and meta["replacements"] == 2000
    assert meta["files"][0]["diffTruncated"] is True and meta["files"][0]["deletions"] == 2000


async def test_apply_patch_of_large_files_keeps_metadata(project, root: Path) -> None:
    body = "".join(f"+{line}\n" for line in BIG.splitlines())
    patch = (
        "*** Begin Patch\n" + "".join(f"*** Add File: f{i}.txt\n{body}" for i in range(3)) + "*** End Patch"
    )
    outcome = await project.ok("apply_patch", patch_text=patch)
    meta = outcome.metadata
    assert meta is not None and [a["resource"] for a in meta["applied"]] == ["f0.txt", "f1.txt", "f2.txt"]
    assert all(f["diffTruncated"] for f in meta["files"])
    assert sum(encoded(f["patch"]) for f in meta["files"]) <= METADATA_DIFF_BUDGET + 3 * 100


def test_cap_patch_cuts_at_a_line_boundary_within_the_budget() -> None:
    patch = "".join(f'+"{i}"\n' for i in range(1000))
    capped, truncated = cap_patch(patch, 500)
    assert truncated and encoded(capped) <= 502
    body, marker = capped.rsplit("... (diff truncated: ", 1)
    assert body.endswith("\n") and patch.startswith(body)
    assert marker.endswith("more lines)\n")
    assert cap_patch("+a\n", 500) == ("+a\n", False)

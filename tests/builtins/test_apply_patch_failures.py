"""apply_patch fails at the hunk that cannot apply, names the file and the reason, and leaves later files alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether.content import text_of


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("setup", "body", "message"),
    [
        (
            "dir:a.txt",
            ["*** Add File: a.txt", "+x"],
            "Unable to apply patch at a.txt: a directory exists at this path",
        ),
        ("dir:d", ["*** Delete File: d"], "Unable to apply patch at d: not a regular file"),
        ("", ["*** Delete File: gone.txt"], "Unable to apply patch at gone.txt: file does not exist"),
        ("", ["*** Update File: gone.txt", "@@", "-a", "+b"], "Failed to read file to update: gone.txt"),
        ("bytes:bin.txt", ["*** Update File: bin.txt", "@@", "-a", "+b"], "bin.txt: file is not valid UTF-8"),
        (
            "text:a.txt dir:dest",
            ["*** Update File: a.txt", "*** Move to: dest", "@@", "-a", "+b"],
            "a directory exists at the move destination dest",
        ),
    ],
)
async def test_a_hunk_that_cannot_apply_fails_the_call_naming_file_and_reason(
    project: Any, root: Path, setup: str, body: list[str], message: str
) -> None:
    for item in setup.split():
        kind, _, name = item.partition(":")
        if kind == "dir":
            (root / name).mkdir()
        elif kind == "bytes":
            (root / name).write_bytes(b"a\n\xff\xfe\n")
        else:
            (root / name).write_text("a\n", encoding="utf-8")
    failed = await project.fail("apply_patch", patch_text=patch(*body))
    assert message in failed.error


@pytest.mark.anyio
async def test_a_failure_after_applied_hunks_reports_them_as_partial(project: Any, root: Path) -> None:
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    failed = await project.fail(
        "apply_patch",
        patch_text=patch(
            "*** Update File: a.txt",
            "@@",
            "-a",
            "+b",
            "*** Delete File: missing.txt",
            "*** Add File: c.txt",
            "+c",
        ),
    )
    assert failed.error.startswith("Patch partially applied before failing at missing.txt. Applied: a.txt")
    assert text_of(failed.partial) == "Applied patch sequentially:\nM a.txt"
    assert (root / "a.txt").read_text(encoding="utf-8") == "b\n"
    assert not (root / "c.txt").exists()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("   ", "patch_text is required"),
        ("*** Begin Patch\n*** End Patch", "patch rejected: empty patch"),
        ("*** Begin Patch\n*** Nonsense\n*** End Patch", "apply_patch verification failed: '*** Nonsense'"),
    ],
)
async def test_an_empty_or_malformed_patch_changes_nothing(
    project: Any, root: Path, text: str, message: str
) -> None:
    failed = await project.fail("apply_patch", patch_text=text)
    assert message in failed.error
    assert list(root.iterdir()) == []

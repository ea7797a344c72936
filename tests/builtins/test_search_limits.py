"""grep and glob on hostile inputs: a 40 MB line, a FIFO, a device, a real git repository searched with ``*``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tether.builtins import _rg
from tether.builtins._common import LINE_SUFFIX, MAX_LINE_CHARS
from tether.builtins.grep import grep_args

pytestmark = pytest.mark.anyio

# Hang guards, not timings: each call below finishes in well under a second when it works.
GUARD = 120


async def test_grep_on_a_40_mb_single_line_file_shows_the_line_capped_with_the_marker(
    project, root: Path
) -> None:
    with (root / "one-line.txt").open("w") as f:
        f.write("abc " * 10_000_000)
        f.write("needle\n")
    with anyio.fail_after(GUARD):
        text = await project.text("grep", pattern="needle")
    assert text.splitlines()[3] == "  Line 1: " + ("abc " * 500)[:MAX_LINE_CHARS] + LINE_SUFFIX
    assert len(text) < 3 * MAX_LINE_CHARS


async def test_ripgrep_output_lines_are_read_in_linear_time_and_cut_to_a_bound() -> None:
    # 40 MB without a newline, then a short line: the reader keeps the first max_line bytes of the long one.
    script = "import sys; w = sys.stdout.buffer; w.write(b'x' * 40_000_000); w.write(b'\\nshort\\n')"
    with anyio.fail_after(GUARD):
        process = await anyio.open_process([sys.executable, "-c", script])
        async with process:
            rg = _rg.RgProcess(process)
            lines = [line async for batch in rg.batches(max_line=1000) for line in batch]
    assert lines == [b"x" * 1000, b"short"]


async def test_grep_refuses_a_fifo_given_as_the_path_at_once(project, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with anyio.fail_after(GUARD):
        failed = await project.fail("grep", pattern="x", path="pipe")
    assert failed.error.startswith("Search path is a FIFO, not a regular file or a directory: pipe.")


async def test_grep_refuses_dev_zero_at_once(project) -> None:
    with anyio.fail_after(GUARD):
        failed = await project.fail("grep", pattern="x", path="/dev/zero")
    assert failed.error.startswith(
        "Search path is a character device, not a regular file or a directory: /dev/zero."
    )


async def test_grep_directory_search_skips_a_fifo_and_a_symlink_to_a_device(project, root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / "zero").symlink_to("/dev/zero")
    (root / "a.txt").write_text("needle\n")
    with anyio.fail_after(GUARD):
        text = await project.text("grep", pattern="needle", include="*")
    assert text.splitlines() == ["Found 1 matches", "", f"{root / 'a.txt'}:", "  Line 1: needle"]


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


@pytest.fixture
def repo(root: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (root / "a.txt").write_text("needle\n")
    _git(root, "init", "-q", ".")
    _git(root, "add", "a.txt")
    _git(
        root,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.invalid",
        "commit",
        "-q",
        "-m",
        "needle in the log",
    )
    assert "needle" in (root / ".git" / "COMMIT_EDITMSG").read_text()
    return root


async def test_grep_with_include_star_never_searches_git(project, repo: Path) -> None:
    for include in ("*", "**", ".git/**", "**/COMMIT_EDITMSG", None):
        text = await project.text("grep", pattern="needle", include=include)
        assert ".git" not in text, include
    assert (await project.text("grep", pattern="needle", include="*")).splitlines()[2] == f"{repo / 'a.txt'}:"


async def test_glob_never_lists_git_in_a_real_repository(project, repo: Path) -> None:
    for pattern in ("*", "**/*", ".git/**", "**/HEAD", "**/COMMIT_EDITMSG"):
        text = await project.text("glob", pattern=pattern)
        assert ".git" not in text, pattern


def test_grep_excludes_git_after_the_include_glob() -> None:
    args = grep_args("x", include="*")
    assert args.index("--glob=*") < args.index("--glob=!**/.git") < args.index("--glob=!**/.git/**")

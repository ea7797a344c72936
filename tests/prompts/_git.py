"""Real git repositories for the environment-block tests (a fixed author, so commits work on any machine)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT}, capture_output=True, text=True, check=True
    )
    return done.stdout


def repo(path: Path, branch: str = "main") -> Path:
    """A repository at ``path`` on ``branch`` with one commit of ``a.txt``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path

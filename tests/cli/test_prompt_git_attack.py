"""``tether run`` in a repository whose git config starts a program: the prompt's environment block shows the real
git status of an untrusted project without starting it (a real subprocess CLI, a real hostile repository)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


def _hostile(project: Path, canary: Path) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    subprocess.run([*GIT, "add", "notes.txt"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "notes"], cwd=project, check=True)
    subprocess.run(
        ["git", "config", "filter.x.clean", f"sh -c 'touch {canary}; cat'"], cwd=project, check=True
    )
    (project / ".gitattributes").write_text("* filter=x\n")
    os.utime(project / "notes.txt", (1, 1))  # stat-dirty: git status would read it through the filter
    return project


def test_show_prompt_in_a_hostile_repository_starts_no_program(
    cli: Any, project: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "PWNED_filter"
    _hostile(project, canary)
    shown = cli.run("run", "--show-prompt", "--model", "openai/gpt-5", "--dir", str(project))
    assert shown.code == 0, shown.output
    assert "Git branch: main" in shown.stdout
    assert "Git status: 1 untracked" in shown.stdout  # .gitattributes; notes.txt read without its filter
    model = cli.script([{"text": "done"}])
    run = cli.run("run", "hello", "--model", model, "--dir", str(project))
    assert run.code == 0, run.output
    assert not canary.exists()


def test_a_trusted_project_gets_its_git_status(cli: Any, project: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    subprocess.run([*GIT, "add", "notes.txt"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "notes"], cwd=project, check=True)
    (project / "notes.txt").write_text("changed\n", encoding="utf-8")
    shown = cli.run("run", "--show-prompt", "--trust", "--model", "openai/gpt-5", "--dir", str(project))
    assert shown.code == 0, shown.output
    assert "Git status: 1 modified" in shown.stdout

"""A repository's git config cannot make the environment block start a program.

The attack is a real hostile repository (a shipped ``.git``): its config names programs git starts on ``git status``
(a clean filter, an fsmonitor hook). In an untrusted project no git runs (the branch is read from the ``.git``
files); in a trusted one ``git status`` runs with its overrides. Each attack first shows that the repository really
starts its program under a plain ``git status``, so the test can fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import anyio
import pytest

from tether import Runtime
from tether.config import load_config
from tether.prompts import GitState, git_state, measure_environment

from ._git import git, repo

UNCHECKED = "not checked (tether runs git status only in a trusted project)"


def hostile(path: Path, canary: Path) -> Path:
    """A repository whose config starts a program (touching ``canary``) on ``git status``: a clean filter."""
    repo(path)
    (path / ".gitattributes").write_text("* filter=x\n")
    git(path, "config", "filter.x.clean", f"sh -c 'touch {canary}; cat'")
    git(path, "config", "core.fsmonitor", f"sh -c 'touch {canary}' #")
    git(path, "config", "core.pager", f"sh -c 'touch {canary}; cat'")
    git(path, "config", "diff.external", f"sh -c 'touch {canary}'")
    os.utime(path / "a.txt", (1, 1))  # stat-dirty: git status reads the file through the filter
    return path


def test_the_hostile_repository_starts_a_program_under_plain_git_status(tmp_path: Path) -> None:
    canary = tmp_path / "PWNED"
    path = hostile(tmp_path / "p", canary)
    subprocess.run(
        [
            "git",
            "--no-optional-locks",
            "-c",
            "core.fsmonitor=false",
            "status",
            "--porcelain=v2",
        ],  # the old argv
        cwd=path,
        capture_output=True,
        check=True,
    )
    assert canary.exists()


def test_an_untrusted_repository_runs_no_program_and_still_shows_its_branch(tmp_path: Path) -> None:
    canary = tmp_path / "PWNED"
    path = hostile(tmp_path / "p", canary)
    assert git_state(path) == (GitState(branch="main", status=UNCHECKED), "")
    env = anyio.run(lambda: measure_environment(root=path, directory=path, model="a/b"))
    assert env.git == GitState(branch="main", status=UNCHECKED)
    assert not canary.exists()


def test_an_untrusted_runtime_runs_no_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "config"))
    canary = tmp_path / "PWNED"
    path = hostile(tmp_path / "p", canary)

    async def block(trusted: bool) -> str:
        async with Runtime(data_dir=tmp_path / "data", config=load_config(path, trusted=trusted)) as rt:
            location = await rt.location(path)
            texts = await rt.sessions.service.system_prompt(location, agent="build", model="a/b")
            return texts[1]

    untrusted = anyio.run(block, False)
    assert f"Git status: {UNCHECKED}" in untrusted and "Git branch: main" in untrusted
    assert not canary.exists()
    # control: the project the user trusts gets git status (whose filter then runs, as for the user's own git)
    trusted = anyio.run(block, True)
    assert "Git status: 1 untracked" in trusted  # .gitattributes


def test_a_trusted_repository_gets_git_status_without_its_hooks(tmp_path: Path) -> None:
    canary = tmp_path / "PWNED"
    path = repo(tmp_path / "p")
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch '{canary}'\n")
    hook.chmod(0o755)
    git(path, "config", "core.fsmonitor", str(hook))
    git(path, "config", "core.untrackedCache", "true")
    git(path, "config", "status.showUntrackedFiles", "no")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "post-index-change").symlink_to(hook)
    git(path, "config", "core.hooksPath", str(hooks))
    (path / "a.txt").write_text("changed\n")
    (path / "new").write_text("n\n")
    assert git_state(path, trusted=True) == (GitState(branch="main", status="1 modified, 1 untracked"), "")
    assert not canary.exists()


def test_the_branch_is_read_from_the_git_files(tmp_path: Path) -> None:
    path = repo(tmp_path / "p", branch="feature/x")
    (path / "sub" / "deeper").mkdir(parents=True)
    assert git_state(path / "sub" / "deeper")[0] == GitState(branch="feature/x", status=UNCHECKED)
    git(path, "pack-refs", "--all")  # the branch only in packed-refs: still born
    assert not (path / ".git" / "refs" / "heads" / "feature" / "x").exists()
    assert git_state(path)[0] == GitState(branch="feature/x", status=UNCHECKED)
    head = git(path, "rev-parse", "HEAD").strip()
    git(path, "checkout", "-q", "--detach")
    assert git_state(path)[0] == GitState(branch=f"detached at {head[:12]}", status=UNCHECKED)
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "trunk")
    assert git_state(empty)[0] == GitState(branch="trunk (no commits yet)", status=UNCHECKED)


def test_worktrees_and_gitdir_files_are_followed(tmp_path: Path) -> None:
    path = repo(tmp_path / "p")
    git(path, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    assert (tmp_path / "wt" / ".git").is_file()
    assert git_state(tmp_path / "wt")[0] == GitState(branch="side", status=UNCHECKED)
    separate = tmp_path / "sep"
    separate.mkdir()
    git(separate, "init", "-q", "-b", "solo", "--separate-git-dir", str(tmp_path / "sep.git"))
    assert git_state(separate)[0] == GitState(branch="solo (no commits yet)", status=UNCHECKED)


def test_a_hostile_head_neither_blocks_nor_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    path = repo(tmp_path / "p")
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef0123456789abcdef01234567\n")
    head = path / ".git" / "HEAD"
    head.unlink()
    head.symlink_to(secret)  # a symlinked HEAD is not read: the secret never reaches the block
    state, _ = git_state(path)
    assert state is not None and "0123" not in state.branch
    head.unlink()
    os.mkfifo(head)  # a FIFO would block an ordinary open: not a git work tree, answered at once
    assert git_state(path) == (None, "")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_state(plain) == (None, "")


def test_a_fifo_packed_refs_and_an_absolute_ref_are_not_read(tmp_path: Path) -> None:
    import threading

    path = repo(tmp_path / "p", branch="main")
    git(path, "checkout", "-q", "-b", "other")
    (path / ".git" / "refs" / "heads" / "other").unlink()  # only packed-refs could say "other" exists
    os.mkfifo(path / ".git" / "packed-refs")  # an ordinary open of it waits for a writer forever
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(git_state(path)), daemon=True)
    reader.start()
    reader.join(timeout=30)  # a hang guard
    assert found == [(GitState(branch="other (no commits yet)", status=UNCHECKED), "")]
    (path / ".git" / "HEAD").write_text(f"ref: {tmp_path / 'p' / 'a.txt'}\n")
    assert git_state(path)[0] == GitState(branch="unknown (HEAD is not a ref)", status=UNCHECKED)

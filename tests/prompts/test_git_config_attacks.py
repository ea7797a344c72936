"""A repository's git config cannot make the environment block start a program, and the block still shows the
repository's real status, trusted or not (issue 37).

The attack is a real hostile repository (a shipped ``.git``): its ``.git/config``, ``.git/info/attributes``, a file
its config includes and its ``.gitattributes`` name every program ``git status`` could start (an fsmonitor hook,
hooks by ``core.hooksPath`` and in ``.git/hooks``, clean/smudge/process filters, a filter whose name holds ``=``,
diff drivers, an external diff, a pager), each touching its own canary. Each attack first shows that the repository
really starts its programs under a plain ``git status``, so the test can fail.
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

SPECIAL = "not checked (a file git reads in .git is a symlink or not a regular file)"


def _program(tmp_path: Path, name: str) -> str:
    """A shell command that touches the canary ``PWNED_<name>`` and passes its input through."""
    return f"sh -c 'touch {tmp_path}/PWNED_{name}; cat' #"


def hostile(path: Path, tmp_path: Path) -> Path:
    """A repository that names a program for every hook ``git status`` (or a caller's option) could reach."""
    repo(path)
    for name in ("b.txt", "inc.txt", "info.txt"):
        (path / name).write_text(f"{name}\n")
    git(path, "add", "b.txt", "inc.txt", "info.txt")
    git(path, "commit", "-q", "-m", "more")
    (path / ".gitattributes").write_text(
        "* filter=x diff=t\nb.txt filter=a=b\ninc.txt filter=inc\n"  # a=b: a name -c cannot carry
    )
    (path / ".git" / "info").mkdir(exist_ok=True)
    (path / ".git" / "info" / "attributes").write_text("info.txt filter=y\n")
    included = tmp_path / "included.cfg"
    included.write_text(f'[filter "inc"]\n\tclean = "{_program(tmp_path, "included")}"\n')
    settings = {
        "core.fsmonitor": _program(tmp_path, "fsmonitor"),
        "filter.x.clean": _program(tmp_path, "clean"),
        "filter.x.smudge": _program(tmp_path, "smudge"),
        "filter.x.process": _program(tmp_path, "process"),
        "filter.x.required": "true",
        "filter.a=b.clean": _program(tmp_path, "equals"),
        "filter.y.clean": _program(tmp_path, "info"),
        "diff.t.textconv": _program(tmp_path, "textconv"),
        "diff.t.command": _program(tmp_path, "diffcommand"),
        "diff.external": _program(tmp_path, "external"),
        "core.pager": _program(tmp_path, "pager"),
        "include.path": str(included),
    }
    for key, value in settings.items():
        git(path, "config", key, value)
    hooks = tmp_path / "hooks"
    hooks.mkdir(exist_ok=True)
    for where, name in ((hooks, "hookspath"), (path / ".git" / "hooks", "hook")):
        hook = where / "post-index-change"
        hook.write_text(f"#!/bin/sh\ntouch '{tmp_path}/PWNED_{name}'\n")
        hook.chmod(0o755)
    git(path, "config", "core.hooksPath", str(hooks))
    for name in ("a.txt", "b.txt", "inc.txt", "info.txt"):
        os.utime(path / name, (1, 1))  # stat-dirty: git status reads each through its filter
    return path


def _canaries(tmp_path: Path) -> list[str]:
    return sorted(p.name.removeprefix("PWNED_") for p in tmp_path.glob("PWNED_*"))


def test_the_hostile_repository_starts_its_programs_under_plain_git_status(tmp_path: Path) -> None:
    path = hostile(tmp_path / "p", tmp_path)
    assert _canaries(tmp_path) == []
    # the old argv of the block (only fsmonitor turned off), the long-running filter aside (it fails at once)
    argv = ["git", "--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "filter.x.process=", "-c"]
    argv += ["filter.x.required=false", "status"]
    subprocess.run([*argv, "--porcelain=v2"], cwd=path, capture_output=True, check=False)
    assert {"equals", "included", "info"} <= set(_canaries(tmp_path)), _canaries(tmp_path)
    subprocess.run(["git", "status", "--porcelain=v2"], cwd=path, capture_output=True, check=False)
    assert {"fsmonitor", "process"} <= set(_canaries(tmp_path)), _canaries(tmp_path)


def test_an_untrusted_repository_runs_no_program_and_shows_its_real_status(tmp_path: Path) -> None:
    path = hostile(tmp_path / "p", tmp_path)
    (path / "b.txt").write_text("changed\n")
    assert git_state(path) == (
        GitState(branch="main", status="1 modified, 1 untracked"),
        "",
    )  # .gitattributes
    env = anyio.run(lambda: measure_environment(root=path, directory=path, model="a/b"))
    assert env.git == GitState(branch="main", status="1 modified, 1 untracked")
    assert _canaries(tmp_path) == []


def test_an_untrusted_runtime_runs_no_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "config"))
    path = hostile(tmp_path / "p", tmp_path)

    async def block(trusted: bool) -> str:
        async with Runtime(data_dir=tmp_path / "data", config=load_config(path, trusted=trusted)) as rt:
            location = await rt.location(path)
            texts = await rt.sessions.service.system_prompt(location, agent="build", model="a/b")
            return texts[1]

    untrusted = anyio.run(block, False)
    assert "Git status: 1 untracked" in untrusted and "Git branch: main" in untrusted
    assert _canaries(tmp_path) == []
    # control: the project the user trusts gets its filter drivers run (as the user's own git status runs them),
    # never its hooks, fsmonitor, diff programs or pager
    trusted = anyio.run(block, True)
    assert (
        "Git branch: main" in trusted
    )  # the repository's process filter fails git status: the status says so
    ran = set(_canaries(tmp_path))
    assert ran and ran <= {"clean", "smudge", "process", "equals", "included", "info"}, ran


def test_the_git_environment_cannot_bring_overrides_or_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = repo(tmp_path / "p")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", _program(tmp_path, "env"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor'='{tmp_path}/x'")
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", _program(tmp_path, "envdiff"))
    os.utime(path / "a.txt", (1, 1))
    assert git_state(path) == (GitState(branch="main", status="clean"), "")
    assert _canaries(tmp_path) == []


def test_too_many_drivers_leave_the_status_unknown(tmp_path: Path) -> None:
    path = repo(tmp_path / "p")
    with (path / ".git" / "config").open("a") as config:
        config.writelines(f'[filter "f{n}"]\n\tclean = x\n' for n in range(1001))
    assert git_state(path) == (
        GitState(
            branch="main",
            status="unknown (git status not run: the repository's config defines more than 1000 filter and diff "
            "drivers)",
        ),
        "",
    )


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


def _from_files(path: Path, tmp_path: Path) -> GitState | None:
    """``git_state`` where no ``git`` is on PATH: the branch read from the ``.git`` files."""
    empty = tmp_path / "no-git"
    empty.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(empty))
        state, note = git_state(path)
    assert note == ""
    return state


NO_GIT = "unknown (git not found)"


def test_the_branch_is_read_from_the_git_files_when_git_is_missing(tmp_path: Path) -> None:
    path = repo(tmp_path / "p", branch="feature/x")
    (path / "sub" / "deeper").mkdir(parents=True)
    assert _from_files(path / "sub" / "deeper", tmp_path) == GitState(branch="feature/x", status=NO_GIT)
    git(path, "pack-refs", "--all")  # the branch only in packed-refs: still born
    assert not (path / ".git" / "refs" / "heads" / "feature" / "x").exists()
    assert _from_files(path, tmp_path) == GitState(branch="feature/x", status=NO_GIT)
    head = git(path, "rev-parse", "HEAD").strip()
    git(path, "checkout", "-q", "--detach")
    assert _from_files(path, tmp_path) == GitState(branch=f"detached at {head[:12]}", status=NO_GIT)
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "trunk")
    assert _from_files(empty, tmp_path) == GitState(branch="trunk (no commits yet)", status=NO_GIT)
    assert git_state(empty) == (GitState(branch="trunk (no commits yet)", status="clean"), "")


def test_worktrees_and_gitdir_files_are_followed(tmp_path: Path) -> None:
    path = repo(tmp_path / "p")
    git(path, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"))
    assert (tmp_path / "wt" / ".git").is_file()
    assert git_state(tmp_path / "wt") == (GitState(branch="side", status="clean"), "")
    assert _from_files(tmp_path / "wt", tmp_path) == GitState(branch="side", status=NO_GIT)
    separate = tmp_path / "sep"
    separate.mkdir()
    git(separate, "init", "-q", "-b", "solo", "--separate-git-dir", str(tmp_path / "sep.git"))
    assert _from_files(separate, tmp_path) == GitState(branch="solo (no commits yet)", status=NO_GIT)
    assert git_state(separate) == (GitState(branch="solo (no commits yet)", status="clean"), "")


def test_a_hostile_head_neither_blocks_nor_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    path = repo(tmp_path / "p")
    secret = tmp_path / "secret"
    secret.write_text("0123456789abcdef0123456789abcdef01234567\n")
    head = path / ".git" / "HEAD"
    head.unlink()
    head.symlink_to(
        secret
    )  # a symlinked HEAD is not read, by us or by git: the secret never reaches the block
    assert git_state(path) == (GitState(branch="unknown (HEAD is not a ref)", status=SPECIAL), "")
    head.unlink()
    os.mkfifo(head)  # a FIFO would block an ordinary open: not a git work tree, answered at once
    assert git_state(path) == (None, "")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert git_state(plain) == (None, "")
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / ".git").write_text("not a gitdir line\n")  # a .git file git would complain about: git is not run
    assert git_state(odd) == (None, "")


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
    assert found == [(GitState(branch="other (no commits yet)", status=SPECIAL), "")]
    (path / ".git" / "packed-refs").unlink()
    (path / ".git" / "HEAD").write_text(f"ref: {tmp_path / 'p' / 'a.txt'}\n")
    assert _from_files(path, tmp_path) == GitState(branch="unknown (HEAD is not a ref)", status=NO_GIT)

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.location import Location, names_protected_path, protected_anchor


@pytest.mark.parametrize(
    ("resource", "anchor"),
    [
        (".git/config", ".git/config"),
        (".git/hooks/pre-commit", ".git/hooks/"),
        (".git/info/exclude", ".git/info/"),
        (".git/hooks", ".git/hooks"),
        (".tether/tether.json", ".tether/"),
        (".tether", ".tether"),
        (".gitmodules", ".gitmodules"),
        ("tether.json", "tether.json"),
        ("pkg/AGENTS.md", "pkg/AGENTS.md"),
        ("vendor/lib/.git/config", "vendor/lib/.git/config"),
        ("/home/me/repo/.git/hooks/post-checkout", "/home/me/repo/.git/hooks/"),
        (".git", ".git"),
        ("vendor/lib/.git", "vendor/lib/.git"),
        (".git/commondir", ".git/commondir"),
        (".git/config.worktree", ".git/config.worktree"),
        (".git/rebase-merge/git-rebase-todo", ".git/rebase-merge/"),
        (".git/modules/sub/config", ".git/modules/sub/config"),
        (".git/modules/sub/hooks/pre-commit", ".git/modules/sub/hooks/"),
        (".git/worktrees/w/commondir", ".git/worktrees/w/commondir"),
        ("/home/me/super/.git/modules/sub/config", "/home/me/super/.git/modules/sub/config"),
        (".GIT/config", ".GIT/config"),
        (".Tether/tether.json", ".Tether/"),
        ("docs/agents.md", "docs/agents.md"),
        (".g\u200cit/config", ".g\u200cit/config"),  # HFS+ ignores U+200C
        (".git./config", ".git./config"),  # NTFS drops trailing dots
        ("GIT~1/hooks/x", "GIT~1/hooks/"),  # NTFS short name
        ("AGENTS.md ", "AGENTS.md "),
        (
            "evil/config",
            "evil/config",
        ),  # an embedded git directory (HEAD, objects/, refs/) has no .git in its path
    ],
)
def test_protected_paths_have_the_anchor_a_rule_must_name(resource: str, anchor: str) -> None:
    assert protected_anchor(resource) == anchor


@pytest.mark.parametrize(
    "resource",
    [
        "src/app.py",
        ".git/HEAD",
        ".git/objects/ab/cd",
        ".git/refs/heads/main",
        ".git/modules/sub/objects/ab/cd",
        ".github/x",
        ".gitignore",
        "docs/agents.txt",
        "config/settings.py",
        "app/config.py",
    ],
)
def test_ordinary_paths_are_not_protected(resource: str) -> None:
    assert protected_anchor(resource) is None


def test_extra_instruction_files_are_protected() -> None:
    assert protected_anchor("docs/rules.md", extra={"docs/rules.md"}) == "docs/rules.md"


def test_an_extra_directory_protects_everything_under_it() -> None:
    extra = {"/srv/repo.git/hooks/"}
    assert protected_anchor("/srv/repo.git/hooks/pre-push", extra=extra) == "/srv/repo.git/hooks/"
    assert protected_anchor("/srv/repo.git/objects/ab", extra=extra) is None


@pytest.mark.parametrize(
    ("pattern", "anchor", "names"),
    [
        (".git/hooks/*", ".git/hooks/", True),
        (".git/hooks/pre-commit", ".git/hooks/", True),
        (".git/*", ".git/hooks/", False),
        ("*", ".git/config", False),
        ("*/AGENTS.md", "pkg/AGENTS.md", False),
        ("pkg/AGENTS.md", "pkg/AGENTS.md", True),
        (".tether/*", ".tether/", True),
        (".t*", ".tether/", False),
    ],
)
def test_only_a_rule_that_spells_the_anchor_names_it(pattern: str, anchor: str, names: bool) -> None:
    assert names_protected_path(pattern, anchor) is names


def test_a_wildcard_extra_protects_each_match() -> None:
    assert protected_anchor("docs/guide/rules.md", extra={"docs/*.md"}) == "docs/guide/rules.md"
    assert protected_anchor("docs/rules.txt", extra={"docs/*.md"}) is None


def test_instruction_files_named_by_the_config_are_protected_where_they_resolve(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    outside = tmp_path / "shared" / "rules.md"
    location = Location(root, protected=["docs/rules.md", str(outside), "notes/*.md"])
    assert location.resolve("docs/rules.md").protected == "docs/rules.md"
    assert location.resolve("./docs/../docs/rules.md").protected == "docs/rules.md"
    assert location.resolve(str(outside)).protected == outside.as_posix()
    assert location.resolve("notes/today.md").protected == "notes/today.md"
    assert location.resolve("docs/other.md").protected is None
    assert location.resolve("pkg/AGENTS.md").protected == "pkg/AGENTS.md"


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(cwd)}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def test_a_separate_git_directory_named_by_the_dot_git_file_is_protected(tmp_path: Path) -> None:
    gitdir = tmp_path / "store" / "repo.git"
    gitdir.parent.mkdir()
    git(tmp_path, "init", "-q", f"--separate-git-dir={gitdir}", "project")
    location = Location(tmp_path / "project")
    assert location.resolve(".git").protected == ".git"
    assert location.resolve(str(gitdir / "config")).protected == f"{gitdir.as_posix()}/"
    assert location.resolve(str(gitdir / "hooks" / "pre-commit")).protected == f"{gitdir.as_posix()}/"
    assert location.resolve(str(tmp_path / "store" / "other")).protected is None


def test_a_worktrees_own_and_common_git_directories_are_protected(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", ".")
    git(main, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"))
    location = Location(tmp_path / "wt")
    own = main / ".git" / "worktrees" / "wt"
    assert location.resolve(str(own / "config.worktree")).protected == f"{own.as_posix()}/"
    assert location.resolve(str(main / ".git" / "config")).protected == f"{(main / '.git').as_posix()}/"


@pytest.mark.anyio
async def test_the_runtime_protects_the_instruction_files_its_config_names(tmp_path: Path) -> None:
    from tether import Runtime
    from tether.config import parse_config

    project = tmp_path / "project"
    project.mkdir()
    config = parse_config({"instructions": ["docs/rules.md"]}, file="tether.json")
    async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
        location = (await rt.location(project)).location
        assert location.resolve("docs/rules.md").protected == "docs/rules.md"
        assert location.resolve("docs/other.md").protected is None
        data = (tmp_path / "data").resolve().as_posix()
        trust_file = location.resolve(str(tmp_path / "data" / "trusted-projects.json"))
        assert trust_file.protected == f"{data}/"
        assert location.resolve(str(tmp_path / "data" / "tether.db")).protected == f"{data}/"
        assert location.resolve(str(tmp_path / "elsewhere.txt")).protected is None


SEGMENTS = st.sampled_from(["./", "src/../", "src/./../", "alias/../", ""])
TARGETS = st.sampled_from([".git/config", "alias/config", "cfg", ".git/hooks/x", "alias/hooks/x", "hooks/x"])


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(prefix=st.lists(SEGMENTS, max_size=3), target=TARGETS, slashes=st.booleans())
def test_every_spelling_of_a_git_file_resolves_to_a_protected_resource(
    tmp_path: Path, prefix: list[str], target: str, slashes: bool
) -> None:
    root = tmp_path / "project"
    if not root.exists():
        (root / ".git" / "hooks").mkdir(parents=True)
        (root / ".git" / "config").write_text("[core]\n")
        (root / "src").mkdir()
        (root / "alias").symlink_to(".git", target_is_directory=True)
        (root / "cfg").symlink_to(".git/config")
        (root / "hooks").symlink_to(".git/hooks", target_is_directory=True)
    spelling = "".join(prefix) + target
    if slashes:
        spelling = spelling.replace("/", "//")
    resolved = Location(root).resolve(spelling)
    assert resolved.protected is not None, spelling
    absolute = Location(root).resolve(str(root) + "/" + spelling)
    assert absolute.protected == resolved.protected

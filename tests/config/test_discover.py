"""Finding the project from a subdirectory, and the walk up refusing what a stranger could have planted.

Every attack is performed on real directories: a world-writable parent (a stand-in for /tmp, mode 1777) holding a
planted .tether/tether.json, a parent owned by another user, a .tether above a git repository, a home directory with
its own .tether. The canary is the planted config: its rule must not reach the loaded config.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tether.config import PROJECT_CONFIG, find_project, load_config
from tether.config._discover import project_file
from tether.errors import ConfigError

PLANTED = {"permission": {"bash": {"planted *": "deny"}}}


def write(path: Path, value: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory of our own, far from the test's project trees (which are its siblings)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(home / ".config" / "tether"))
    return home


def planted_rules(directory: Path, user_file: Path) -> list[str]:
    config = load_config(directory, user_file=user_file, environ={}, trusted=True)
    return [rule.resource for rule in config.permission]


@pytest.mark.parametrize(
    "marker", [".tether/tether.json", ".tether/tether.jsonc", "tether.json", "tether.jsonc"]
)
def test_a_subdirectory_belongs_to_the_nearest_marked_directory(
    tmp_path: Path, home: Path, marker: str
) -> None:
    repo = tmp_path / "repo"
    write(repo / marker, {"model": "openai/gpt-5"})
    (repo / "pkg" / "sub").mkdir(parents=True)
    assert find_project(repo / "pkg" / "sub") == repo.resolve()
    config = load_config(repo / "pkg" / "sub", user_file=home / "none.json", environ={}, trusted=True)
    assert config.root == repo.resolve()
    assert config.get("model") == "openai/gpt-5"
    assert config.files == (repo.resolve() / marker,)


def test_the_git_root_is_the_project_when_nothing_is_marked(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    assert find_project(repo / "pkg") == repo.resolve()
    worktree = tmp_path / "worktree"  # a linked worktree or a submodule: .git is a file
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere\n", encoding="utf-8")
    assert find_project(worktree / "src") == worktree.resolve()


def test_a_nested_marker_wins_over_the_repository_root(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "tether.json", {"model": "a/root"})
    write(repo / "services" / "api" / ".tether" / "tether.json", {"model": "a/api"})
    (repo / "services" / "api" / "src").mkdir()
    assert find_project(repo / "services" / "api" / "src") == (repo / "services" / "api").resolve()
    assert find_project(repo / "services") == repo.resolve()


def test_without_marker_or_git_the_start_directory_is_the_project(tmp_path: Path, home: Path) -> None:
    (tmp_path / "plain" / "deep").mkdir(parents=True)
    assert find_project(tmp_path / "plain" / "deep") == (tmp_path / "plain" / "deep").resolve()


def test_a_config_planted_in_a_world_writable_parent_does_not_apply(tmp_path: Path, home: Path) -> None:
    shared = tmp_path / "shared"  # /tmp: anyone may create /tmp/.tether
    shared.mkdir()
    shared.chmod(0o1777)
    write(shared / PROJECT_CONFIG, PLANTED)
    write(shared / "tether.json", PLANTED)
    project = shared / "x" / "proj"
    project.mkdir(parents=True)
    assert find_project(project) == project.resolve()
    assert planted_rules(project, home / "none.json") == []


def test_a_config_in_a_parent_owned_by_another_user_does_not_apply(tmp_path: Path, home: Path) -> None:
    theirs = tmp_path / "theirs"
    write(theirs / PROJECT_CONFIG, PLANTED)
    project = theirs / "proj"
    project.mkdir()
    other = os.geteuid() + 1  # every directory here is ours: walking as another user, none of the parents is
    assert find_project(project, uid=other) == project.resolve()
    assert find_project(project) == theirs.resolve()  # the same tree, walked as its owner, is one project


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_parent_chowned_to_another_user_stops_the_walk(tmp_path: Path, home: Path) -> None:
    theirs = tmp_path / "theirs"
    write(theirs / PROJECT_CONFIG, PLANTED)
    project = theirs / "proj"
    project.mkdir()
    os.chown(theirs, 65534, 65534)
    assert find_project(project) == project.resolve()
    assert planted_rules(project, home / "none.json") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_marker_owned_by_another_user_is_not_a_marker(tmp_path: Path, home: Path) -> None:
    team = tmp_path / "team"  # a group-writable directory: a teammate may create files in it
    write(team / "tether.json", PLANTED)
    os.chown(team / "tether.json", 65534, 65534)
    (team / "proj").mkdir()
    assert find_project(team / "proj") == (team / "proj").resolve()


def test_the_walk_never_passes_a_git_root(tmp_path: Path, home: Path) -> None:
    outer = tmp_path / "outer"
    write(outer / PROJECT_CONFIG, PLANTED)  # a .tether above the repository is not the repository's
    repo = outer / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "pkg").mkdir()
    assert find_project(repo / "pkg") == repo.resolve()
    assert planted_rules(repo / "pkg", home / "none.json") == []


def test_the_home_directory_is_never_found_by_walking_up(tmp_path: Path, home: Path) -> None:
    write(home / PROJECT_CONFIG, PLANTED)  # ~/.tether may hold anything
    write(home / "tether.json", PLANTED)
    (home / "src" / "proj").mkdir(parents=True)
    assert find_project(home / "src" / "proj") == (home / "src" / "proj").resolve()
    assert planted_rules(home / "src" / "proj", home / "none.json") == []
    assert find_project(home) == home.resolve()  # unless the user starts there


def test_the_users_config_directory_is_not_a_project(tmp_path: Path, home: Path) -> None:
    config_dir = home / ".config" / "tether"
    user_file = write(config_dir / "tether.json", {"permission": {"bash": {"mine *": "deny"}}})
    (config_dir / "agents").mkdir()
    assert find_project(config_dir / "agents") == (config_dir / "agents").resolve()
    # started in the config directory itself: the user file is read once, as the user's
    config = load_config(config_dir, user_file=user_file, environ={}, trusted=True)
    assert [rule.resource for rule in config.permission] == ["mine *"]
    assert config.files == (user_file,)


def test_a_symlinked_start_directory_walks_up_from_its_real_path(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    write(repo / "tether.json", {})
    (repo / "pkg").mkdir()
    (tmp_path / "link").symlink_to(repo / "pkg")
    assert find_project(tmp_path / "link") == repo.resolve()


def test_two_config_files_in_one_project_are_an_error_naming_both(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    first = write(repo / PROJECT_CONFIG, {})
    second = write(repo / "tether.jsonc", {})
    with pytest.raises(ConfigError, match="two config files") as caught:
        load_config(repo, user_file=home / "none.json", environ={})
    assert str(first) in caught.value.message and str(second) in caught.value.message
    assert project_file(repo / "missing") is None


def test_two_user_config_files_are_an_error(tmp_path: Path, home: Path) -> None:
    from tether.config import user_config_path

    config_dir = home / ".config" / "tether"
    write(config_dir / "tether.jsonc", {"model": "a/b"})
    assert user_config_path() == config_dir / "tether.jsonc"
    assert load_config(None, environ={}).get("model") == "a/b"
    write(config_dir / "tether.json", {})
    assert user_config_path() == config_dir / "tether.json"
    with pytest.raises(ConfigError, match="two config files"):
        load_config(None, environ={})


def test_an_untrusted_discovered_project_is_restricted_and_named_by_its_root(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    file = write(repo / "tether.json", {"shell": "./evil.sh", "permission": {"bash": "deny"}})
    (repo / "pkg").mkdir()
    config = load_config(repo / "pkg", user_file=home / "none.json", environ={})
    assert config.get("shell") is None
    assert [str(i) for i in config.ignored] == [
        f"ignored shell in {file.resolve()}: this project is not trusted "
        f"(to apply it, run: tether trust {repo.resolve()})"
    ]
    assert len(config.project_permission) == 1

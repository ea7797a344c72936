"""Which instruction files a run reads: AGENTS.md from the project root down to the working directory, the user's
own entries even outside the project, and what is ignored (a malformed glob, a directory, the tail of a huge file)."""

from __future__ import annotations

import json
from pathlib import Path

from tether.config import PROJECT_CONFIG, Instructions, load_config, load_instructions
from tether.location import Location


def load(
    project: Path,
    tmp_path: Path,
    *,
    project_value: object = None,
    user_value: object = None,
    directory: Path | None = None,
) -> Instructions:
    user_file = tmp_path / "user" / "tether.json"
    user_file.parent.mkdir(exist_ok=True)
    if user_value is not None:
        user_file.write_text(json.dumps(user_value), encoding="utf-8")
    if project_value is not None:
        (project / PROJECT_CONFIG).parent.mkdir(exist_ok=True)
        (project / PROJECT_CONFIG).write_text(json.dumps(project_value), encoding="utf-8")
    config = load_config(project, user_file=user_file, environ={})
    return load_instructions(Location(project), config, directory=directory, user_dir=user_file.parent)


def bodies(found: Instructions) -> list[str]:
    return [text.split("\n", 1)[1] for text in found.texts]


def test_agents_md_files_are_read_from_the_root_down_to_the_working_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "AGENTS.md").write_text("root", encoding="utf-8")
    (project / "pkg" / "AGENTS.md").write_text("pkg", encoding="utf-8")
    (project / "pkg" / "sub" / "AGENTS.md").write_text("sub", encoding="utf-8")
    assert bodies(load(project, tmp_path, directory=project / "pkg" / "sub")) == ["root", "pkg", "sub"]
    assert bodies(load(project, tmp_path)) == ["root"]


def test_the_users_own_relative_entry_may_leave_the_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "style.md").write_text("house style", encoding="utf-8")
    found = load(project, tmp_path, user_value={"instructions": ["../shared/*.md"]})
    assert bodies(found) == ["house style"]
    assert found.refused == ()


def test_a_malformed_glob_is_ignored_with_a_warning_naming_the_entry(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.md").write_text("kept", encoding="utf-8")
    found = load(project, tmp_path, project_value={"instructions": ["", "a.md"]})
    assert bodies(found) == ["kept"]
    assert len(found.refused) == 1 and found.refused[0].startswith("ignored instructions entry ''")


def test_a_directory_and_a_missing_file_named_as_instructions_are_skipped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    found = load(project, tmp_path, project_value={"instructions": ["docs", "missing.md"]})
    assert found.texts == () and found.refused == ()


def test_only_the_first_256_kib_of_a_huge_instruction_file_is_sent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("x" * (300 * 1024), encoding="utf-8")
    assert [len(body) for body in bodies(load(project, tmp_path))] == [256 * 1024]


def test_claude_md_is_read_where_a_directory_has_no_agents_md(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "AGENTS.md").write_text("root agents", encoding="utf-8")
    (project / "CLAUDE.md").write_text("root claude", encoding="utf-8")  # AGENTS.md wins: never both
    (project / "pkg" / "CLAUDE.md").write_text("pkg claude", encoding="utf-8")
    (project / "pkg" / "sub" / "CLAUDE.md").mkdir()  # not a file: nothing
    found = load(project, tmp_path, directory=project / "pkg" / "sub")
    assert bodies(found) == ["root agents", "pkg claude"]


def test_a_symlinked_claude_md_leading_outside_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret").write_text("SECRET", encoding="utf-8")
    (project / "CLAUDE.md").symlink_to(tmp_path / "secret")
    found = load(project, tmp_path)
    assert bodies(found) == []
    assert "CLAUDE.md" in found.refused[0]


def test_a_run_in_a_subdirectory_reads_the_instructions_of_the_project_root(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "pkg").mkdir()
    (project / "AGENTS.md").write_text("root", encoding="utf-8")
    (project / "docs").mkdir()
    (project / "docs" / "style.md").write_text("style", encoding="utf-8")
    (project / "pkg" / "AGENTS.md").write_text("pkg", encoding="utf-8")
    (project / "tether.json").write_text('{"instructions": ["docs/*.md"]}', encoding="utf-8")
    user_file = tmp_path / "user" / "tether.json"
    config = load_config(project / "pkg", user_file=user_file, environ={})
    assert config.root == project.resolve()
    # the session's Location is the working directory; the project above it brings its files
    found = load_instructions(Location(project / "pkg"), config, user_dir=user_file.parent)
    assert bodies(found) == ["root", "pkg", "style"]
    assert found.refused == ()
    # a Location outside the config's project reads only its own files
    other = tmp_path / "other"
    other.mkdir()
    (other / "AGENTS.md").write_text("other", encoding="utf-8")
    assert bodies(load_instructions(Location(other), config, user_dir=user_file.parent)) == ["other"]


def test_the_model_cannot_plant_a_claude_md_without_a_rule_naming_it(tmp_path: Path) -> None:
    # CLAUDE.md is an instruction file now: writing one is protected as AGENTS.md is (asked whatever edit: * says)
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    location = Location(project)
    for name in ("pkg/CLAUDE.md", "CLAUDE.md", "pkg/claude.md", "pkg/tether.json", "pkg/tether.jsonc"):
        assert location.resolve(name).protected is not None, name
    assert location.resolve("pkg/NOTES.md").protected is None

"""Instruction files resolved through the Location: what the project brings never reads a file outside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.config import PROJECT_CONFIG, Config, Instructions, load_config, load_instructions
from tether.location import Location

SECRET = "CANARY-SECRET-do-not-send"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET, encoding="utf-8")
    (home / "notes.md").write_text("my own notes", encoding="utf-8")
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _load(
    project: Path, tmp_path: Path, *, project_value: object = None, user_value: object = None, **kw: bool
) -> Instructions:
    user_file = tmp_path / "user" / "tether.json"
    user_file.parent.mkdir(exist_ok=True)
    if user_value is not None:
        user_file.write_text(json.dumps(user_value), encoding="utf-8")
    if project_value is not None:
        (project / PROJECT_CONFIG).parent.mkdir(exist_ok=True)
        (project / PROJECT_CONFIG).write_text(json.dumps(project_value), encoding="utf-8")
    config: Config = load_config(project, user_file=user_file, environ={}, **kw)
    return load_instructions(Location(project), config, user_dir=user_file.parent)


def test_a_symlinked_agents_md_leading_outside_is_refused(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    (project / "AGENTS.md").symlink_to(outside / ".ssh" / "id_rsa")
    found = _load(project, tmp_path)
    assert not any(SECRET in t for t in found.texts)
    assert len(found.refused) == 1
    assert "AGENTS.md" in found.refused[0] and "outside the project" in found.refused[0]
    assert f"tether trust {project.resolve()}" in found.refused[0]


def test_project_entries_outside_the_project_are_not_read(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "style.md").symlink_to(outside / ".ssh" / "id_rsa")
    (project / "docs" / "ok.md").write_text("use tabs", encoding="utf-8")
    found = _load(
        project,
        tmp_path,
        project_value={
            "instructions": [str(outside / ".ssh" / "id_rsa"), "../home/.ssh/id_rsa", "docs/*.md"]
        },
    )
    assert not any(SECRET in t for t in found.texts)
    assert [t.splitlines()[1] for t in found.texts] == ["use tabs"]
    assert len(found.refused) == 1 and "style.md" in found.refused[0]


def test_the_users_own_entries_may_name_files_outside(project: Path, outside: Path, tmp_path: Path) -> None:
    found = _load(project, tmp_path, user_value={"instructions": [str(outside / "notes.md")]})
    assert [t.splitlines()[1] for t in found.texts] == ["my own notes"]
    assert found.refused == ()


def test_a_users_relative_glob_does_not_follow_a_planted_symlink(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    (project / "STYLE.md").symlink_to(outside / ".ssh" / "id_rsa")
    found = _load(project, tmp_path, user_value={"instructions": ["STYLE.md"]})
    assert not any(SECRET in t for t in found.texts)
    assert len(found.refused) == 1


def test_a_trusted_project_applies_its_instructions_in_full(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    (project / "AGENTS.md").symlink_to(outside / "notes.md")
    found = _load(
        project, tmp_path, project_value={"instructions": [str(outside / ".ssh" / "id_rsa")]}, trusted=True
    )
    assert [t.splitlines()[1] for t in found.texts] == ["my own notes", SECRET]
    assert found.refused == ()


def test_agents_md_inside_and_user_agents_md_are_read_in_order(project: Path, tmp_path: Path) -> None:
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "AGENTS.md").write_text("user rules", encoding="utf-8")
    (project / "AGENTS.md").write_text("project rules", encoding="utf-8")
    found = _load(project, tmp_path)
    assert [t.splitlines()[1] for t in found.texts] == ["user rules", "project rules"]
    assert found.texts[1].startswith(f"Instructions from: {project.resolve() / 'AGENTS.md'}")


def test_a_fifo_named_agents_md_is_skipped_without_hanging(project: Path, tmp_path: Path) -> None:
    import os

    os.mkfifo(project / "AGENTS.md")
    assert _load(project, tmp_path).texts == ()

"""Instruction files the project names pass the agent's ``read`` rules, and a glob cannot fill the prompt.

The attack: a repository commits ``.env`` (``AWS_SECRET=hunter2``) and names it as an instruction file
(``"instructions": [".env"]``), or commits ``sub/AGENTS.md -> ../.env`` (a symlink that stays inside the project).
The canary is the secret: it must not reach the instruction texts, the prompt ``--show-prompt`` prints, or the model,
while ``read .env`` is denied (the user's rule) or asked (the built-in ``*.env`` default).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tether import Runtime
from tether.config import Config, Instructions, load_config, load_instructions
from tether.config._instructions import MAX_MATCHES, MAX_TOTAL_BYTES
from tether.location import Location

from ..cli.conftest import Cli

SECRET = "AWS_SECRET=hunter2"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "config"))
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".env").write_text(SECRET + "\n", encoding="utf-8")
    return root


def _config(
    root: Path, tmp_path: Path, *, project: object = None, user: object = None, trusted: bool = False
) -> Config:
    user_file = tmp_path / "config" / "tether.json"
    user_file.parent.mkdir(exist_ok=True)
    if user is not None:
        user_file.write_text(json.dumps(user), encoding="utf-8")
    if project is not None:
        (root / "tether.json").write_text(json.dumps(project), encoding="utf-8")
    return load_config(root, user_file=user_file, environ={}, trusted=trusted)


def _load(root: Path, tmp_path: Path, **kw: Any) -> Instructions:
    config = _config(root, tmp_path, **kw)
    return load_instructions(
        Location(root), config, user_dir=tmp_path / "config", readable=lambda resource: resource != ".env"
    )


@pytest.mark.parametrize("trusted", [False, True])
def test_a_project_entry_naming_a_file_the_read_rules_refuse_is_not_sent(
    repo: Path, tmp_path: Path, trusted: bool
) -> None:
    (repo / "CONTRIBUTING.md").write_text("Run the tests.\n", encoding="utf-8")
    found = _load(repo, tmp_path, project={"instructions": [".env", "CONTRIBUTING.md"]}, trusted=trusted)
    assert not any(SECRET in text for text in found.texts)
    assert [text.split("\n", 1)[1] for text in found.texts] == ["Run the tests.\n"]  # the control
    assert found.refused == (
        f"refused instruction file {repo.resolve() / '.env'}: the read rules do not allow reading '.env' without "
        "asking (see: tether permissions --explain read .env)",
    )


def test_an_agents_md_symlink_to_another_file_name_passes_the_read_rules(repo: Path, tmp_path: Path) -> None:
    (repo / "sub" / "AGENTS.md").symlink_to("../.env")
    config = _config(repo, tmp_path)
    found = load_instructions(Location(repo), config, directory=repo / "sub", user_dir=tmp_path / "config")
    assert not any(SECRET in text for text in found.texts)  # the built-in default: *.env asks
    assert len(found.refused) == 1 and "'.env' without asking" in found.refused[0]
    (repo / "sub" / "AGENTS.md").unlink()
    (repo / "STYLE.md").write_text("Use tabs.\n", encoding="utf-8")
    (repo / "sub" / "AGENTS.md").symlink_to("../STYLE.md")  # a shared style file: read, as before
    found = load_instructions(Location(repo), config, directory=repo / "sub", user_dir=tmp_path / "config")
    assert [text.split("\n", 1)[1] for text in found.texts] == ["Use tabs.\n"]
    assert found.refused == ()


def test_the_users_own_entry_is_the_users_choice(repo: Path, tmp_path: Path) -> None:
    found = _load(repo, tmp_path, user={"instructions": [".env"]})
    assert [text.split("\n", 1)[1] for text in found.texts] == [SECRET + "\n"]


def test_a_glob_brings_at_most_the_cap_and_says_so(repo: Path, tmp_path: Path) -> None:
    docs = repo / "docs"
    docs.mkdir()
    for n in range(MAX_MATCHES + 10):
        (docs / f"{n:03}.md").write_text(f"doc {n}\n", encoding="utf-8")
    found = _load(repo, tmp_path, project={"instructions": ["docs/*.md"]})
    assert len(found.texts) == MAX_MATCHES
    assert found.refused == (
        f"instructions entry 'docs/*.md' in {repo.resolve() / 'tether.json'} matches too many files; only the "
        f"first {MAX_MATCHES} are read (at most {MAX_MATCHES} per entry: name the files you mean)",
    )
    few = _load(repo, tmp_path, project={"instructions": ["docs/00*.md"]})
    assert len(few.texts) == 10 and few.refused == ()  # the control: under the cap, no line


def test_the_instruction_texts_together_stay_under_the_total_and_say_what_was_left_out(
    repo: Path, tmp_path: Path
) -> None:
    third = MAX_TOTAL_BYTES // 3 + 1
    for name in ("a", "b", "c", "d"):
        (repo / f"{name}.md").write_text(name * third, encoding="utf-8")
    found = _load(repo, tmp_path, project={"instructions": ["a.md", "b.md", "c.md", "d.md"]})
    bodies = [text.split("\n", 1)[1] for text in found.texts]
    assert sum(len(body) for body in bodies) == MAX_TOTAL_BYTES
    assert [body[0] for body in bodies] == ["a", "b", "c"]
    assert found.refused == (
        f"instruction files bring at most {MAX_TOTAL_BYTES // 1024} KiB together: left out the end of "
        f"{repo.resolve() / 'c.md'} and all of {repo.resolve() / 'd.md'}",
    )


def test_the_runtimes_default_system_prompt_passes_the_read_rules(repo: Path, tmp_path: Path) -> None:
    (repo / "sub" / "AGENTS.md").symlink_to("../.env")
    (repo / "AGENTS.md").write_text("Root rules.\n", encoding="utf-8")
    config = _config(repo, tmp_path)

    async def main() -> tuple[str, ...]:
        async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
            location = await rt.location(repo / "sub")
            assert rt.readable()("notes.md") and not rt.readable()(".env")
            return await rt.sessions.service.system_prompt(location, agent="build", model="openai/gpt-5")

    texts = anyio.run(main)
    assert any("Root rules." in text for text in texts)
    assert not any(SECRET in text for text in texts)


def test_the_default_system_prompt_uses_the_read_rules_of_the_turns_agent(repo: Path, tmp_path: Path) -> None:
    """A file the build agent may read but the plan agent may not reaches build's prompt only."""
    (repo / "notes.md").write_text("Team notes.\n", encoding="utf-8")
    config = _config(
        repo,
        tmp_path,
        project={"instructions": ["notes.md"]},
        user={"agent": {"plan": {"permission": {"read": {"notes.md": "deny"}}}}},
    )

    async def main() -> dict[str, tuple[str, ...]]:
        async with Runtime(data_dir=tmp_path / "data", config=config) as rt:
            location = await rt.location(repo)
            return {
                agent: await rt.sessions.service.system_prompt(location, agent=agent, model="openai/gpt-5")
                for agent in ("build", "plan")
            }

    texts = anyio.run(main)
    assert any("Team notes." in text for text in texts["build"])
    assert not any("Team notes." in text for text in texts["plan"])


def test_show_prompt_sends_no_secret_the_read_rules_deny(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tether.json").write_text(
        json.dumps({"permission": {"read": {"*.env": "deny", ".env": "deny"}}}), encoding="utf-8"
    )
    (repo / "tether.json").write_text(json.dumps({"instructions": [".env", "README.md"]}), encoding="utf-8")
    (repo / "README.md").write_text("Read me.\n", encoding="utf-8")
    (repo / "sub" / "AGENTS.md").symlink_to("../.env")
    shown = Cli(tmp_path).run("run", "--show-prompt", "--model", "openai/gpt-5", "--dir", str(repo / "sub"))
    assert shown.code == 0, shown.stderr
    assert "hunter2" not in shown.stdout + shown.stderr
    assert f"Instructions from: {repo.resolve() / 'README.md'}\nRead me." in shown.stdout
    assert f"warning: refused instruction file {repo / 'sub' / 'AGENTS.md'}: the read rules" in shown.stderr
    assert f"warning: refused instruction file {repo.resolve() / '.env'}: the read rules" in shown.stderr
    explained = Cli(tmp_path).run("permissions", "--explain", "read", ".env", "--dir", str(repo))
    assert "deny" in explained.stdout, explained.stderr  # the same rule the read tool meets

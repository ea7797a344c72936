"""``tether run --show-prompt`` (a real subprocess): the exact system texts of a run, and a run that sends them."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tether.prompts import base_prompt

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


@pytest.fixture
def repo(project: Path) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "feature/prompt"], cwd=project, check=True)
    subprocess.run([*GIT, "add", "notes.txt"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "notes"], cwd=project, check=True)
    (project / "notes.txt").write_text("changed\n", encoding="utf-8")
    (project / "AGENTS.md").write_text("Always answer in French.\n", encoding="utf-8")
    return project


def _texts(stdout: str) -> list[str]:
    """The texts of ``--show-prompt`` output, split at their rules."""
    parts = stdout.split("── system text ")[1:]
    return [part.split(" ──\n", 1)[1].removesuffix("\n").removesuffix("\n") for part in parts]


def _sessions(cli: Any) -> int:
    with sqlite3.connect(cli.data_dir / "tether.db") as db:
        return db.execute("SELECT count(*) FROM sessions").fetchone()[0]


def test_show_prompt_prints_role_environment_then_agents_md(cli: Any, repo: Path) -> None:
    # the model is only named (no key needed, no call made) and no prompt is needed
    cli.env.pop("OPENAI_API_KEY", None)
    # --trust: git status runs only in a trusted project (tests/cli/test_prompt_git_attack.py)
    result = cli.run("run", "--show-prompt", "--trust", "--model", "openai/gpt-5", "--dir", str(repo))
    assert result.code == 0, result.output
    base, env, agents_md = _texts(result.stdout)
    assert base == base_prompt("build", "openai/gpt-5")
    assert "── system text 1 of 3 ──" in result.stdout
    assert f"Project root: {repo.resolve()}" in env
    assert "Git branch: feature/prompt" in env
    assert "Git status: 1 modified, 1 untracked" in env
    assert "Model: openai/gpt-5" in env
    assert agents_md == f"Instructions from: {repo.resolve() / 'AGENTS.md'}\nAlways answer in French."
    assert _sessions(cli) == 0


def test_a_scripted_run_receives_the_shown_texts(cli: Any, repo: Path) -> None:
    model = cli.script([{"echo": "system"}])
    shown = cli.run("run", "x", "--show-prompt", "--model", model, "--dir", str(repo))
    assert shown.code == 0, shown.output
    texts = _texts(shown.stdout)
    assert texts[0] == base_prompt("build", "scripted/script.json")
    run = cli.run("run", "hello", "--model", model, "--dir", str(repo))
    assert run.code == 0, run.output
    # the model echoes the system texts of its request: every line the flag showed is in what it received
    for line in "\n".join(texts).splitlines():
        assert line.strip() in run.stdout, line


def test_the_agent_and_a_configured_prompt_choose_the_base_text(cli: Any, repo: Path) -> None:
    model = cli.script([])
    plan = cli.run("run", "x", "--show-prompt", "-m", model, "--agent", "plan", "--dir", str(repo))
    assert _texts(plan.stdout)[0] == base_prompt("plan", "scripted/script.json")
    cli.configure(repo, {"agent": {"build": {"prompt": "You review code. Be terse."}}})
    mine = cli.run("run", "x", "--show-prompt", "-m", model, "--dir", str(repo))
    assert _texts(mine.stdout)[0] == "You review code. Be terse."
    unknown = cli.run("run", "x", "--show-prompt", "-m", model, "--agent", "nobody", "--dir", str(repo))
    assert unknown.code == 2
    assert 'Agent not found: "nobody"' in unknown.stderr


def test_continue_and_session_show_the_stored_sessions_agent(cli: Any, repo: Path) -> None:
    model = cli.script([{"text": "planned"}])
    first = cli.run("run", "plan it", "-m", model, "--agent", "plan", "--dir", str(repo))
    assert first.code == 0, first.output
    session_id = first.stderr.split("session ", 1)[1].split()[0]
    plan = base_prompt("plan", "scripted/script.json")
    again = cli.run("run", "x", "--show-prompt", "-m", model, "-c", "--dir", str(repo))
    assert _texts(again.stdout)[0] == plan, again.output
    named = cli.run("run", "x", "--show-prompt", "-m", model, "--session", session_id, "--dir", str(repo))
    assert _texts(named.stdout)[0] == plan, named.output
    assert _sessions(cli) == 1


def test_hostile_instruction_text_is_shown_not_executed_by_the_terminal(cli: Any, repo: Path) -> None:
    (repo / "AGENTS.md").write_text("\x1b[2J\x1b]0;pwned\x07ok\n", encoding="utf-8")
    result = cli.run("run", "x", "--show-prompt", "-m", cli.script([]), "--dir", str(repo))
    assert result.code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "\\x1b[2J\\x1b]0;pwned\\x07ok" in result.stdout


def test_show_prompt_without_a_model_says_how_to_choose_one(cli: Any, repo: Path) -> None:
    result = cli.run("run", "x", "--show-prompt", "--dir", str(repo))
    assert result.code == 2
    assert "no model chosen" in result.stderr

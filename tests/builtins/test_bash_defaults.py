"""The built-in agents' bash defaults, decided on the tool's own analysis: read-only commands run, the rest asks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.builtins._shell_parse import analyze
from tether.config import load_config
from tether.permissions import Agent, builtin_agents, evaluate_request


def effect(agent: Agent, command: str) -> str:
    analysis = analyze(command, cwd="/p", home="/h")
    return evaluate_request("bash", analysis.resources, agent.rulesets).effect


@pytest.fixture
def build(tmp_path: Path) -> Agent:
    return builtin_agents(tmp_path / "data", tmp_path / "tmp")["build"]


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "pwd",
        "git status",
        "git diff HEAD~1 -- src",
        "git log --oneline -5",
        "git show HEAD:README.md",
        "git branch",
        "cat README.md | grep -n TODO | wc -l",
        "head -n 5 a.txt; tail b.txt",
        "rg -n 'def main' src",
        "find . -name '*.py' -type f",
        "echo hello",
        "ls 2>/dev/null",
        "cat < notes.txt",
        "seq 1 5000",
        "echo started; sleep 60",
    ],
)
def test_read_only_commands_run_without_asking(build: Agent, command: str) -> None:
    assert effect(build, command) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "\\ls",  # a spelling: every form must be allowed
        "sudo ls",
        "env ls",
        "echo x > out.txt",  # the redirection is a resource of its own
        "ls; > FILE",
        "find . -delete",
        "find . -name x -exec rm {} \\;",
        "find . -fprint out.txt",
        "git diff --output=patch.txt",
        "git log --output=log.txt",
        "git branch -D main",
        "git branch new-branch",
        "git push origin main",
        "rg --pre cat x",
        "echo $((x))",  # uncertain
        "python3 -c 'print(1)'",
        "npm test",
    ],
)
def test_every_other_command_asks(build: Agent, command: str) -> None:
    assert effect(build, command) == "ask"


def test_one_line_of_config_restores_allow_all(tmp_path: Path) -> None:
    user_file = tmp_path / "user.json"
    user_file.write_text(json.dumps({"permission": {"bash": "allow"}}))
    config = load_config(None, user_file=user_file, environ={})
    agent = builtin_agents(tmp_path / "data", tmp_path / "tmp", config)["build"]
    for command in ("rm -rf build", "echo $((x))", "\\ls > out", "cat <<EOF; ls\nx\nEOF"):
        assert effect(agent, command) == "allow", command


def test_the_plan_agent_cannot_write_through_the_shell(tmp_path: Path) -> None:
    plan = builtin_agents(tmp_path / "data", tmp_path / "tmp")["plan"]
    analysis = analyze("echo x > f", cwd="/p", home="/h")
    assert [p.write for p in analysis.paths] == [True]
    assert evaluate_request("edit", ["f"], plan.rulesets).effect == "deny"

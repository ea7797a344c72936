"""``tether permissions --explain bash`` runs the bash tool's own analysis: what it says is what the tool asks."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_explain_bash_shows_the_normalized_form_that_a_deny_matches(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"bash": {"*": "allow", "rm *": "deny"}}})
    cli.env["TETHER_TRUST"] = "1"  # its allow applies: the deny decides, not the built-in ask
    result = cli.run("permissions", "--explain", "bash", "\\rm -rf build", "--dir", str(project))
    assert result.code == 0, result.output
    assert "runs as: rm -rf build" in result.stdout
    assert 'rm -rf build: deny by bash "rm *" (config)' in result.stdout
    assert "The bash tool is blocked" in result.stdout
    assert 'saves: bash "\\rm *", bash "rm *"' in result.stdout


def test_explain_bash_shows_paths_writes_and_uncertain_text(cli: Any, project: Path) -> None:
    result = cli.run("permissions", "--explain", "bash", "ls > out.txt; echo $((x))", "--dir", str(project))
    assert result.code == 0, result.output
    assert f"path: {project.resolve()}/out.txt (write, inside)" in result.stdout
    assert "redirect: > out.txt" in result.stdout
    assert "uncertain: arithmetic on a variable" in result.stdout
    assert "(uncertain) ls > out.txt; echo $((x)): ask" in result.stdout
    assert "The bash tool asks first" in result.stdout


def test_explain_bash_says_a_read_only_command_runs_by_default(cli: Any, project: Path) -> None:
    # the read-only list decides when the sandbox does not let every command run (auto_allow off, or no bubblewrap)
    config = cli.tmp / "config" / "tether.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('{"sandbox": {"auto_allow": false}}', encoding="utf-8")
    result = cli.run("permissions", "--explain", "bash", "git status", "--dir", str(project))
    assert 'git status: allow by bash "git status *" (agent)' in result.stdout, result.output
    assert "The bash tool runs without asking" in result.stdout


def test_the_prompt_shows_an_uncertain_command_as_such(cli: Any, project: Path) -> None:
    call = {"name": "bash", "arguments": {"command": "echo $((x)) > out.txt"}}
    model = cli.script([{"tool_calls": [call]}, {"text": "Finished."}])
    term = cli.pty("run", "go", "--model", model, "--dir", str(project))
    # what the text touches is not known either: external_directory is asked for it first, with the same reasons
    term.expect(r"choice \[o/(?:a|always)/r/f\]")
    first = term.text
    assert "permission asked: external_directory" in first, first
    assert "arithmetic on a variable evaluates its value" in first, first
    term.send("o\n")
    term.expect(r"permission asked: bash(?s:.*)choice \[o/(?:a|always)/r/f\]")
    text = term.text[len(first) :]
    assert "(uncertain) echo $((x)) > out.txt" in text
    assert "uncertain: arithmetic on a variable evaluates its value" in text
    term.send("r\n")
    term.wait()
    assert not (project / "out.txt").exists()

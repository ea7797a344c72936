"""``--explain bash`` is honest about program text: it says the command's paths are not known and that an
``external_directory`` deny blocks it, as the bash tool does (both use ``plan_command``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RUN_BUT_STAY_INSIDE = {"permission": {"bash": {"*": "allow"}, "external_directory": "deny"}}


def test_explain_bash_says_program_text_is_blocked_by_an_external_directory_deny(
    cli: Any, project: Path
) -> None:
    cli.configure(project, RUN_BUT_STAY_INSIDE)
    cli.env["TETHER_TRUST"] = "1"  # the project's bash allow applies: the external_directory deny decides
    command = "python3 -c \"open('/elsewhere/t', 'w')\""
    result = cli.run("permissions", "--explain", "bash", command, "--dir", str(project))
    assert result.code == 0, result.output
    assert "unknown path: python3 runs program text given on its command line" in result.stdout
    assert "paths not known statically: external_directory: deny" in result.stdout
    assert "The bash tool is blocked" in result.stdout
    make = cli.run("permissions", "--explain", "bash", "make -n", "--dir", str(project))
    assert "unknown path: make runs the recipes of a makefile, which are not analysed" in make.stdout
    assert "The bash tool is blocked" in make.stdout


def test_explain_bash_lets_what_only_prints_run(cli: Any, project: Path) -> None:
    cli.configure(project, RUN_BUT_STAY_INSIDE)
    cli.env["TETHER_TRUST"] = "1"
    for command in ("python3 --version", "node --version", "awk '{print $1}' notes.txt"):
        result = cli.run("permissions", "--explain", "bash", command, "--dir", str(project))
        assert "The bash tool runs without asking" in result.stdout, result.output
        assert "unknown path" not in result.stdout


def test_explain_bash_says_what_always_saves_for_text_whose_paths_are_unknown(
    cli: Any, project: Path
) -> None:
    exact = cli.run("permissions", "--explain", "bash", "echo x > $OUT", "--dir", str(project))
    assert 'the paths request saves: external_directory "(uncertain) echo x > $OUT"' in exact.stdout, (
        exact.output
    )
    glob = cli.run("permissions", "--explain", "bash", "cat src/*.py", "--dir", str(project))
    assert "the paths request saves: nothing (acts as once: the text holds * or ?)" in glob.stdout, (
        glob.output
    )

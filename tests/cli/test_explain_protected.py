"""Protected paths in the CLI: ``--explain`` decides them as the file tools ask them, and ``--yes`` does not allow them."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def test_explain_shows_that_a_protected_path_asks_although_edits_are_allowed(cli: Any, project: Path) -> None:
    ordinary = cli.run("permissions", "--explain", "edit", "notes.txt", "--dir", str(project))
    assert "edit: allow" in ordinary.stdout, ordinary.output
    protected = cli.run("permissions", "--explain", "edit", ".git/config", "--dir", str(project))
    assert protected.code == 0, protected.output
    assert "edit: ask" in protected.stdout
    assert "protected path .git/config" in protected.stdout


def test_explain_shows_a_deny_of_a_protected_path(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": {".git/hooks/*": "deny"}}})
    denied = cli.run("permissions", "--explain", "edit", ".git/hooks/pre-commit", "--dir", str(project))
    assert "edit: deny" in denied.stdout and ".git/hooks/*" in denied.stdout, denied.output


def test_explain_knows_the_instruction_files_the_config_names(cli: Any, project: Path) -> None:
    cli.configure(project, {"instructions": ["docs/rules.md"]})
    result = cli.run("permissions", "--explain", "edit", "docs/rules.md", "--dir", str(project))
    assert "edit: ask" in result.stdout and "protected path docs/rules.md" in result.stdout, result.output


def test_yes_allows_ordinary_asks_but_not_a_write_to_a_protected_path(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    before = (project / ".tether" / "tether.json").read_text()
    widened = '{"path": ".tether/tether.json", "content": "{\\"permission\\": \\"allow\\"}"}'
    result = cli.run("tool", "call", "write", widened, "--yes", "--dir", str(project))
    assert result.code != 0
    assert "protected path, not allowed by --yes" in result.stderr, result.output
    assert (project / ".tether" / "tether.json").read_text() == before
    ordinary = cli.run(
        "tool", "call", "write", '{"path": "out.txt", "content": "x"}', "--yes", "--dir", str(project)
    )
    assert ordinary.code == 0, ordinary.output
    assert (project / "out.txt").read_text() == "x"

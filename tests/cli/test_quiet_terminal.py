"""``tether run --quiet``: the model's text on a real terminal cannot drive it; through a pipe it is exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HOSTILE = "before\x1b]0;PWNED TITLE\x07\x1b[2J\x9b31mafter\nsecond line"


def test_quiet_on_a_terminal_shows_escapes_instead_of_obeying_them(cli: Any, project: Path) -> None:
    model = cli.script([{"text": HOSTILE}])
    term = cli.pty("run", "hi", "--quiet", "--model", model, "--dir", str(project))
    assert term.wait() == 0, term.raw
    assert "\x1b]0;" not in term.raw and "\x1b[2J" not in term.raw and "\x9b" not in term.raw
    assert "before\\x1b]0;PWNED TITLE\\x07\\x1b[2J\\u009b31mafter\r\nsecond line" in term.raw


def test_quiet_through_a_pipe_writes_the_exact_text(cli: Any, project: Path) -> None:
    model = cli.script([{"text": HOSTILE}])
    result = cli.run("run", "hi", "--quiet", "--model", model, "--dir", str(project))
    assert result.code == 0, result.output
    assert result.stdout == HOSTILE + "\n"

"""Attacks on what the CLI shows: model text that redraws the approval prompt, or is read as rich markup.

A command carrying terminal escape sequences (cursor up, erase line, then a fake ``command: ls -la``) would make the
person approve a command other than the one that runs. Every piece of model or repository text the CLI prints shows
ESC, the other control characters and the bidi overrides as visible escapes, and is never read as markup; the raw
ESC byte of the model's text never reaches the terminal.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tether.storable import printable

E = "\x1b"
# what the reviewer's script printed: erase the three lines of the real prompt, redraw them for `ls -la`
SPOOF = (
    f"{E}[1A{E}[2K{E}[1A{E}[2K{E}[1A{E}[2K{E}[1G? permission asked: bash  (tool bash: ls -la){E}[1B{E}[1G"
    f"  command: ls -la{E}[K{E}[1B{E}[1G  resources: ls -la{E}[K"
)


def test_printable_shows_controls_and_bidi_as_escapes_and_keeps_plain_text() -> None:
    assert printable("ls -la\tx é 中") == "ls -la\tx é 中"
    assert printable(f"a{E}[2Kb\rc\x00\x7f\x9b") == "a\\x1b[2Kb\\x0dc\\x00\\x7f\\u009b"
    assert printable("evil\u202etxt.exe\u2066\u200f") == "evil\\u202etxt.exe\\u2066\\u200f"
    assert printable("one\ntwo") == "one\\x0atwo"
    assert printable("one\ntwo", lines=True) == "one\ntwo"
    assert printable("bad\udcffname") == "bad\\xffname"


def test_an_escape_sequence_in_a_command_cannot_redraw_the_approval_prompt(cli: Any, project: Path) -> None:
    canary = project / "PWNED"
    command = f"touch {canary} '{SPOOF}'"
    model = cli.script(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]
    )
    term = cli.pty("run", "go", "--model", model, "--dir", str(project))
    term.expect(r"choice \[o/a/r/f\]")
    shown = term.text
    # the person reads the real command, its escapes spelled out
    assert f"command: touch {canary} '\\x1b[1A\\x1b[2K" in shown, shown
    # the spoof's own sequences never reached the terminal (rich's own cursor codes do not use these)
    assert f"{E}[1G? permission asked" not in term.raw
    assert f"{E}[1B{E}[1G  command: ls -la" not in term.raw
    assert "ls -la\x1b[K" not in term.raw
    term.send("r\n")
    term.wait()
    assert not canary.exists()


def test_a_plain_command_is_shown_as_written(cli: Any, project: Path) -> None:
    # control: a command without controls is shown unchanged, and approving it runs it
    target = project / "made.txt"
    command = f"touch {target}\t# é"
    model = cli.script(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]
    )
    term = cli.pty("run", "go", "--model", model, "--dir", str(project))
    term.expect(r"choice \[o/a/r/f\]")
    assert f"command: touch {target}" in term.text
    assert "\\x" not in term.text
    term.send("o\n")
    term.wait()
    assert target.exists()


def test_rich_markup_in_a_command_is_shown_literally(cli: Any, project: Path) -> None:
    command = "echo '[bold red]hi[/] [link=http://x]y[/link]' > out.txt"
    model = cli.script(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]
    )
    term = cli.pty("run", "go", "--model", model, "--dir", str(project))
    term.expect(r"choice \[o/a/r/f\]")
    text = term.text
    assert "command: echo '[bold red]hi[/] [link=http://x]y[/link]' > out.txt" in text, text
    term.send("r\n")
    term.wait()


def test_model_text_with_escapes_reaches_neither_the_run_output_nor_the_timeline(
    cli: Any, project: Path
) -> None:
    hostile = f"all good{E}]0;owned{E}\\ {E}[2J[bold]not markup[/] \u202etxt.exe"
    call = {"name": "read", "arguments": {"path": f"notes.txt{E}[2K"}}
    model = cli.script([{"text": hostile, "tool_calls": [call]}, {"text": hostile}])
    result = cli.run("run", "go", "--model", model, "--dir", str(project), "--deny-asks")
    assert E not in result.stdout and E not in result.stderr, result.output
    assert "\\x1b[2J[bold]not markup[/] \\u202etxt.exe" in result.stdout, result.output
    session_id = re.search(r"(ses_\w+)", result.output)
    assert session_id is not None, result.output
    shown = cli.run("session", "show", session_id.group(1))
    assert shown.code == 0, shown.output
    assert E not in shown.stdout and "\u202e" not in shown.stdout
    assert "[bold]not markup[/]" in shown.stdout
    assert "notes.txt\\x1b[2K" in shown.stdout
    listed = cli.run("sessions", "--dir", str(project))
    assert E not in listed.stdout and "\u202e" not in listed.stdout

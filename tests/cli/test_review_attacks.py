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

from hypothesis import given
from hypothesis import strategies as st

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


_FORBIDDEN = {
    *map(chr, range(0x20)),
    *map(chr, range(0x7F, 0xA0)),
    *"\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
} - {"\t"}


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_printable_output_holds_no_control_bidi_or_surrogate(text: str) -> None:
    shown = printable(text)
    assert not _FORBIDDEN & set(shown)
    shown.encode("utf-8")  # no lone surrogate left
    lines = printable(text, lines=True)
    assert not (_FORBIDDEN - {"\n"}) & set(lines)
    assert lines.count("\n") == text.count("\n")


def test_an_escape_sequence_in_a_command_cannot_redraw_the_approval_prompt(cli: Any, project: Path) -> None:
    canary = project / "PWNED"
    command = f"touch {canary} '{SPOOF}'"
    # asked even when the sandbox would let it run
    cli.configure(project, {"permission": {"bash": {"*": "ask"}}})
    model = cli.script(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]
    )
    term = cli.pty("run", "go", "--model", model, "--dir", str(project))
    term.expect(r"choice \[o/(?:a|always)/r/f\]")
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
    cli.configure(project, {"permission": {"bash": {"*": "ask"}}})
    model = cli.script(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "done"}]
    )
    term = cli.pty("run", "go", "--model", model, "--dir", str(project))
    term.expect(r"choice \[o/(?:a|always)/r/f\]")
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
    term.expect(r"choice \[o/(?:a|always)/r/f\]")
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


def test_the_data_directory_named_through_a_symlink_still_asks(
    cli: Any, project: Path, tmp_path: Path
) -> None:
    # the data directory lies in the temp directory (readable without asking, `<tmp>/*`), named through a symlink
    real = tmp_path / "data-real"
    real.mkdir()
    link = tmp_path / "datalink"
    link.symlink_to(real, target_is_directory=True)
    cli.env["TETHER_DATA_DIR"] = str(link)
    other = tmp_path / "other.txt"
    other.write_text("ordinary\ntemp\nfile\n", encoding="utf-8")
    calls = [
        {"name": "bash", "arguments": {"command": f"cat {real}/tether.db"}},
        {"name": "list", "arguments": {"path": str(real)}},
        {"name": "read", "arguments": {"path": f"{link}/tether.db"}},
        {"name": "read", "arguments": {"path": str(other)}},
    ]
    model = cli.script([{"tool_calls": calls}, {"text": "done"}])
    result = cli.run("run", "go", "--model", model, "--dir", str(project), "--deny-asks")
    out = result.output
    assert f"rejected (--deny-asks): external_directory {real}/*" in out or (
        f"rejected (--deny-asks): external_directory {real}" in out
    ), out
    assert out.count("permission asked and rejected") == 3, out
    assert "SQLite format" not in out
    # control: the rest of the temp directory reads without asking. The tool line's title (the path) is cut to the
    # terminal's width, so the line is known by its outcome: the only read that can succeed is other.txt's 3 lines
    assert re.search(r"^✓ read /.*lines 1-3 of 3$", out, re.MULTILINE), out


def test_the_data_directory_and_the_store_are_private_to_the_user(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "done"}])
    assert not cli.data_dir.exists()
    result = cli.run("run", "go", "--model", model, "--dir", str(project))
    assert result.code == 0, result.output
    assert (cli.data_dir.stat().st_mode & 0o777) == 0o700
    store = cli.data_dir / "tether.db"
    assert (store.stat().st_mode & 0o777) == 0o600
    for name in ("tether.db-wal", "tether.db-shm"):
        path = cli.data_dir / name
        if path.exists():
            assert (path.stat().st_mode & 0o777) == 0o600, name
    # a store left readable by an older tether is made private on the next open
    store.chmod(0o644)
    assert cli.run("sessions", "--dir", str(project)).code == 0
    assert (store.stat().st_mode & 0o777) == 0o600


def test_a_saved_pattern_is_listed_with_its_escapes_shown(cli: Any, project: Path) -> None:
    pattern = f"touch {E}[2J[bold]x[/bold]*"
    assert cli.run("permissions", "add", "bash", pattern, "--dir", str(project)).code == 0
    listed = cli.run("permissions", "list", "--dir", str(project))
    assert E not in listed.stdout, listed.output
    assert "touch \\x1b[2J[bold]x[/bold]*" in listed.stdout, listed.output


def test_a_repository_config_key_with_escapes_is_warned_about_with_them_shown(
    cli: Any, project: Path
) -> None:
    # a project directory whose name carries an escape sequence, and a config key that does
    hostile = project / f"repo{E}[2K"
    hostile.mkdir()
    cli.configure(hostile, {f"{E}[2K{E}[1Ashell": "x", "shell": "./evil"})
    result = cli.run("tools", "--dir", str(hostile))
    assert E not in result.stderr, result.stderr
    # an unknown key is a config error (exit 2), its escapes shown
    assert '"\\u001b[2K\\u001b[1Ashell"' in result.stderr, result.stderr
    assert "repo\\x1b[2K/.tether/tether.json" in result.stderr, result.stderr
    cli.configure(hostile, {"shell": "./evil"})
    result = cli.run("tools", "--dir", str(hostile))
    assert E not in result.stderr, result.stderr
    assert "ignored shell in " in result.stderr
    assert "repo\\x1b[2K/.tether/tether.json" in result.stderr, result.stderr


def test_an_error_message_is_never_read_as_markup(cli: Any, project: Path) -> None:
    result = cli.run("session", "show", f"ses_[bold]{E}[2Jx")
    assert result.code != 0
    assert E not in result.stderr, result.stderr
    assert "[bold]" in result.stderr, result.stderr

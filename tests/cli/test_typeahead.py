"""Text typed during a turn of the interactive session (issue 37): never echoed into the live view, kept for the next
prompt, and never taken as the answer of an approval asked later in the turn. A real ``tether`` on a pty; the
turn waits in a bash call until the test releases it (a file appears)."""

from __future__ import annotations

import json
import os
import pty
import select
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_repl import repl  # noqa: F401  (the interactive session's fixture)

from tether.cli._typeahead import TypeAhead  # pyright: ignore[reportPrivateUsage]

WAIT = {
    "name": "bash",
    "arguments": {"command": "echo started; until [ -e go ]; do sleep 0.05; done; echo released"},
}


@pytest.fixture
def allow_bash(cli: Any) -> None:
    """Your own config allows bash, so the waiting call asks nothing."""
    config = cli.tmp / "config" / "tether.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"permission": {"bash": "allow"}}), encoding="utf-8")


def _users(cli: Any, project: Path) -> list[str]:
    (session,) = cli.json("sessions", "--json", "--dir", str(project))
    timeline = cli.json("session", "show", session["id"], "--json")
    return [item["text"] for item in timeline["timeline"] if item["type"] == "user"]


@pytest.mark.usefixtures("allow_bash")
def test_text_typed_during_a_turn_is_not_echoed_and_becomes_the_next_prompt(
    repl: Any,  # noqa: F811
    cli: Any,
    project: Path,
) -> None:
    screen = repl(script=[{"tool_calls": [WAIT]}, {"text": "first done"}, {"text": "second done"}])
    screen.type("start")
    screen.expect(r"│ started")  # the turn runs: its live tail is on the screen
    screen.term.send(
        "now the tests\x7f\x7f\x7f\x7f\x7fdocs"
    )  # typed, with Backspace, while the spinner turns
    (project / "go").touch()
    shown = screen.expect(r"── done")
    assert "now the" not in shown and "docs" not in shown, shown  # nothing echoed into the live view
    screen.at_prompt()
    screen.expect("now the docs")  # the prompt starts with it
    screen.term.send("\r")
    screen.expect("second done")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text
    assert _users(cli, project) == ["start", "now the docs"]


@pytest.mark.usefixtures("allow_bash")
def test_an_approval_later_in_the_turn_does_not_take_what_was_typed(
    repl: Any,  # noqa: F811
    cli: Any,
    project: Path,
) -> None:
    edit = {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}}
    screen = repl(
        script=[{"tool_calls": [WAIT]}, {"tool_calls": [edit]}, {"text": "as you wish"}],
        config={"permission": {"edit": "ask"}},
    )
    screen.type("go ahead")
    screen.expect(r"│ started")
    screen.term.send("o\r")  # typed early, as if to answer a prompt that is not there yet
    (project / "go").touch()
    screen.expect(r"permission asked: edit")
    screen.expect(r"choice \[o/")
    screen.term.send("r\n")  # the answer given at the prompt
    screen.expect(r"── ")
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"  # "o" did not approve it
    screen.at_prompt()
    screen.expect("o")
    screen.term.send("\x15/exit\r")  # Ctrl-U clears the kept text
    assert screen.wait() == 0, screen.term.text
    assert _users(cli, project) == ["go ahead"]


@pytest.mark.parametrize(
    ("keys", "text"),
    [
        (b"hello", "hello"),
        (b"hello\r", "hello"),
        (b"one\rtwo", "one\ntwo"),
        (b"abc\x7f\x7fz", "az"),
        (b"one\r\x7f\x7fx", "onx"),
        (b"abc\x15def", "def"),
        (b"fix the tests\x17docs", "fix the docs"),
        (b"word\x17again", "again"),
        (b"a\x1b[Db\x1b[1;5Cc\x1bOAd\x1bxe", "abcde"),
        (b"tab\there\x04\x01", "tab\there"),
        ("caf\u00e9 \u65e5\u672c".encode(), "caf\u00e9 \u65e5\u672c"),
        (b"\xff!", "\ufffd!"),
    ],
)
def test_the_kept_text_is_edited_as_a_line_editor_would(keys: bytes, text: str) -> None:
    typed = TypeAhead(fd=-1)
    for n in range(len(keys)):  # byte by byte: a key split across reads is the same key
        typed.feed(keys[n : n + 1])
    assert typed.text == text


def test_an_answer_typed_at_a_paused_prompt_is_left_for_the_prompt() -> None:
    """The live view's frames poll on while an approval waits for its answer: a poll then must not take the answer
    (it became the next message's draft, and the approval waited for ever: a full test run's 30 s timeout)."""
    master, slave = pty.openpty()
    try:
        typed = TypeAhead(fd=slave)
        typed.start()
        os.write(master, b"before")
        typed.poll()
        with typed.paused():
            os.write(master, b"a\n")
            assert select.select([slave], [], [], 10)[0]  # the line is there to read (a hang guard)
            typed.poll()  # a frame of the live view
            assert select.select([slave], [], [], 0)[0], "the frame took the answer"
            assert os.read(slave, 1024) == b"a\n"  # the prompt reads its answer
        typed.stop()
        assert typed.text == "before"
    finally:
        os.close(master)
        os.close(slave)


def test_without_a_terminal_nothing_is_kept(tmp_path: Path) -> None:
    with (tmp_path / "f").open("w+b") as file:
        typed = TypeAhead(fd=file.fileno())
        typed.start()
        typed.poll()
        with typed.paused():
            pass
        typed.stop()
        assert typed.text == ""


def test_markdown_headings_are_left_aligned() -> None:
    import io

    from rich.console import Console

    from tether.cli._repl_view import markdown  # pyright: ignore[reportPrivateUsage]

    out = io.StringIO()
    Console(file=out, width=60, color_system=None).print(markdown("# Big title\n\ntext\n\n## Smaller"))
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    assert [line.rstrip() for line in lines] == ["Big title", "text", "Smaller"], lines

"""Resuming a session in the interactive session prints its last turns (issue 37): ``tether -c``, ``--session`` and
``/resume`` show the user's text, the model's text and one line per tool call, as many turns as
``terminal.resume_turns`` says. A real ``tether`` on a pty with scripted models."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.cli.test_repl import _session_id, repl  # noqa: F401  (the interactive session's fixture)

READ = {"name": "read", "arguments": {"path": "notes.txt"}}


def _two_turns(cli: Any, project: Path) -> tuple[str, str]:
    model = cli.script(
        [
            {"text": "Reading it.", "tool_calls": [READ]},
            {"text": "It says alpha."},
            {"text": "Second answer,\nover two lines."},
            {"text": "after the resume"},
        ],
        name="history.json",
    )
    first = cli.run("run", "what is in the notes?", "--model", model, "--dir", str(project))
    assert first.code == 0, first.output
    session_id = _session_id(first.output)
    second = cli.run("run", "-c", "and then?", "--model", model, "--dir", str(project))
    assert second.code == 0, second.output
    return model, session_id


def test_continue_prints_the_last_turns_before_the_prompt(repl: Any, cli: Any, project: Path) -> None:  # noqa: F811
    model, session_id = _two_turns(cli, project)
    screen = repl("--continue", "--model", model)
    shown = screen.at_prompt()
    assert re.search(rf"session\s+{session_id}", shown), shown
    history = shown[shown.index("the conversation so far") :]
    lines = [line.strip() for line in history.splitlines() if line.strip()]
    assert lines[1:8] == [
        "you › what is in the notes?",
        "Reading it.",
        lines[3],
        "It says alpha.",
        "you › and then?",
        "Second answer,",
        "over two lines.",
    ], history
    assert lines[3].startswith("✓ read notes.txt") and lines[3].endswith("lines 1-2 of 2"), lines[3]
    assert "your turn" in lines[8]
    screen.term.send("go on\r")  # at the prompt already
    screen.expect("after the resume")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text


def test_resume_turns_sets_how_many_and_slash_resume_prints_them(
    repl: Any,  # noqa: F811
    cli: Any,
    project: Path,
) -> None:
    model, session_id = _two_turns(cli, project)
    config = cli.tmp / "config" / "tether.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"terminal": {"resume_turns": 1}}), encoding="utf-8")
    screen = repl("--model", model)
    screen.type(f"/resume {session_id[:12]}")
    screen.expect(f"resumed {session_id}")
    shown = screen.until_prompt()
    assert "the last 1 of 2 turns" in shown, shown
    assert "you › and then?" in shown and "Second answer," in shown
    assert "you › what is in the notes?" not in shown and "✓ read" not in shown
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text
    config.write_text(json.dumps({"terminal": {"resume_turns": 0}}), encoding="utf-8")
    screen = repl("--session", session_id, "--model", model)
    shown = screen.at_prompt()
    assert "you ›" not in shown and "your turn" not in shown, shown
    screen.term.send("\x04")
    assert screen.wait() == 0, screen.term.text

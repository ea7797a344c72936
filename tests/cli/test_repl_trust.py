"""The trust question never takes the interactive session's first message (issue 37): it is asked before the session
reads input, between two rules, with what each answer does; a message typed before it appeared or at it is refused as
an answer and kept, and the first prompt shows it. A real ``tether`` on a pty with a scripted model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.cli.test_repl import repl  # noqa: F401  (the interactive session's fixture)

NOT_AN_ANSWER = (
    "is not an answer: type y (yes) or n (no); an empty line is no (your text is kept for the prompt)"
)


def _user_texts(cli: Any, project: Path) -> list[str]:
    (session,) = cli.json("sessions", "--json", "--dir", str(project))
    timeline = cli.json("session", "show", session["id"], "--json")
    return [item["text"] for item in timeline["timeline"] if item["type"] == "user"]


def test_a_message_typed_at_the_trust_question_becomes_the_first_prompt(
    repl: Any,  # noqa: F811
    cli: Any,
    project: Path,
) -> None:
    screen = repl(script=[{"text": "on it"}], config={"shell": "/bin/sh"})
    shown = screen.expect(r"Trust it\? \[y/N\] ")
    assert "this project is not trusted" in shown
    assert re.search(r"y\s+trust it: its config \(and tool files\) apply in full", shown), shown
    assert re.search(r"n\s+do not trust it \(an empty line too\): only what tightens applies", shown), shown
    screen.term.send("fix the failing test\r")
    screen.expect(re.escape(f"'fix the failing test' {NOT_AN_ANSWER}"))
    screen.expect(r"Trust it\? \[y/N\] ")
    screen.term.send("n\r")
    screen.expect(r"warning: ignored shell in")
    screen.expect("your message is at the prompt: Enter sends it")
    screen.at_prompt()
    screen.expect("fix the failing test")  # already in the prompt's line
    screen.term.send("\r")
    screen.expect("on it")
    screen.expect(r"── done")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text
    assert _user_texts(cli, project) == ["fix the failing test"]
    assert cli.run("trust", "--list").stdout == ""  # the message was not an answer: no was the answer


def test_text_typed_before_the_question_is_not_its_answer(repl: Any, cli: Any, project: Path) -> None:  # noqa: F811
    # typed before the program started: waiting in the terminal before the question is on the screen
    screen = repl(script=[{"text": "hello back"}], config={"shell": "/bin/sh"}, typed="y\r")
    screen.expect(r"Trust it\? \[y/N\] ")
    screen.term.send("\r")  # an empty line: no
    screen.expect(r"warning: ignored shell in")
    screen.at_prompt()
    screen.term.send("\r")  # the "y" typed early is the message, sent as one
    screen.expect("hello back")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text
    assert _user_texts(cli, project) == ["y"]
    assert cli.run("trust", "--list").stdout == ""

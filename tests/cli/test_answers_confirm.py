"""The other terminal prompts that read a choice, audited for issue 34 item 1: the trust question, the delete
confirmation and the question tool's option numbers read whole answers, ask again on anything else, and take an
empty line or Ctrl-D as the safe answer.

Before the fix ``yep`` at the trust question was a "no" saved for good (never asked again), ``yes please`` at the
delete confirmation deleted nothing without saying why, and a question's option number out of range (``7`` of two)
became the person's own answer (``²`` crashed the run).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.builtins.test_question import COLOR

TRUST_CONFIG = {"shell": "/bin/sh"}
NOT_YES_NO = "is not an answer: type y (yes) or n (no); an empty line is no"


def _trust_run(cli: Any, project: Path) -> Any:
    cli.configure(project, TRUST_CONFIG)
    term = cli.pty("run", "hi", "--model", cli.script([{"text": "ok"}]), "--dir", str(project))
    term.expect(r"sets shell\. Trust it\? \[y/N\] ")
    return term


def test_the_trust_question_asks_again_on_an_unknown_answer_and_an_empty_line_declines(
    cli: Any, project: Path
) -> None:
    term = _trust_run(cli, project)
    for answer in ("yep", "yes please", "sure", "t"):
        term.send(answer + "\n")
        term.expect(re.escape(f"'{answer}' {NOT_YES_NO}"))
    term.send("\n")
    term.expect(r"warning: ignored shell in")
    assert term.wait() == 0, term.text
    assert term.text.count("Trust it? [y/N]") == 5  # the short question again after each refusal
    assert cli.run("trust", "--list").stdout == ""


def test_ctrl_d_at_the_trust_question_declines(cli: Any, project: Path) -> None:
    term = _trust_run(cli, project)
    term.send("\x04")
    term.expect(r"warning: ignored shell in")
    assert term.wait() == 0, term.text
    assert "Traceback" not in term.text
    assert cli.run("trust", "--list").stdout == ""


def test_yes_in_any_case_with_spaces_around_trusts(cli: Any, project: Path) -> None:
    term = _trust_run(cli, project)
    term.send("  YES \n")
    term.expect(rf"trusted {re.escape(str(project.resolve()))}")
    assert term.wait() == 0, term.text
    assert cli.run("trust", "--list").stdout.splitlines() == [str(project.resolve())]


def _one_session(cli: Any, project: Path) -> str:
    assert cli.run("run", "x", "--model", cli.script([{"text": "ok"}]), "--dir", str(project)).code == 0
    (session,) = [s["id"] for s in cli.json("sessions", "--json", "--dir", str(project))]
    return session


def test_the_delete_confirmation_asks_again_and_an_empty_line_or_ctrl_d_keeps_the_session(
    cli: Any, project: Path
) -> None:
    session = _one_session(cli, project)
    for end in ("\n", "\x04"):
        term = cli.pty("session", "delete", session)
        term.expect(r"retained outputs\? \[y/N\] ")
        for answer in ("yes please", "delete", "yy"):
            term.send(answer + "\n")
            term.expect(re.escape(f"'{answer}' {NOT_YES_NO}"))
            term.expect(r"delete it\? \[y/N\] ")
        term.send(end)
        assert term.wait() == 0, term.text
        assert "nothing deleted" in term.text
        assert [s["id"] for s in cli.json("sessions", "--json", "--dir", str(project))] == [session]
    term = cli.pty("session", "delete", session)
    term.expect(r"\[y/N\] ")
    term.send(" Y\n")
    assert term.wait() == 0, term.text
    assert f"deleted {session}" in term.text
    assert cli.json("sessions", "--json", "--dir", str(project)) == []


def test_an_option_number_out_of_range_is_asked_again_and_other_digits_are_own_text(
    cli: Any, project: Path
) -> None:
    call = {"name": "question", "arguments": {"questions": [COLOR, {**COLOR, "header": "Again"}]}}
    model = cli.script([{"text": "Asking.", "tool_calls": [call]}, {"text": "Going on."}])
    term = cli.pty("run", "ask me", "--model", model, "--dir", str(project))
    term.expect(r"question 1/2: Color")
    for typo in ("7", "0", "1, 3", "99999999999999999999"):
        term.send(typo + "\n")
        term.expect(
            r"the options are 1 to 2; to answer with your own text that is a number, add a word to it"
        )
    term.send("2\n")
    term.expect(r"question 2/2: Again")
    term.send("²\n")  # a digit to Python, not an option number
    term.expect("Going on.")
    assert term.wait() == 0, term.text
    assert term.text.count("the options are 1 to 2") == 4
    session = "ses_" + term.text.split("session ses_", 1)[1].split()[0]
    shown = cli.json("session", "show", session, "--json")
    (tool,) = [p for i in shown["timeline"] if i["type"] == "step" for p in i["parts"] if p["type"] == "tool"]
    assert tool["metadata"]["answers"] == [["Red"], ["²"]], json.dumps(tool)


def test_dismiss_is_read_in_any_case(cli: Any, project: Path) -> None:
    call = {"name": "question", "arguments": {"questions": [COLOR]}}
    model = cli.script([{"text": "Asking.", "tool_calls": [call]}, {"text": "Going on."}])
    term = cli.pty("run", "ask me", "--model", model, "--dir", str(project))
    term.expect(r"question: Color")
    term.send(" /Dismiss\n")
    assert term.wait() == 1, term.text
    assert "Going on." not in term.text

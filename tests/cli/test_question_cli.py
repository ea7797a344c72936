"""``tether run`` with the question tool: asked and answered on the terminal (options, several, own text, dismiss),
streamed as JSON events, and failing at once with a message for the model when no one can answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.builtins.test_question import COLOR, EXTRAS  # the same two questions as the runtime's tests
from tests.cli.test_repl import repl  # noqa: F401  (the interactive session's fixture)

from tether.cli._jsonevents import events_adapter
from tether.session._questions import NO_ANSWERER


def _script(cli: Any, *questions: dict[str, Any]) -> str:
    call = {"name": "question", "arguments": {"questions": list(questions)}}
    return cli.script([{"text": "Asking.", "tool_calls": [call]}, {"text": "Going on."}])


def _session_id(text: str) -> str:
    return "ses_" + text.split("session ses_", 1)[1].split()[0]


def _tool(cli: Any, text: str) -> dict[str, Any]:
    timeline = cli.json("session", "show", _session_id(text), "--json")
    return next(
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    )


def test_questions_are_answered_on_the_terminal_and_recorded_on_the_call(cli: Any, project: Path) -> None:
    term = cli.pty("run", "ask me", "--model", _script(cli, COLOR, EXTRAS), "--dir", str(project))
    term.expect(r"question 1/2: Color")
    term.expect(r"2\. Red — loud")
    term.expect(r"answer \(a number, or your own answer")
    term.send("2\n")
    term.expect(r"question 2/2: Extras")
    term.expect(r"answer \(numbers separated by commas")
    term.send("1, 2\n")
    term.expect("Going on.")
    assert term.wait() == 0, term.text
    tool = _tool(cli, term.text)
    assert tool["state"] == "completed" and tool["metadata"]["answers"] == [["Red"], ["Icon", "Tooltip"]]
    assert '"Which color should the button be?"="Red"' in tool["content"][0]["text"]
    shown = cli.run("session", "show", _session_id(term.text))
    assert 'User has answered your questions: "Which color should the button be?"="Red"' in shown.stdout


def test_own_text_an_empty_answer_and_one_choice_only(cli: Any, project: Path) -> None:
    term = cli.pty("run", "ask me", "--model", _script(cli, COLOR, EXTRAS), "--dir", str(project))
    term.expect(r"question 1/2: Color")
    term.send("1 2\n")  # two numbers for a single-choice question: asked again
    term.expect("this question takes one answer")
    term.send("green, please\n")
    term.expect(r"question 2/2: Extras")
    term.send("\n")
    term.expect("Going on.")
    assert term.wait() == 0, term.text
    tool = _tool(cli, term.text)
    assert tool["metadata"]["answers"] == [["green, please"], []]
    assert '"Which extras?"="Unanswered"' in tool["content"][0]["text"]


def test_dismissing_stops_the_turn(cli: Any, project: Path) -> None:
    term = cli.pty("run", "ask me", "--model", _script(cli, COLOR), "--dir", str(project))
    term.expect(r"question: Color")
    term.send("/dismiss\n")
    assert term.wait() == 1, term.text
    assert "Going on." not in term.text
    tool = _tool(cli, term.text)
    assert tool["state"] == "error" and tool["error_kind"] == "declined"


def test_without_a_terminal_the_question_fails_with_a_message_for_the_model(cli: Any, project: Path) -> None:
    for flags in ((), ("--yes",)):
        result = cli.run(
            "run", "ask me", "--model", _script(cli, COLOR), "--dir", str(project), "--format", "json", *flags
        )
        assert result.code == 0, result.output
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        for line in lines:
            events_adapter().validate_python(line)
        assert not [e for e in lines if e["type"].startswith("question")]
        (end,) = [e for e in lines if e["type"] == "tool_end"]
        assert end["status"] == "failed" and end["error"] == NO_ANSWERER
        assert "Going on." in "".join(e["delta"] for e in lines if e["type"] == "text")  # the turn went on


def test_the_json_stream_carries_the_question_and_its_answers(cli: Any, project: Path) -> None:
    term = cli.pty("run", "ask me", "--model", _script(cli, COLOR), "--dir", str(project), "--format", "json")
    term.expect(r"question: Color")
    term.send("1\n")
    assert term.wait() == 0, term.text
    # stdout and the prompt (stderr) share the terminal here: a line may follow the prompt on its line
    lines = [json.loads(line[line.index('{"v"') :]) for line in term.text.splitlines() if '{"v"' in line]
    for line in lines:
        events_adapter().validate_python(line)
    (asked,) = [e for e in lines if e["type"] == "question_asked"]
    (answered,) = [e for e in lines if e["type"] == "question_answered"]
    assert asked["agent"] == "build" and asked["questions"][0]["header"] == "Color"
    assert asked["questions"][0]["options"][1] == {"label": "Red", "description": "loud"}
    assert answered["request"] == asked["request"] and answered["answers"] == [["Blue"]]


def test_a_question_cannot_drive_the_terminal_or_inject_markup(cli: Any, project: Path) -> None:
    hostile = {
        "question": "Pick one\x1b[2J\x1b]0;pwned\x07 [bold red]urgent[/]",
        "header": "H\x1b[3J",
        "options": [{"label": "ok\x1b[K", "description": "[link=http://x]click[/link]"}],
    }
    term = cli.pty("run", "ask me", "--model", _script(cli, hostile), "--dir", str(project))
    term.expect(r"question: H")
    term.send("1\n")
    term.expect("Going on.")
    assert term.wait() == 0, term.text
    for sequence in ("\x1b[2J", "\x1b]0;pwned", "\x1b[3J"):
        assert sequence not in term.raw, sequence
    assert (
        "Pick one\\x1b[2J\\x1b]0;pwned\\x07 [bold red]urgent[/]" in term.text
    )  # shown as escapes, not markup
    assert "[link=http://x]click[/link]" in term.text
    tool = _tool(cli, term.text)
    assert tool["metadata"]["answers"] == [
        ["ok\x1b[K"]
    ]  # the answer is the label exactly as the model sent it


def test_the_repl_asks_questions_inline_and_the_session_goes_on(repl: Any) -> None:  # noqa: F811
    call = {"name": "question", "arguments": {"questions": [COLOR]}}
    screen = repl(
        script=[{"text": "Asking.", "tool_calls": [call]}, {"text": "Red it is."}, {"text": "Still here."}]
    )
    screen.type("style the button")
    screen.expect(r"question: Color")
    screen.expect(r"answer \(a number")
    screen.term.send("2\n")
    screen.expect("Red it is.")
    screen.type("anything else?")
    screen.expect("Still here.")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text

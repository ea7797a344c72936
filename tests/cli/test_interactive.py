"""``tether run`` on a pseudo-terminal: approval prompts at the point of action, and Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EDIT = {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}}


def _edit_session(cli: Any, project: Path) -> Any:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script([{"text": "Editing.", "tool_calls": [EDIT]}, {"text": "Finished."}])
    term = cli.pty("run", "edit the notes", "--model", model, "--dir", str(project))
    term.expect(r"permission asked: edit")
    term.expect(r"choice \[o/(?:a|always)/r/f\]")
    return term


def test_prompt_shows_tool_resources_diff_and_the_asking_rule(cli: Any, project: Path) -> None:
    term = _edit_session(cli, project)
    text = term.text
    assert "tool edit: notes.txt" in text
    assert "resources: notes.txt" in text
    assert "-beta" in text and "+gamma" in text
    assert 'asked by: rule edit "*" -> ask (project)' in text
    assert 'always: saves edit "*" for this project' in text
    term.send("o\n")
    assert term.wait() == 0, term.text
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"


def test_always_saves_the_shown_pattern(cli: Any, project: Path) -> None:
    term = _edit_session(cli, project)
    term.send("always\n")  # edit "*" is broad: the word, not its first letter
    term.expect(r'saved approval: edit "\*"')
    assert term.wait() == 0, term.text
    listed = cli.run("permissions", "--dir", str(project))
    assert "edit" in listed.stdout and "*" in listed.stdout, listed.output


def test_reject_with_feedback_reaches_the_model_and_the_turn_goes_on(cli: Any, project: Path) -> None:
    term = _edit_session(cli, project)
    term.send("f\n")
    term.expect("feedback for the model")
    term.send("use delta instead\n")
    term.expect("Finished.")
    assert term.wait() == 0, term.text
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"
    session_id = term.text.split("session ses_", 1)[1].split()[0]
    timeline = cli.json("session", "show", f"ses_{session_id}", "--json")
    tool = next(
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    )
    assert "use delta instead" in tool["error"]


def test_reject_without_feedback_stops_the_turn_with_exit_1(cli: Any, project: Path) -> None:
    term = _edit_session(cli, project)
    term.send("r\n")
    assert term.wait() == 1, term.text
    assert "a permission request was rejected" in term.text
    assert "Finished." not in term.text


def test_ctrl_c_cancels_the_running_tool_and_the_session_continues(cli: Any, project: Path) -> None:
    model = cli.script(
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 60"}}]},
            {"text": "after the interruption"},
        ]
    )
    term = cli.pty("run", "wait a minute", "--model", model, "--dir", str(project))
    term.expect(r"│ started")  # the live bash tail shows the command's output while it runs
    term.send("\x03")
    assert term.wait() == 130, term.text
    assert "cancelling the turn" in term.text
    assert "✗ bash echo started; sleep 60" in term.text
    session_id = "ses_" + term.text.split("session ses_", 1)[1].split()[0]
    timeline = cli.json("session", "show", session_id, "--json")
    tool = next(
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    )
    assert tool["state"] == "error" and tool["interrupted"] is True
    again = cli.run("run", "go on", "--model", model, "--dir", str(project), "--continue")
    assert again.code == 0, again.output
    assert "after the interruption" in again.stdout
    assert json.loads(cli.run("session", "export", session_id).stdout)["session"]["id"] == session_id

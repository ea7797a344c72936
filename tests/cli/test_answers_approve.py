"""Approval answers are read whole (issue 34, item 1): a typo never answers "always", and "always" never saves a broad
pattern by one letter.

Before the fix the prompt read the first letter of the line: ``absolutely not`` answered **always**, saved
``bash "touch *"`` and ran the command. These tests type into the real ``tether run`` and the interactive session on
a pty, with a scripted model whose bash call would create a canary file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.cli.test_repl import repl  # noqa: F401  (the interactive session's fixture)

from tether.cli._approve import _ANSWERS, _options  # pyright: ignore[reportPrivateUsage]
from tether.cli._choice import YES_NO, parse_choice
from tether.permissions import PermissionRequest

TOUCH = {"name": "bash", "arguments": {"command": "touch canary", "description": "make the canary"}}
ASK_BASH = {"permission": {"bash": "ask"}}
TYPOS = ["absolutely not", "abort", "always?", "allow once please", "fix the failing test", "ALWAYS!", "yes"]
SPACE = " \t\r\n\f\v"


def _touch_session(cli: Any, project: Path) -> Any:
    cli.configure(project, ASK_BASH)
    model = cli.script([{"text": "Touching.", "tool_calls": [TOUCH]}, {"text": "Finished."}])
    term = cli.pty("run", "touch it", "--model", model, "--dir", str(project))
    term.expect(r"permission asked: bash")
    term.expect(r"choice \[o/always/r/f\]: ")
    return term


def _saved(cli: Any, project: Path) -> str:
    listed = cli.run("permissions", "--dir", str(project))
    assert listed.code == 0, listed.output
    return listed.stdout


def test_a_line_that_is_not_a_documented_answer_is_asked_again_and_an_empty_line_rejects(
    cli: Any, project: Path
) -> None:
    term = _touch_session(cli, project)
    for typo in TYPOS:
        term.send(typo + "\n")
        refused = f"'{typo}' is not an answer: type o (once), always, r (reject) or f (feedback); an empty line rejects"
        term.expect(re.escape(refused))
        assert not (project / "canary").exists()
    term.send("\n")
    assert term.wait() == 1, term.text
    assert "a permission request was rejected" in term.text
    assert "Finished." not in term.text and "feedback for the model: " not in term.text
    assert not (project / "canary").exists()
    assert "touch" not in _saved(cli, project)


def test_ctrl_d_at_the_approval_prompt_rejects(cli: Any, project: Path) -> None:
    term = _touch_session(cli, project)
    term.send("\x04")
    assert term.wait() == 1, term.text
    assert "a permission request was rejected" in term.text
    assert not (project / "canary").exists()
    assert "touch" not in _saved(cli, project)


def test_a_broad_always_is_saved_by_the_word_only_and_shows_what_it_saves(cli: Any, project: Path) -> None:
    term = _touch_session(cli, project)
    assert 'always: saves bash "touch *" for this project (broad: type the word always)' in term.text
    term.send("a\n")
    term.expect(r"'a' is not enough: always saves bash \"touch \*\", which is broad")
    term.expect(r"type the word always to save it")
    assert not (project / "canary").exists()
    assert "touch" not in _saved(cli, project)
    term.send("  Always \n")
    term.expect(r'saved approval: bash "touch \*"')
    assert term.wait() == 0, term.text
    assert (project / "canary").exists()
    assert "touch *" in _saved(cli, project)


def test_a_narrow_always_takes_its_letter_in_any_case(cli: Any, project: Path) -> None:
    cli.configure(project, ASK_BASH)
    call = {"name": "bash", "arguments": {"command": "git status", "description": "status"}}
    model = cli.script([{"text": "Looking.", "tool_calls": [call]}, {"text": "Finished."}])
    term = cli.pty("run", "look", "--model", model, "--dir", str(project))
    term.expect(r'a always: saves bash "git status \*" for this project\n')
    term.expect(r"choice \[o/a/r/f\]: ")
    term.send(" A\n")
    term.expect(r'saved approval: bash "git status \*"')
    assert term.wait() == 0, term.text
    assert "git status *" in _saved(cli, project)


def test_the_interactive_session_reads_whole_answers_and_ctrl_d_rejects(repl: Any, cli: Any) -> None:  # noqa: F811
    screen = repl(
        script=[{"text": "Touching.", "tool_calls": [TOUCH]}, {"text": "Still here."}], config=ASK_BASH
    )
    project = cli.tmp / "proj"  # the ``project`` fixture's directory, where the session runs
    screen.type("touch it")
    screen.expect(r"permission asked: bash")
    screen.expect(r"choice \[o/always/r/f\]: ")
    for typo in ("absolutely not", "a", "fix the failing test"):
        screen.term.send(typo + "\n")
        screen.expect(re.escape(f"'{typo}' is not "))
        assert not (project / "canary").exists()
    screen.term.send("\x04")
    screen.expect(r"a permission request was rejected")
    screen.type("anything else?")  # the session goes on
    screen.expect("Still here.")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text
    assert not (project / "canary").exists()
    assert "touch" not in _saved(cli, project)


# -- the parser -------------------------------------------------------------------------------------------------------

WORDS = sorted(_ANSWERS)


def _request(save: tuple[str, ...]) -> PermissionRequest:
    return PermissionRequest(session_id="ses_x", action="bash", resources=("x",), save=save)


@given(st.text())
def test_only_a_documented_word_whole_maps_to_an_answer(line: str) -> None:
    answer = parse_choice(line, _ANSWERS)
    word = line.strip(SPACE)
    if answer is None:
        assert not (word.isascii() and word.lower() in _ANSWERS)
    else:
        assert word.isascii() and _ANSWERS[word.lower()] == answer


@given(
    st.sampled_from(WORDS),
    st.text(alphabet=SPACE, max_size=3),
    st.text(alphabet=SPACE, max_size=3),
    st.lists(st.booleans(), max_size=8),
)
def test_a_documented_word_in_any_case_with_spaces_around_is_its_answer(
    word: str, before: str, after: str, upper: list[bool]
) -> None:
    cased = "".join(c.upper() if i < len(upper) and upper[i] else c for i, c in enumerate(word))
    assert parse_choice(before + cased + after, _ANSWERS) == _ANSWERS[word]


@given(st.sampled_from(WORDS), st.text(min_size=1))
def test_a_word_with_anything_more_is_no_answer(word: str, more: str) -> None:
    if not more.strip(SPACE):
        return
    for line in (word + more, more + word, f"{word} {more}"):
        if line.strip(SPACE).lower() not in _ANSWERS:  # "o" + "nce" is a word of its own
            assert parse_choice(line, _ANSWERS) is None
    assert parse_choice(f"y {more}", YES_NO) is None


@pytest.mark.parametrize("line", [*TYPOS, "", " ", "\x04", "once\x00", "ye", "oui", "feedbac\u212a"])
def test_the_issues_typos_answer_nothing(line: str) -> None:
    assert parse_choice(line, _ANSWERS) is None


@pytest.mark.parametrize(
    ("save", "letter"),
    [
        (("*",), False),
        (("rm *",), False),
        (("git push *",), True),
        (("git push *", "rm *"), False),
        ((), True),
    ],
)
def test_the_letter_a_is_refused_only_when_a_saved_pattern_is_broad(
    save: tuple[str, ...], letter: bool
) -> None:
    lines, choices = _options(_request(save))
    assert ("a" in choices.words) is letter and choices.words.get("always") == "always"
    assert ("a" in choices.refused) is not letter
    assert ("broad: type the word always" in lines) is not letter

"""``tether`` with no command on a pseudo-terminal: the interactive session, turn after turn in one process.

Each test types into a real ``python -m tether.cli`` on a pty (``conftest.Pty``) with a scripted model and waits on
what the screen shows. ``Screen`` waits for text shown *after* the last thing it matched, so a prompt that is shown
again after every turn is waited for again.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import ANSI

PROMPT = r"build ›"


class Screen:
    """A pty with a cursor: :meth:`expect` looks only at what was shown after the previous match.

    prompt-toolkit draws the prompt line several times as keys arrive; the markers of a prompt's start and end
    (bracketed paste switched on, then off) tell :meth:`type` where one input ends and its output begins.
    """

    PROMPT_ON = "\x1b[?2004h"
    PROMPT_OFF = "\x1b[?2004l"

    def __init__(self, term: Any) -> None:
        self.term = term
        self.at = 0  # an index into term.raw: everything before it has been matched

    def _raw_end(self, shown: int) -> int:
        """The index in raw after the first ``shown`` characters of the stripped text from ``self.at``."""
        raw, at, count = self.term.raw, self.at, 0
        while count < shown:
            escape = ANSI.match(raw, at)
            if escape is not None and escape.end() > at:
                at = escape.end()
                continue
            at += 1
            count += 1
        return at

    def _wait(self, find: Any, what: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found = find()
            if found is not None:
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not self.term._pump(min(left, 0.5)):
                found = find()
                if found is not None:
                    return found
                raise AssertionError(
                    f"{what} not shown; after what was matched the terminal shows:\n{self.rest}"
                )

    @property
    def rest(self) -> str:
        return ANSI.sub("", self.term.raw[self.at :])

    def expect(self, pattern: str, timeout: float = 30) -> str:
        """Wait for ``pattern`` after the last match; returns the text shown up to the end of the match."""
        found = self._wait(lambda: re.search(pattern, self.rest), repr(pattern), timeout)
        shown = self.rest[: found.end()]
        self.at = self._raw_end(found.end())
        return shown

    def _marker(self, marker: str, timeout: float) -> str:
        index = self._wait(
            lambda: i if (i := self.term.raw.find(marker, self.at)) >= 0 else None, repr(marker), timeout
        )
        shown = ANSI.sub("", self.term.raw[self.at : index])
        self.at = index + len(marker)
        return shown

    def type(self, line: str, prompt: str = PROMPT, timeout: float = 30) -> str:
        """Wait for the next prompt, type ``line`` and Enter, and wait until it is accepted.

        Returns what was shown between the previous input and this prompt.
        """
        shown = self.at_prompt(prompt, timeout)
        self.term.send(line + "\r")
        self._marker(self.PROMPT_OFF, timeout)
        return shown

    def at_prompt(self, prompt: str = PROMPT, timeout: float = 30) -> str:
        """Wait until the next prompt reads keys (a ^C typed now is a key, not a signal); returns what came before."""
        shown = self._marker(self.PROMPT_ON, timeout)
        self.expect(prompt, timeout)
        return shown

    def until_prompt(self, timeout: float = 30) -> str:
        """What is shown until the next prompt starts (not consumed: :meth:`type` waits for that prompt)."""
        index = self._wait(
            lambda: i if (i := self.term.raw.find(self.PROMPT_ON, self.at)) >= 0 else None,
            "a prompt",
            timeout,
        )
        return ANSI.sub("", self.term.raw[self.at : index])

    def wait(self) -> int:
        return self.term.wait()


@pytest.fixture
def repl(cli: Any, project: Path) -> Iterator[Any]:
    cli.env["PROMPT_TOOLKIT_NO_CPR"] = (
        "1"  # nothing on the test's side of the pty answers a cursor position request
    )

    def start(
        *args: str,
        script: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
        typed: str = "",
    ) -> Screen:
        if config is not None:
            cli.configure(project, config)
        extra = ["--model", cli.script(script)] if script is not None else []
        screen = Screen(cli.pty(*extra, *args, cwd=project, typed=typed))
        started.append(screen)
        return screen

    started: list[Screen] = []
    yield start
    for screen in started:  # a failed test leaves its session running: end it, and say nothing more
        if screen.term.proc.poll() is None:
            screen.term.proc.kill()
            screen.term.proc.wait()


def _session_id(text: str) -> str:
    return "ses_" + text.rsplit("session ses_", 1)[1].split()[0]


def test_turns_share_one_session_and_its_history(repl: Any, cli: Any, project: Path) -> None:
    screen = repl(script=[{"text": "first answer"}, {"text": "second answer"}])
    screen.expect(r"agent build · model scripted/script\.json · session new")
    screen.type("hello")
    screen.expect("first answer")
    screen.expect(r"── done · 1 step · 0 tool calls")
    # step k of the script answers the request holding k assistant messages: the second turn sees the first
    screen.type("and again")
    screen.expect("second answer")
    screen.type("/sessions")
    listed = screen.until_prompt()
    assert "hello" in listed and "←" in listed
    screen.at_prompt()
    screen.term.send("\x04")
    assert screen.wait() == 0, screen.term.text
    sessions = cli.json("sessions", "--json", "--dir", str(project))
    assert len(sessions) == 1, sessions


def test_an_approval_is_asked_inline_and_the_session_goes_on(repl: Any, project: Path) -> None:
    edit = {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}}
    screen = repl(
        script=[{"text": "Editing.", "tool_calls": [edit]}, {"text": "Finished."}, {"text": "Still here."}],
        config={"permission": {"edit": "ask"}},
    )
    screen.type("edit the notes")
    screen.expect(r"permission asked: edit")
    screen.expect(r"choice \[o/(?:a|always)/r/f\]")
    screen.term.send("o\n")
    screen.expect(r"✓ edit notes\.txt")
    screen.expect("Finished.")
    screen.expect(r"── done · 2 steps · 1 tool call")
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"
    screen.type("anything else?")
    screen.expect("Still here.")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text


def test_ctrl_c_cancels_the_turn_and_the_session_stays(repl: Any, cli: Any) -> None:
    screen = repl(
        script=[
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 60"}}]},
            {"text": "after the interruption"},
        ]
    )
    screen.type("wait a minute")
    screen.expect(r"│ started")
    screen.term.send("\x03")
    screen.expect("cancelling the turn")
    screen.expect(r"✗ bash echo started; sleep 60")
    screen.expect(r"── cancelled \(the session goes on\)")
    screen.type("go on")
    screen.expect("after the interruption")
    screen.expect(r"── done")
    screen.type("/sessions")
    current = re.search(r"([0-9a-f]{6,}) ←", screen.until_prompt())  # the short id
    assert current is not None
    session_id = current.group(1)
    # a second ^C at the prompt exits (the first one says so)
    screen.at_prompt()
    screen.term.send("\x03")
    screen.expect(r"Ctrl-C again or Ctrl-D to exit")
    screen.at_prompt()
    screen.term.send("\x03")
    assert screen.wait() == 0, screen.term.text
    timeline = cli.json("session", "show", session_id, "--json")
    tools = [
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    ]
    assert tools[0]["state"] == "error" and tools[0]["interrupted"] is True
    texts = [p.get("text") for item in timeline["timeline"] if item["type"] == "step" for p in item["parts"]]
    assert "after the interruption" in texts


def test_slash_commands(repl: Any, cli: Any, project: Path) -> None:
    screen = repl(script=[{"echo": "tools"}, {"echo": "tools"}])
    screen.type("/help")
    shown = screen.until_prompt()
    for name in ("/new", "/sessions", "/resume ID", "/model [provider/model]", "/agent [name]", "/exit"):
        assert name in shown, shown
    screen.type("/frobnicate")
    screen.expect(r"unknown command /frobnicate: /help lists the commands")
    screen.type("/model")
    screen.expect(r"model scripted/script\.json \(price unknown: tokens only")
    screen.type("/model nonsense")
    screen.expect(r'error: model "nonsense" is not provider/model')
    screen.type("/agent nobody")
    screen.expect(r"no agent 'nobody'; agents: .*build.*plan")
    screen.type("/agent plan")
    screen.expect(r"agent plan")
    screen.type("which tools?", prompt=r"plan ›")
    screen.expect(r"── done")
    listed = cli.json("sessions", "--json", "--dir", str(project))
    assert [s["agent"] for s in listed] == ["plan"], listed  # created at the first message, as the plan agent
    screen.type("/new", prompt=r"plan ›")
    screen.expect(r"new session: it starts with your next message \(agent plan\)")
    screen.type("/resume ses_nope", prompt=r"plan ›")
    screen.expect(r"error: .*ses_nope")
    screen.type("/quit", prompt=r"plan ›")
    assert screen.wait() == 0, screen.term.text


def test_ctrl_d_exits_and_the_history_file_is_private(repl: Any, cli: Any) -> None:
    screen = repl(script=[])
    screen.type("/help")
    screen.until_prompt()
    screen.at_prompt()
    screen.term.send("\x04")
    assert screen.wait() == 0, screen.term.text
    history = cli.data_dir / "repl-history"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert "+/help" in history.read_text()


def test_without_a_terminal_the_help_is_printed(cli: Any) -> None:
    result = cli.run()
    assert result.code == 2
    assert "Usage: tether" in result.output and "interactive session" in result.output


def test_interactive_options_before_a_command_are_refused(cli: Any) -> None:
    result = cli.run("--model", "openai/gpt-5", "sessions")
    assert result.code == 2
    assert "put them after it: tether sessions --model" in result.output


def test_model_text_is_markdown_and_escapes_stay_visible(repl: Any) -> None:
    screen = repl(script=[{"text": "# Plan\n\n* **bold** step\n* `code` here\n\x1b]0;pwned\x07\x1b[2J"}])
    screen.type("show me")
    shown = screen.expect(r"── done")
    assert "**bold**" not in shown and "bold step" in shown
    assert "`code`" not in shown and "code here" in shown
    assert "\\x1b]0;pwned" in shown  # the model's escape sequence is shown, not obeyed
    assert "\x1b]0;pwned" not in screen.term.raw
    screen.type("/exit")
    assert screen.wait() == 0


def test_cost_is_shown_when_the_model_has_a_price(repl: Any, cli: Any, project: Path, tmp_path: Path) -> None:
    price = {
        "input": 1000000,
        "output": 2000000,
    }  # $1 a token in, $2 out: the scripted model's usage is in dollars
    config = {"provider": {"scripted": {"models": {"script.json": {"cost": price}}}}}
    user_config = (
        cli.tmp / "config" / "tether.json"
    )  # the user's own file: a project's may not set a provider
    user_config.parent.mkdir(parents=True)
    user_config.write_text(json.dumps(config))
    screen = repl(script=[{"text": "priced"}, {"text": "priced again"}])
    screen.type("/model")
    screen.expect(r"model scripted/script\.json \(\$1,000,000 in / \$2,000,000 out per 1M tokens\)")
    screen.type("hello")
    line = screen.expect(r"── done[^\n]*")
    first = re.search(r"· \$([\d,.]+) \(session \$([\d,.]+)\)", line)
    assert first is not None, line
    assert first.group(1) == first.group(2)
    screen.type("again")
    line = screen.expect(r"── done[^\n]*s\n")
    second = re.search(r"· \$([\d,.]+) \(session \$([\d,.]+)\)", line)
    assert second is not None, line
    total = float(first.group(1).replace(",", "")) + float(second.group(1).replace(",", ""))
    assert float(second.group(2).replace(",", "")) == pytest.approx(total)
    screen.at_prompt()
    screen.term.send("\x04")
    assert screen.wait() == 0


def test_a_planted_history_symlink_is_not_followed(repl: Any, cli: Any, tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched\n")
    cli.data_dir.mkdir(parents=True, exist_ok=True)
    os.symlink(canary, cli.data_dir / "repl-history")
    screen = repl(script=[])
    screen.type("/help")
    screen.expect(r"history off: .*repl-history")
    screen.at_prompt()
    screen.term.send("\x04")
    assert screen.wait() == 0, screen.term.text
    assert canary.read_text() == "untouched\n"


def test_continue_resumes_the_latest_session(repl: Any, cli: Any, project: Path) -> None:
    model = cli.script([{"text": "one"}, {"text": "two"}], name="resume.json")
    first = cli.run("run", "start", "--model", model, "--dir", str(project))
    assert first.code == 0, first.output
    session_id = _session_id(first.output)
    screen = repl("--continue", "--model", model)
    screen.expect(r"session\s*" + session_id)
    screen.type("go on")
    screen.expect("two")  # the script's second step: the first turn is in the history
    screen.type("/resume")
    screen.expect(r"usage: /resume ID \(see /sessions\)")
    screen.type(f"/resume {session_id}")
    screen.expect(f"already in {session_id}")
    screen.type("/new")
    screen.type("")  # an empty line sends nothing
    screen.type("fresh start")
    screen.expect("one")  # a new session: the script starts again
    screen.type(f"/resume {session_id[:-4]}")  # a unique prefix; the new session's claim is released
    screen.expect(f"resumed {session_id}: start")
    screen.type("/exit")
    assert screen.wait() == 0
    listed = [s["id"] for s in cli.json("sessions", "--json", "--dir", str(project))]
    assert len(listed) == 2 and session_id in listed


def test_continue_and_session_contradict(repl: Any) -> None:
    screen = repl("--continue", "--session", "ses_x")
    screen.expect("--continue and --session contradict each other")
    assert screen.wait() == 2


def test_an_unknown_agent_at_start_is_a_usage_error(repl: Any) -> None:
    screen = repl("--agent", "nobody")
    screen.expect(r"error: no agent 'nobody': use one of .*build.*plan")
    assert screen.wait() == 2


def test_line_editing_keys(repl: Any, cli: Any) -> None:
    screen = repl(script=[{"text": "got it"}])
    screen.at_prompt()
    screen.term.send("some text")
    screen.expect("some text")
    screen.term.send("\x03")  # a line with text: ^C clears it and the prompt stays
    screen.term.send("/he\t")  # Tab completes a command
    screen.expect("/help")
    screen.term.send("\r")
    screen.expect(r"Esc Enter adds a line")
    screen.at_prompt()
    screen.term.send("line one\x1b\rline two\r")  # Esc Enter: a new line in the same message
    screen.expect("got it")
    assert "Ctrl-C again" not in screen.term.text
    screen.at_prompt()
    screen.term.send("\x04")
    assert screen.wait() == 0
    history = (cli.data_dir / "repl-history").read_text()
    assert "+line one\n+line two\n" in history and "some text" not in history


def test_a_claimed_session_cannot_be_resumed_twice(repl: Any, cli: Any, project: Path) -> None:
    model = cli.script([{"text": "one"}], name="claim.json")
    first = cli.run("run", "start", "--model", model, "--dir", str(project))
    session_id = _session_id(first.output)
    holder = repl("--session", session_id, "--model", model)
    holder.at_prompt()
    other = repl("--model", model)
    other.type(f"/resume {session_id}")
    other.expect(rf"error: session {session_id} is busy \(pid \d+")
    other.type("/exit")
    assert other.wait() == 0
    holder.term.send("\x04")
    assert holder.wait() == 0


def test_model_and_agent_without_arguments_and_switching_the_model(
    repl: Any, cli: Any, project: Path
) -> None:
    screen = repl(script=[{"text": "from the first"}])
    screen.type("/agent")
    screen.expect(r"agent build \(agents: .*build.*plan")
    screen.type("/agent build")
    screen.expect("already agent build")
    screen.type("/agent explore")
    screen.expect("explore is a subagent")
    screen.type("/sessions")
    screen.expect("no sessions in this project yet")
    other = cli.script([{"text": "from the second"}], name="other.json")
    screen.type(f"/model {other}")
    screen.expect(r"model scripted/other\.json")
    screen.type("hi")
    screen.expect("from the second")
    screen.type("/agent plan")
    screen.expect(r"agent plan: a new session starts with your next message")
    screen.type("/exit", prompt="plan ›")
    assert screen.wait() == 0


def test_without_a_model_the_session_opens_and_says_how_to_choose_one(repl: Any, cli: Any) -> None:
    cli.env.pop("OPENAI_API_KEY", None)
    screen = repl("--agent", "plan")
    screen.expect(r"no model chosen")
    screen.expect(r"agent plan · model none")
    screen.type("hello", prompt="plan ›")
    screen.expect(r"no model chosen: pick one with /model provider/model")
    screen.type("/model", prompt="plan ›")
    screen.expect(r"no model chosen: /model provider/model")
    screen.type("/model openai/gpt-5", prompt="plan ›")
    screen.expect(r"error: No API key for provider 'openai'")
    screen.type("//etc is a directory", prompt="plan ›")
    screen.expect(r"no model chosen: pick one")  # //text is a message, not a command
    screen.type("/exit", prompt="plan ›")
    assert screen.wait() == 0


def test_run_summary_shows_the_cost_of_a_priced_model(cli: Any, project: Path) -> None:
    user_config = cli.tmp / "config" / "tether.json"
    user_config.parent.mkdir(parents=True)
    price = {"input": 1_000_000, "output": 2_000_000}  # a dollar a token in, two out
    user_config.write_text(
        json.dumps({"provider": {"scripted": {"models": {"priced.json": {"cost": price}}}}})
    )
    model = cli.script([{"text": "priced"}], name="priced.json")
    result = cli.run("run", "hello", "--model", model, "--dir", str(project))
    assert result.code == 0, result.output
    found = re.search(r"([\d,]+) tokens in / ([\d,]+) out · \$([\d,.]+) ·", result.output)
    assert found is not None, result.output
    tokens_in, tokens_out, cost = (float(g.replace(",", "")) for g in found.groups())
    assert cost == tokens_in + 2 * tokens_out
    unpriced = cli.run(
        "run", "hello", "--model", cli.script([{"text": "x"}], name="free.json"), "--dir", str(project)
    )
    assert "tokens in / " in unpriced.output and "$" not in unpriced.output


def test_hostile_text_in_titles_and_command_arguments_is_shown_not_obeyed(
    repl: Any, cli: Any, project: Path
) -> None:
    model = cli.script([{"text": "ok"}], name="hostile.json")
    assert cli.run("run", "\x1b]0;pwned\x07 \x1b[2J title", "--model", model, "--dir", str(project)).code == 0
    screen = repl("--model", model)
    screen.type("/sessions")
    listed = screen.until_prompt()
    assert "title" in listed and "\x1b]0;pwned" not in screen.term.raw and "\x1b[2J" not in screen.term.raw
    screen.at_prompt()
    # pasted (bracketed paste): an escape sequence reaches the command's argument as text
    screen.term.send("\x1b[200~/agent \x1b[31mred\x1b[201~\r")
    screen.expect(r"no agent '\\x1b\[31mred'")
    assert "\x1b[31mred" not in screen.term.raw
    screen.type("/exit")
    assert screen.wait() == 0

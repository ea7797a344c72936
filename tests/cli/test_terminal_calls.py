"""What the terminal shows of each call (issue 37): an edit's diff of the file as written, a command's output tail,
a one-line summary for reads; and what an approval prompt shows before it asks: the change from the file, the
command with what the rules match and the sandbox that would hold it.

Real ``tether`` processes on a pseudo-terminal (``conftest.Pty``, the REPL's ``Screen``) and through pipes, with
scripted models.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.cli.test_repl import repl  # noqa: F401  (the interactive session's fixture)

# old_string with a trailing space: only the tool's lenient matching finds "beta", so the model's strings differ
# from the change as written (the line " alpha" and "-beta" only a diff of the file shows)
EDIT = {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "beta ", "new_string": "gamma"}}
BASH = {"name": "bash", "arguments": {"command": "seq 1 12; echo finished"}}


def _user_config(cli: Any, config: dict[str, Any]) -> None:
    path = cli.tmp / "config" / "tether.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")


def _after(text: str, marker: str) -> list[str]:
    """The lines after the last line that holds ``marker``."""
    lines = text.splitlines()
    index = max(i for i, line in enumerate(lines) if marker in line)
    return lines[index + 1 :]


def test_an_edit_shows_the_diff_of_the_file_as_written_on_a_terminal(cli: Any, project: Path) -> None:
    model = cli.script([{"tool_calls": [EDIT]}, {"text": "Edited."}])
    term = cli.pty("run", "edit", "--model", model, "--dir", str(project), "--yes")
    term.expect(r"── done")
    assert term.wait() == 0, term.text
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"
    text = term.text
    assert re.search(r"✓ edit notes\.txt .*\+1 -1", text), text
    after = _after(text, "✓ edit notes.txt")
    assert after[:4] == ["    @@ -1,2 +1,2 @@", "     alpha", "    -beta", "    +gamma"], text
    assert "(2 lines)" not in text


def test_a_bash_call_shows_the_tail_of_its_output_and_its_exit(cli: Any, project: Path) -> None:
    model = cli.script([{"tool_calls": [BASH]}, {"text": "Ran."}])
    term = cli.pty("run", "count", "--model", model, "--dir", str(project), "--yes")
    term.expect(r"── done")
    assert term.wait() == 0, term.text
    after = _after(term.text, "✓ bash seq 1 12; echo finished")
    assert after[:6] == [
        "    │ … 8 earlier lines",
        "    │ 9",
        "    │ 10",
        "    │ 11",
        "    │ 12",
        "    │ finished",
    ], term.text
    assert re.search(r"✓ bash seq 1 12; echo finished .*exit 0", term.text), term.text


def test_the_tail_and_the_diff_follow_the_terminal_config(cli: Any, project: Path) -> None:
    _user_config(cli, {"terminal": {"bash_tail": 2, "diff_lines": 1}})
    model = cli.script([{"tool_calls": [BASH, EDIT]}, {"text": "Done."}])
    result = cli.run("run", "go", "--model", model, "--dir", str(project), "--yes")
    assert result.code == 0, result.output
    out = result.stdout
    assert _after(out, "✓ bash")[:3] == ["    │ … 11 earlier lines", "    │ 12", "    │ finished"], out
    assert _after(out, "✓ edit")[:2] == ["    @@ -1,2 +1,2 @@", "    … 3 more diff lines"], out
    _user_config(cli, {"terminal": {"bash_tail": 0, "diff_lines": 0}})
    (project / "notes.txt").write_text("alpha\nbeta\n")
    result = cli.run("run", "go", "--model", model, "--dir", str(project), "--yes")
    assert result.code == 0, result.output
    assert "│" not in result.stdout and "@@" not in result.stdout, result.stdout


def test_quiet_shows_neither_tail_nor_diff(cli: Any, project: Path) -> None:
    model = cli.script([{"tool_calls": [BASH, EDIT]}, {"text": "Done."}])
    result = cli.run("run", "go", "--quiet", "--model", model, "--dir", str(project), "--yes")
    assert result.code == 0, result.output
    assert result.stdout == "Done.\n"


def test_reads_and_searches_have_a_one_line_summary(cli: Any, project: Path) -> None:
    calls = [
        {"name": "read", "arguments": {"path": "notes.txt"}},
        {"name": "grep", "arguments": {"pattern": "a", "include": "notes*"}},
        {"name": "glob", "arguments": {"pattern": "notes*"}},
        {"name": "write", "arguments": {"path": "new.txt", "content": "one\ntwo\n"}},
    ]
    model = cli.script([{"tool_calls": calls}, {"text": "Looked."}])
    result = cli.run("run", "look", "--model", model, "--dir", str(project), "--yes")
    assert result.code == 0, result.output
    out = result.stdout
    assert re.search(r"✓ read notes\.txt .*lines 1-2 of 2$", out, re.M), out
    assert re.search(r"✓ grep a .*2 matches$", out, re.M), out
    assert re.search(r"✓ glob notes\* .*1 file$", out, re.M), out
    assert re.search(r"✓ write new\.txt .*\+2 -0 \(new file\)$", out, re.M), out
    assert _after(out, "✓ write new.txt")[:3] == ["    @@ -0,0 +1,2 @@", "    +one", "    +two"], out
    assert "lines)" not in out


def test_the_approval_prompt_shows_the_change_from_the_file(repl: Any, project: Path) -> None:  # noqa: F811
    screen = repl(
        script=[{"tool_calls": [EDIT]}, {"text": "Edited."}], config={"permission": {"edit": "ask"}}
    )
    screen.type("edit the notes")
    screen.expect(r"permission asked: edit")
    shown = screen.expect(r"choice \[o/")
    assert "the change (from the file as it is now):" in shown, shown
    lines = [line.strip() for line in shown.splitlines()]
    start = lines.index("--- a/notes.txt")
    assert lines[start : start + 6] == [
        "--- a/notes.txt",
        "+++ b/notes.txt",
        "@@ -1,2 +1,2 @@",
        "alpha",
        "-beta",
        "+gamma",
    ]
    screen.term.send("o\n")
    screen.expect(r"── done")
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text


def test_the_approval_prompt_of_a_command_shows_its_forms_and_its_sandbox(repl: Any) -> None:  # noqa: F811
    command = {"name": "bash", "arguments": {"command": "sudo -n /bin/echo hi", "description": "say hi"}}
    screen = repl(
        script=[{"tool_calls": [command]}, {"text": "Said."}], config={"permission": {"bash": "ask"}}
    )
    screen.type("say hi")
    screen.expect(r"permission asked: bash")
    shown = screen.expect(r"choice \[o/")
    assert "command: sudo -n /bin/echo hi" in shown, shown
    runs = re.search(r"runs as: (.*)", shown)
    assert runs is not None and "echo hi" in runs.group(1) and "sudo -n /bin/echo hi" in runs.group(1), shown
    assert "says: say hi" in shown, shown
    assert re.search(
        r"sandbox: (bubblewrap: writes only to|landlock: writes only to|none: the command runs)", shown
    )
    screen.term.send("r\n")
    screen.expect(r"── ")
    screen.type("/exit")
    assert screen.wait() == 0, screen.term.text

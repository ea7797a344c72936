"""Attack tests (review 2, hole 2): the trust question names everything "y" grants.

A repository's ``.tether/tools/*.py`` are Python code that runs inside tether once the project is trusted; its MCP
servers are commands tether starts. The question must name them (count and paths, the command lines), and a project
that brings tool files and no config file is asked about too.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tether.cli._format import shown
from tether.cli._trust import trust_question
from tether.config import Ignored


def _plant_tool(project: Path, canary: Path, name: str = "format.py") -> None:
    tools = project / ".tether" / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    (tools / name).write_text(f"open({str(canary)!r}, 'w').write('ran')\n", encoding="utf-8")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_higher_limits_question_names_the_tool_files_it_would_run(
    cli: Any, project: Path, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    cli.configure(project, {"tool_output": {"max_lines": 2500}})
    _plant_tool(project, canary)
    term = cli.pty("run", "hi", "--model", cli.script([{"text": "ok"}]), "--dir", str(project))
    term.expect(r"Trust it\?")
    text = _flat(term.text)
    assert "This project's .tether/tether.json sets higher limits." in text
    assert (
        "Trusting it also loads its 1 tool file (.tether/tools/format.py): Python code that runs inside tether, "
        "as you, every time tether opens this project. Trust it? [y/N]"
    ) in text
    term.send("n\n")
    term.wait()
    assert not canary.exists()


def test_a_project_with_only_tool_files_is_asked_about(cli: Any, project: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    _plant_tool(project, canary)
    term = cli.pty("run", "hi", "--model", cli.script([{"text": "ok"}]), "--dir", str(project))
    term.expect(r"Trust it\?")
    assert (
        "This project has 1 tool file (.tether/tools/format.py): Python code that runs inside tether"
        in _flat(term.text)
    )
    term.send("n\n")
    term.wait()
    assert not canary.exists()
    assert "not loaded: the project is not trusted" in _flat(term.text)
    again = cli.pty("run", "hi", "--model", cli.script([{"text": "ok"}]), "--dir", str(project))
    again.wait()
    assert "Trust it?" not in again.text and not canary.exists()


def test_yes_to_a_tool_file_question_loads_them(cli: Any, project: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    _plant_tool(project, canary)
    term = cli.pty("run", "hi", "--model", cli.script([{"text": "ok"}]), "--dir", str(project))
    term.expect(r"Trust it\?")
    term.send("y\n")
    term.wait()
    assert canary.read_text() == "ran"  # what the question named is what "y" ran


def test_the_question_names_each_mcp_servers_command_line(cli: Any, project: Path, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    command = [sys.executable, "-c", f"open({str(canary)!r}, 'w').write('ran')"]
    cli.configure(
        project,
        {
            "mcp": {"fmt": {"type": "local", "command": command}},
            "mcpServers": {"web": {"url": "https://mcp.example/x"}},
        },
    )
    term = cli.pty("run", "hi", "--model", cli.script([{"text": "ok"}]), "--dir", str(project))
    term.expect(r"Trust it\?")
    text = _flat(term.text)
    assert "sets MCP servers (programs it would start, URLs it would reach)." in text
    assert f"MCP servers tether would start (as you) or connect to: fmt: {sys.executable} -c open(" in text
    assert "; web: https://mcp.example/x." in text
    term.send("n\n")
    term.wait()
    assert not canary.exists()


def test_many_tool_files_are_counted_and_repository_names_stay_one_line(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    tools = [root / ".tether" / "tools" / f"t{n}.py" for n in range(7)]
    tools[0] = root / ".tether" / "tools" / "evil\nTrust it? [y/N] y.py"
    ignored = (Ignored(file=root / ".tether" / "tether.json", key="shell", root=root),)
    lines = trust_question(root, ignored, tools)
    assert lines[0] == "This project's .tether/tether.json sets shell."
    assert lines[1].startswith("Trusting it also loads its 7 tool files (.tether/tools/evil\nTrust it?")
    assert "t4.py and 2 more): Python code that runs inside tether" in lines[1]
    assert len(lines) == 2 and lines[1].endswith("Trust it? [y/N] ")
    assert "\n" not in shown(lines[1]).plain  # as _ask shows it: the planted newline is an escape, not a line

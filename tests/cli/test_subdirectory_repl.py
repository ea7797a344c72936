"""The interactive session started in a subdirectory (``proj/pkg``) works in the project, on a real pty."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .test_repl import Screen


def test_the_interactive_session_in_a_subdirectory_works_in_the_project(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    cli.env["TMPDIR"] = str(
        tmp_path / "tmp"
    )  # the project lies in the temp directory, readable without asking
    cli.env["PROMPT_TOOLKIT_NO_CPR"] = "1"
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / ".git").mkdir()
    (proj / "README.md").write_text("root readme\n", encoding="utf-8")
    (proj / "pkg" / "x.txt").write_text("pkg x\n", encoding="utf-8")
    calls = [
        {"name": "read", "arguments": {"path": "../README.md"}},
        {"name": "read", "arguments": {"path": "x.txt"}},
    ]
    model = cli.script([{"tool_calls": calls}, {"text": "Both read."}])
    screen = Screen(cli.pty("--model", model, cwd=proj / "pkg"))
    try:
        screen.expect(r"session new")
        shown = screen.type("read them")
        shown += screen.expect("Both read.")
        assert "permission asked" not in shown, shown
        screen.expect(r"── done · 2 steps · 2 tool calls")
        screen.type("/exit")
        assert screen.wait() == 0, screen.term.text
    finally:
        if screen.term.proc.poll() is None:
            screen.term.proc.kill()
            screen.term.proc.wait()
    (listed,) = cli.json(
        "sessions", "--json", "--dir", str(proj)
    )  # the project's session, listed from its root
    timeline = cli.json("session", "show", listed["id"], "--json")
    parts = [
        p for i in timeline["timeline"] if i["type"] == "step" for p in i["parts"] if p["type"] == "tool"
    ]
    assert [p["state"] for p in parts] == ["completed", "completed"]
    assert "root readme" in json.dumps(parts[0]) and "pkg x" in json.dumps(parts[1])

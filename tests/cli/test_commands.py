"""The inspection commands in a subprocess: help, demo, tools, tool call, permissions, sessions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def test_help_lists_every_command_with_examples(cli: Any) -> None:
    result = cli.run("--help")
    assert result.code == 0
    for command in ("run", "demo", "sessions", "session", "tools", "tool", "permissions"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.M), command
    run_help = cli.run("run", "--help")
    assert "Examples:" in run_help.stdout
    assert "--deny-asks" in run_help.stdout


def test_an_unknown_option_is_a_usage_error(cli: Any) -> None:
    assert cli.run("run", "--bogus").code == 2


def test_demo_fixes_the_sample_project_through_the_real_runtime(cli: Any) -> None:
    result = cli.run("demo", "--keep")
    assert result.code == 0, result.output
    out = result.stdout
    assert "RECORDING" in out
    assert "tether run --model openai/gpt-5" in out and "OPENAI_API_KEY" in out
    assert "allowed once (--yes): edit pricing/cart.py" in out
    assert "✓ edit pricing/cart.py" in out
    assert "full output:" in out  # the report's output was bounded and retained
    assert "Ran 3 tests" in out and "OK" in out
    project = Path(out.split("kept the project at ", 1)[1].split()[0])
    assert "amount * (1 - percent / 100)" in (project / "pricing" / "cart.py").read_text()
    session_id = re.search(r"tether session show (ses_\w+)", out)
    assert session_id is not None
    timeline = cli.json("session", "show", session_id.group(1), "--json")
    tools = [
        p["tool"]
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    ]
    assert tools == ["bash", "grep", "read", "edit", "bash", "bash"]
    edit = next(
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p.get("tool") == "edit"
    )
    assert any(record.get("reply") == "once" for record in edit["permissions"]), edit["permissions"]
    report = next(
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p.get("input", {}).get("command", "").endswith("report.py")
    )
    assert report["output_paths"] and Path(report["output_paths"][0]).is_file()


def test_tools_shows_the_catalog_and_why_a_tool_is_hidden(cli: Any, project: Path) -> None:
    build = cli.run("tools", "--dir", str(project))
    assert build.code == 0, build.output
    assert re.search(r"^bash\s+yes", build.stdout, re.M)
    explore = cli.run("tools", "--agent", "explore", "--dir", str(project))
    assert re.search(r'^bash\s+hidden\s+denied by rule \* "\*" -> deny \(agent\)', explore.stdout, re.M)
    assert re.search(r"^read\s+yes", explore.stdout, re.M)
    cli.configure(project, {"permission": {"bash": "deny"}})
    denied = cli.run("tools", "--dir", str(project))
    # an untrusted project's rule: the tighten-only `project` layer
    assert re.search(r'^bash\s+hidden\s+denied by rule bash "\*" -> deny \(project\)', denied.stdout, re.M)


def test_tool_call_settles_through_bounding(cli: Any, project: Path) -> None:
    result = cli.run("tool", "call", "bash", '{"command": "seq 1 5000"}', "--dir", str(project))
    assert result.code == 0, result.output
    assert "output truncated; full content saved to" in result.stdout
    saved = result.stderr.split("full output: ", 1)[1].split()[0]
    assert Path(saved).read_text().splitlines()[4999] == "5000"


def test_tool_call_failure_prints_the_model_visible_error_and_exits_1(cli: Any, project: Path) -> None:
    missing = cli.run("tool", "call", "read", '{"path": "missing.txt"}', "--dir", str(project))
    assert missing.code == 1
    assert "File not found" in missing.stderr
    invalid = cli.run("tool", "call", "read", '{"nope": 1}', "--dir", str(project))
    assert invalid.code == 1
    assert "Invalid input" in invalid.stderr
    assert cli.run("tool", "call", "read", "{not json", "--dir", str(project)).code == 2


def test_tool_call_respects_permissions_without_a_terminal(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    args = '{"path": "notes.txt", "old_string": "beta", "new_string": "x"}'
    rejected = cli.run("tool", "call", "edit", args, "--dir", str(project))
    assert rejected.code == 1
    assert "no terminal to ask" in rejected.stderr
    allowed = cli.run("tool", "call", "edit", args, "--dir", str(project), "--yes")
    assert allowed.code == 0, allowed.output
    assert (project / "notes.txt").read_text() == "alpha\nx\n"


def test_tool_call_is_recorded_as_a_session_with_its_permission_decisions(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    args = '{"path": "notes.txt", "old_string": "beta", "new_string": "x"}'
    result = cli.run("tool", "call", "edit", args, "--dir", str(project), "--yes")
    assert result.code == 0, result.output
    session_id = re.search(r"session (ses_\w+)", result.stderr)
    assert session_id is not None, result.stderr
    timeline = cli.json("session", "show", session_id.group(1), "--json")
    steps = [item for item in timeline["timeline"] if item["type"] == "step"]
    tools = [p for item in steps for p in item["parts"] if p["type"] == "tool"]
    assert [(t["tool"], t["state"], t["input"]["path"]) for t in tools] == [
        ("edit", "completed", "notes.txt")
    ]
    assert any(record.get("reply") == "once" for record in tools[0]["permissions"]), tools[0]["permissions"]
    texts = [p for item in steps for p in item["parts"] if p["type"] == "text"]
    assert texts == []  # the built-in model only makes the call
    listed = cli.run("sessions", "--dir", str(project))
    assert (
        session_id.group(1)[18:24] in listed.stdout and "tether tool call edit" in listed.stdout
    )  # short id


def test_permissions_add_list_explain_remove(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"bash": {"*": "ask", "rm *": "deny"}}})
    # trusted: the project's rules are the user's own, so a saved approval may answer their ask
    cli.env["TETHER_TRUST"] = "1"
    asked = cli.run("permissions", "--explain", "bash", "git status", "--dir", str(project))
    assert 'git status: ask by bash "*" (config)' in asked.stdout, asked.output
    added = cli.run("permissions", "add", "bash", "git status*", "--dir", str(project))
    assert added.code == 0, added.output
    approval_id = re.search(r"saved (sav_\w+)", added.stdout)
    assert approval_id is not None
    listed = cli.run("permissions", "list", "--dir", str(project))
    assert approval_id.group(1) in listed.stdout and "git status*" in listed.stdout
    allowed = cli.run("permissions", "--explain", "bash", "git status", "--dir", str(project))
    assert 'git status: allow by bash "git status*" (saved)' in allowed.stdout, allowed.output
    denied = cli.run("permissions", "--explain", "bash", "rm -rf build", "--dir", str(project))
    assert 'rm -rf build: deny by bash "rm *" (config)' in denied.stdout
    assert cli.run("permissions", "remove", approval_id.group(1), "--dir", str(project)).code == 0
    assert "No saved approvals" in cli.run("permissions", "--dir", str(project)).stdout
    assert cli.run("permissions", "remove", approval_id.group(1), "--dir", str(project)).code == 2


def test_sessions_says_how_to_start_when_there_are_none(cli: Any, project: Path) -> None:
    result = cli.run("sessions", "--dir", str(project))
    assert result.code == 0
    assert "No sessions" in result.stdout and "tether demo" in result.stdout


def test_session_show_of_an_unknown_id_exits_2(cli: Any) -> None:
    result = cli.run("session", "show", "ses_missing")
    assert result.code == 2
    assert "ses_missing" in result.stderr


def test_global_data_dir_option_wins(cli: Any, project: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    model = cli.script([{"text": "hi"}])
    assert cli.run("--data-dir", str(other), "run", "x", "--model", model, "--dir", str(project)).code == 0
    assert (other / "tether.db").is_file()
    assert "No sessions" in cli.run("sessions", "--dir", str(project)).stdout
    assert "short ids:" in cli.run("--data-dir", str(other), "sessions", "--dir", str(project)).stdout

"""``tether run`` in a subprocess: streaming, approvals without a terminal, exit codes, config errors, --continue."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

EDIT = {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "beta", "new_string": "gamma"}}


def _tool_parts(timeline: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p
        for item in timeline["timeline"]
        if item["type"] == "step"
        for p in item["parts"]
        if p["type"] == "tool"
    ]


def test_run_streams_text_and_settled_tool_lines(cli: Any, project: Path) -> None:
    model = cli.script(
        [
            {
                "text": "Reading the notes.",
                "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}],
            },
            {"text": "The notes say alpha and beta."},
        ]
    )
    result = cli.run("run", "what do the notes say?", "--model", model, "--dir", str(project))
    assert result.code == 0, result.output
    assert "Reading the notes." in result.stdout
    assert "✓ read notes.txt" in result.stdout
    assert "The notes say alpha and beta." in result.stdout
    assert "2 steps · 1 tool call" in result.stderr
    assert "session ses_" in result.stderr


def test_run_without_terminal_rejects_asks_and_says_how_to_allow(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script([{"tool_calls": [EDIT]}, {"text": "I could not edit."}])
    result = cli.run("run", "edit the notes", "--model", model, "--dir", str(project))
    assert result.code == 0, result.output
    assert "rejected (no terminal to ask): edit notes.txt" in result.stdout
    assert "pass --yes" in result.stdout
    assert "✗ edit notes.txt" in result.stdout
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"


def test_run_yes_allows_asks_once(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script([{"tool_calls": [EDIT]}, {"text": "Edited."}])
    result = cli.run("run", "edit the notes", "--model", model, "--dir", str(project), "--yes")
    assert result.code == 0, result.output
    assert "allowed once (--yes): edit notes.txt" in result.stdout
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"


def test_deny_asks_rejects_even_a_request_a_terminal_could_answer(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script([{"tool_calls": [EDIT]}, {"text": "ok"}])
    result = cli.run("run", "edit", "--model", model, "--dir", str(project), "--deny-asks")
    assert result.code == 0, result.output
    assert "rejected (--deny-asks)" in result.stdout


def test_contradicting_flags_are_a_usage_error(cli: Any, project: Path) -> None:
    result = cli.run("run", "x", "--model", "replay", "--dir", str(project), "--yes", "--deny-asks")
    assert result.code == 2
    assert "--yes and --deny-asks" in result.stderr


def test_broken_config_names_file_line_and_key_and_exits_2(cli: Any, project: Path) -> None:
    config = project / ".tether" / "tether.json"
    config.parent.mkdir()
    config.write_text('{\n  "permission": {\n    "edit": "sometimes"\n  }\n}\n', encoding="utf-8")
    result = cli.run("run", "x", "--model", "replay", "--dir", str(project))
    assert result.code == 2, result.output
    assert f"{config}:3" in result.stderr
    assert "permission.edit" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_model_is_a_usage_error_that_says_what_to_do(cli: Any, project: Path) -> None:
    result = cli.run("run", "x", "--dir", str(project))
    assert result.code == 2
    assert "--model provider/model" in result.stderr
    assert "tether demo" in result.stderr


def test_a_provider_failure_fails_the_turn_with_exit_1(cli: Any, project: Path) -> None:
    model = cli.script([{"error": "the scripted provider is down"}])
    result = cli.run("run", "x", "--model", model, "--dir", str(project))
    assert result.code == 1, result.output
    assert "the scripted provider is down" in result.output


def test_unknown_session_is_a_usage_error(cli: Any, project: Path) -> None:
    result = cli.run("run", "x", "--model", "replay", "--dir", str(project), "--session", "ses_nope")
    assert result.code == 2
    assert "ses_nope" in result.stderr


def test_continue_appends_a_turn_to_the_latest_session(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "first answer"}, {"text": "second answer"}])
    first = cli.run("run", "first question", "--model", model, "--dir", str(project))
    assert first.code == 0, first.output
    second = cli.run("run", "second question", "--model", model, "--dir", str(project), "--continue")
    assert second.code == 0, second.output
    assert "second answer" in second.stdout
    listed = cli.run("sessions", "--dir", str(project)).stdout.splitlines()
    assert len(listed) == 3, listed  # the header, one session, the note on short ids
    timeline = cli.json("session", "show", listed[1].split()[0], "--json")  # by its short id
    users = [item["text"] for item in timeline["timeline"] if item["type"] == "user"]
    assert users == ["first question", "second question"]


def test_continue_without_a_session_is_a_usage_error(cli: Any, project: Path) -> None:
    result = cli.run("run", "x", "--model", "replay", "--dir", str(project), "--continue")
    assert result.code == 2
    assert "no session to continue" in result.stderr


def test_agents_md_and_config_instructions_reach_the_model(cli: Any, project: Path) -> None:
    (project / "AGENTS.md").write_text("Always answer in French.\n", encoding="utf-8")
    (project / "STYLE.md").write_text("Prefer short functions.\n", encoding="utf-8")
    cli.configure(project, {"instructions": ["STYLE.md"]})
    model = cli.script([{"echo": "system"}])
    result = cli.run("run", "hello", "--model", model, "--dir", str(project))
    assert result.code == 0, result.output
    assert f"Instructions from: {project.resolve() / 'AGENTS.md'}" in result.stdout
    assert "Always answer in French." in result.stdout
    assert "Prefer short functions." in result.stdout


def test_session_show_records_the_rejected_ask_and_its_rule(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script([{"tool_calls": [EDIT]}, {"text": "ok"}])
    result = cli.run("run", "edit", "--model", model, "--dir", str(project))
    session_id = result.stderr.split("session ", 1)[1].split()[0]
    timeline = cli.json("session", "show", session_id, "--json")
    (edit,) = _tool_parts(timeline)
    assert edit["state"] == "error"
    assert "no one can approve" in edit["error"]
    shown = cli.run("session", "show", session_id)
    assert 'by rule edit "*" -> ask (project)' in shown.stdout, shown.stdout
    exported = json.loads(cli.run("session", "export", session_id).stdout)
    assert exported["format"] == "tether.session/2"
    assert [m["info"]["role"] for m in exported["messages"]] == ["user", "assistant", "assistant"]


@pytest.mark.anyio
async def test_a_runs_system_texts_read_the_instruction_files_where_the_environment_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted_hand_offs: Any
) -> None:
    # turn_system (tether run, the interactive session) reads the instruction files in the worker thread that
    # measures the turn's environment: one hand-off (each ~0.3 ms of a wake-up on a busy machine), not two
    from tether import Runtime
    from tether.cli._run import open_session, turn_system
    from tether.testing import ScriptedModel

    monkeypatch.setenv("TETHER_CONFIG_DIR", str(tmp_path / "config"))  # no user AGENTS.md from this machine
    project = tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("Use tabs.\n", encoding="utf-8")
    async with Runtime(data_dir=tmp_path / "data") as rt:
        location = await rt.location(project)
        session = await open_session(rt, location, session_id=None, continue_=False, agent="build")
        with counted_hand_offs() as hand_offs:
            instructions, system = await turn_system(rt, location, rt.config, session, ScriptedModel([]))
    assert len(hand_offs) == 1
    assert system[-1].endswith("Use tabs.\n") and instructions.texts == (system[-1],)
    assert instructions.refused == ()


def test_a_run_started_with_its_output_closed_does_its_work_and_says_nothing_broke(
    cli: Any, project: Path
) -> None:
    # ``tether run ... >&-``: Python starts with sys.stdout None; the turn's lines go nowhere, not into tracebacks
    model = cli.script(
        [
            {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
            {"text": "The notes say alpha."},
        ]
    )
    argv = cli.argv(["run", "what do the notes say?", "--model", model, "--dir", str(project)])
    done = subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" >&-', "sh", *argv],
        env=cli.env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert "2 steps · 1 tool call" in done.stderr  # the summary still reaches the stream that is there

"""``tether run`` and the store: one session one writer, a failing store ends the turn in one line, the summary
comes from the store, a prompt that is not UTF-8 is recorded."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import anyio

    from tether.session import SQLiteStore


    async def main(db: Path, session_id: str) -> None:
        async with SQLiteStore(db) as store:
            await store.claim(session_id)
            print("HOLDING", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)


    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
    """
)


def _session_id(output: str) -> str:
    return "ses_" + output.split("session ses_", 1)[1].split()[0]


def test_a_session_run_by_a_live_process_is_busy_and_a_dead_ones_claim_is_reclaimed(
    cli: Any, project: Path, tmp_path: Path
) -> None:
    model = cli.script([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    first = cli.run("run", "first", "--model", model, "--dir", str(project))
    assert first.code == 0, first.output
    session_id = _session_id(first.stderr)
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    with subprocess.Popen(
        [sys.executable, str(script), str(cli.data_dir / "tether.db"), session_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == "HOLDING"
            busy = cli.run("run", "second", "--model", model, "--dir", str(project), "--continue")
            assert busy.code == 2, busy.output
            assert f"session {session_id} is busy (pid {holder.pid})" in busy.stderr
            assert "Traceback" not in busy.output
            by_id = cli.run("run", "second", "--model", model, "--dir", str(project), "--session", session_id)
            assert by_id.code == 2 and "is busy" in by_id.stderr
        finally:
            holder.kill()  # SIGKILL: its claim stays in the file, left by a dead process
    again = cli.run("run", "second", "--model", model, "--dir", str(project), "--continue")
    assert again.code == 0, again.output
    assert "two" in again.stdout


def test_a_store_that_refuses_writes_ends_the_run_with_one_line_and_exit_1(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "ready"}, {"text": "answered"}])
    first = cli.run("run", "first", "--model", model, "--dir", str(project))
    assert first.code == 0, first.output
    conn = sqlite3.connect(cli.data_dir / "tether.db")
    conn.execute(
        "CREATE TRIGGER refuse BEFORE INSERT ON parts BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    )
    conn.commit()
    conn.close()
    result = cli.run("run", "go", "--model", model, "--dir", str(project), "--continue")
    assert result.code == 1, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "disk on fire" in errors[0], result.stderr


def test_ctrl_c_summary_counts_the_step_the_store_has(cli: Any, project: Path) -> None:
    model = cli.script(
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 60"}}]},
            {"text": "x"},
        ]
    )
    term = cli.pty("run", "wait a minute", "--model", model, "--dir", str(project), "--yes")
    term.expect(r"│ started")
    term.send("\x03")
    assert term.wait() == 130, term.text
    assert "0 steps" not in term.text
    assert "1 step · 1 tool call, 1 failed" in term.text, term.text


def test_a_prompt_that_is_not_utf8_is_recorded_with_visible_escapes(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "noted"}])
    argv = [*cli.argv(["run"]), "--model", model, "--dir", str(project)]
    done = subprocess.run(
        [os.fsencode(a) for a in argv] + [b"caf\xe9 \xff"],
        env=cli.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    timeline = cli.json("session", "show", _session_id(stderr), "--json")
    users = [item["text"] for item in timeline["timeline"] if item["type"] == "user"]
    assert users == ["caf\\xe9 \\xff"]


def test_model_text_and_file_names_that_are_not_utf8_are_shown_with_escapes_never_a_crash(
    cli: Any, project: Path
) -> None:
    with open(os.path.join(os.fsencode(project), b"bad\xffname.txt"), "wb") as f:
        f.write(b"secret\n")
    steps = (
        '[{"text": "looking \\ud800", "tool_calls": [{"name": "list", "arguments": {"path": "."}},'
        ' {"name": "read", "arguments": {"path": "bad\\\\xffname.txt"}}]}, {"text": "done \\udcff"}]'
    )
    script = cli.tmp / "odd.json"
    script.write_text(steps, encoding="utf-8")
    result = cli.run("run", "look", "--model", f"scripted:{script}", "--dir", str(project))
    assert result.code == 0, result.output
    assert "Traceback" not in result.output
    assert "looking \\ud800" in result.stdout and "done \\xff" in result.stdout
    shown = cli.run("session", "show", _session_id(result.stderr))
    assert shown.code == 0 and "Traceback" not in shown.output, shown.output
    assert "bad\\xffname.txt" in shown.stdout
    assert "1: secret" in shown.stdout

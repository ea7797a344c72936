"""Sessions you can find again: --continue skips tool-call sessions, id prefixes, sessions --json, delete, prune."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tether.cli._sessions import parse_age
from tether.errors import UsageError

TABLES = ("sessions", "messages", "parts", "inputs", "events", "claims")


def _ids(cli: Any, project: Path) -> list[str]:
    return [row["id"] for row in cli.json("sessions", "--dir", str(project), "--json")]


def _rows(cli: Any) -> dict[str, int]:
    conn = sqlite3.connect(cli.data_dir / "tether.db")
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def _ask_committed(cli: Any) -> None:
    """Wait until a run waiting at its approval prompt has committed its last write, the call's part holding the ask
    (written just before the prompt shows, committed by the store's writer thread on its own time); it writes nothing
    more until the reply. Polls the file (a hang guard of 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        conn = sqlite3.connect(cli.data_dir / "tether.db")
        try:
            rows = conn.execute("SELECT data FROM parts WHERE type = 'tool'").fetchall()
        finally:
            conn.close()
        if any('"permission.asked"' in data for (data,) in rows):
            return
        assert time.monotonic() < deadline, "the ask was never committed"
        time.sleep(0.02)


def test_continue_skips_the_session_tether_tool_call_created(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "first answer"}, {"text": "second answer"}])
    first = cli.run("run", "first question", "--model", model, "--dir", str(project))
    assert first.code == 0, first.output
    called = cli.run("tool", "call", "read", '{"path": "notes.txt"}', "--dir", str(project))
    assert called.code == 0, called.output
    second = cli.run(
        "run", "second question", "--model", model, "--dir", str(project), "-c", "--format", "json"
    )
    assert second.code == 0, second.output
    start = json.loads(second.stdout.splitlines()[0])
    assert start["continued"] is True
    rows = cli.json("sessions", "--dir", str(project), "--json")
    kinds = {row["id"]: row["kind"] for row in rows}
    assert kinds[start["session"]] == "conversation"
    assert sorted(kinds.values()) == ["conversation", "tool-call"]
    timeline = cli.json("session", "show", start["session"], "--json")
    users = [item["text"] for item in timeline["timeline"] if item["type"] == "user"]
    assert users == ["first question", "second question"]
    listed = cli.run("sessions", "--dir", str(project))
    assert "done (tool-call)" in listed.stdout


def test_continue_with_only_a_tool_call_session_is_a_usage_error(cli: Any, project: Path) -> None:
    assert cli.run("tool", "call", "read", '{"path": "notes.txt"}', "--dir", str(project)).code == 0
    result = cli.run("run", "x", "--model", "replay", "--dir", str(project), "--continue")
    assert result.code == 2 and "no session to continue" in result.stderr


def test_a_unique_prefix_names_a_session_everywhere_and_an_ambiguous_one_lists_candidates(
    cli: Any, project: Path
) -> None:
    model = cli.script([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    for prompt in ("a", "b"):
        assert cli.run("run", prompt, "--model", model, "--dir", str(project)).code == 0
    first, second = _ids(cli, project)
    common = 4
    while first[common] == second[common]:
        common += 1
    prefix = first[: common + 1]
    shown = cli.json("session", "show", prefix, "--json")
    assert shown["session"]["id"] == first
    exported = cli.json("session", "export", prefix)
    assert exported["session"]["id"] == first
    again = cli.run("run", "c", "--model", model, "--dir", str(project), "--session", prefix, "-q")
    assert again.code == 0 and again.stdout.strip(), again.output
    users = [
        i["text"] for i in cli.json("session", "show", first, "--json")["timeline"] if i["type"] == "user"
    ]
    assert users[-1] == "c" and len(users) == 2
    ambiguous = cli.run("session", "show", first[:common])
    assert ambiguous.code == 2
    assert "ambiguous" in ambiguous.stderr and first in ambiguous.stderr and second in ambiguous.stderr
    missing = cli.run("session", "show", "ses_zzz")
    assert missing.code == 2 and "Session not found: ses_zzz" in missing.stderr
    wildcard = cli.run("session", "delete", "ses_%", "--yes")
    assert wildcard.code == 2 and "not found" in wildcard.stderr
    assert len(_ids(cli, project)) == 2


def test_delete_removes_rows_and_retained_outputs_and_leaves_others(cli: Any, project: Path) -> None:
    (project / "big.txt").write_text("".join(f"line {n}\n" for n in range(5000)), encoding="utf-8")
    model = cli.script(
        [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "cat big.txt"}}]},
            {"text": "ok"},
            {"text": "x"},
        ]
    )
    assert cli.run("run", "keep me", "--model", model, "--dir", str(project), "--yes").code == 0
    kept_rows = _rows(cli)
    result = cli.run("run", "delete me", "--model", model, "--dir", str(project), "--yes", "--format", "json")
    assert result.code == 0, result.output
    doomed = json.loads(result.stdout.splitlines()[0])["session"]
    outputs = cli.data_dir / "tool-output" / doomed
    assert any(outputs.iterdir())
    deleted = cli.run("session", "delete", doomed, "--yes")
    assert deleted.code == 0, deleted.output
    assert f"deleted {doomed}" in deleted.stdout
    assert not outputs.exists()
    after = _rows(cli)
    assert {t: n for t, n in after.items() if t != "claims"} == {
        t: n for t, n in kept_rows.items() if t != "claims"
    }
    assert _ids(cli, project) != [] and doomed not in _ids(cli, project)
    gone = cli.run("session", "show", doomed)
    assert gone.code == 2


def test_delete_without_a_terminal_needs_yes(cli: Any, project: Path) -> None:
    assert cli.run("run", "x", "--model", cli.script([{"text": "ok"}]), "--dir", str(project)).code == 0
    (session,) = _ids(cli, project)
    result = cli.run("session", "delete", session)
    assert result.code == 2 and "pass --yes" in result.stderr
    assert _ids(cli, project) == [session]


def test_delete_asks_in_a_terminal(cli: Any, project: Path) -> None:
    assert cli.run("run", "x", "--model", cli.script([{"text": "ok"}]), "--dir", str(project)).code == 0
    (session,) = _ids(cli, project)
    no = cli.pty("session", "delete", session[:-3])
    no.expect(r"\[y/N\]")
    no.send("n\n")
    assert no.wait() == 0
    assert "nothing deleted" in no.text
    assert _ids(cli, project) == [session]
    yes = cli.pty("session", "delete", session)
    yes.expect(r"\[y/N\]")
    yes.send("y\n")
    assert yes.wait() == 0
    assert f"deleted {session}" in yes.text
    assert _ids(cli, project) == []


def test_a_session_a_live_run_holds_is_not_deleted_or_pruned(cli: Any, project: Path) -> None:
    cli.configure(project, {"permission": {"edit": "ask"}})
    model = cli.script(
        [
            {
                "tool_calls": [
                    {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "a", "new_string": "b"}}
                ]
            },
            {"text": "ok"},
        ]
    )
    live = cli.pty("run", "edit", "--model", model, "--dir", str(project))
    try:
        live.expect(r"choice \[o/(?:a|always)/r/f\]")
        _ask_committed(cli)  # else the rows counted below may still grow with the run's own writes
        (session,) = _ids(cli, project)
        before = _rows(cli)
        refused = cli.run("session", "delete", session, "--yes")
        assert refused.code == 2
        assert re.search(rf"session {session} is in use by a running tether \(pid \d+", refused.stderr)
        conn = sqlite3.connect(cli.data_dir / "tether.db")  # old enough to prune, had no run hold it
        conn.execute("UPDATE sessions SET updated = updated - 40 * 86400000 WHERE id = ?", (session,))
        conn.commit()
        conn.close()
        pruned = cli.run("sessions", "prune", "--older-than", "30d")
        assert pruned.code == 0
        assert f"kept session {session} is in use" in pruned.stderr
        assert _rows(cli) == before
    finally:
        live.send("r\n")
        live.wait()
    assert cli.run("session", "delete", session, "--yes").code == 0


def test_prune_deletes_only_sessions_older_than_the_age(cli: Any, project: Path) -> None:
    model = cli.script([{"text": "ok"}, {"text": "ok"}])
    for prompt in ("old", "new"):
        assert cli.run("run", prompt, "--model", model, "--dir", str(project)).code == 0
    new, old = _ids(cli, project)
    conn = sqlite3.connect(cli.data_dir / "tether.db")
    conn.execute("UPDATE sessions SET updated = updated - 40 * 86400000 WHERE id = ?", (old,))
    conn.commit()
    conn.close()
    dry = cli.run("sessions", "prune", "--older-than", "30d", "--dry-run")
    assert dry.code == 0, dry.output
    assert f"would delete {old}" in dry.stdout and new not in dry.stdout
    assert "would delete 1 session not updated in 30d" in dry.stderr
    assert len(_ids(cli, project)) == 2
    done = cli.run("sessions", "prune", "--older-than", "30d")
    assert done.code == 0, done.output
    assert f"deleted {old}" in done.stdout
    assert _ids(cli, project) == [new]
    bad = cli.run("sessions", "prune", "--older-than", "30 days")
    assert bad.code == 2 and "not an age" in bad.stderr


def test_parse_age_units_and_refusals() -> None:
    assert parse_age("30d") == 30 * 86400
    assert parse_age(" 2W ") == 2 * 604800
    assert parse_age("90s") == 90 and parse_age("5m") == 300 and parse_age("1h") == 3600
    for bad in ("", "d", "0d", "-1d", "1.5d", "1y", "١d"):
        with pytest.raises(UsageError):
            parse_age(bad)


def test_sessions_json_is_an_empty_list_without_sessions(cli: Any, project: Path) -> None:
    assert cli.json("sessions", "--dir", str(project), "--json") == []

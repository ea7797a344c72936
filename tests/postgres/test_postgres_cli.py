"""The CLI on a shared PostgreSQL store: two workers (separate data directories, one ``TETHER_STORE_URL``) see, continue
and delete each other's sessions; a bad URL is a clear error without the password."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli
from tests.postgres.server import PASSWORD, PostgresServer


def worker(tmp_path: Path, name: str, url: str) -> Cli:
    (tmp_path / name).mkdir()
    cli = Cli(tmp_path / name)
    cli.env["TETHER_STORE_URL"] = url
    return cli


def test_workers_sharing_one_database_see_continue_and_delete_each_others_sessions(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.database()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("alpha\n", encoding="utf-8")
    one, two = worker(tmp_path, "one", url), worker(tmp_path, "two", url)
    model = one.script([{"text": "first answer"}, {"text": "second answer"}])
    first = one.run("run", "first question", "--model", model, "--dir", str(project), "--format", "json")
    assert first.code == 0, first.output
    session = json.loads(first.stdout.splitlines()[0])["session"]
    assert [row["id"] for row in two.json("sessions", "--dir", str(project), "--json")] == [session]
    second = two.run(
        "run", "second question", "--model", model, "--dir", str(project), "-c", "--format", "json"
    )
    assert second.code == 0, second.output
    assert json.loads(second.stdout.splitlines()[0])["session"] == session  # continued on the other worker
    timeline = one.json("session", "show", session[:10], "--json")
    assert [i["text"] for i in timeline["timeline"] if i["type"] == "user"] == [
        "first question",
        "second question",
    ]
    deleted = one.run("session", "delete", session, "--yes")
    assert deleted.code == 0, deleted.output
    assert two.json("sessions", "--dir", str(project), "--json") == []


def test_a_wrong_password_fails_the_command_clearly(postgres: PostgresServer, tmp_path: Path) -> None:
    cli = worker(tmp_path, "one", postgres.url(password="wrong-" + PASSWORD))
    result = cli.run("sessions", "--json")
    assert result.code != 0
    assert "password authentication failed" in result.stderr and "wrong-" not in result.output

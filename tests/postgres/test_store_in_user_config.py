"""The store named only in the user's config (issue 34, item 9): every command that opens the store opens that one.

Before, only ``tether run`` read the config's ``store``: ``tether sessions`` listed nothing, ``session show`` said
"not found", and each of them created ``<data>/tether.db`` beside the PostgreSQL store the config names.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import Cli
from tests.postgres.server import PASSWORD, PostgresServer


def _cli(tmp_path: Path, store: str) -> Cli:
    cli = Cli(tmp_path)
    cli.env.pop("TETHER_STORE_URL", None)
    config = tmp_path / "config"
    config.mkdir()
    (config / "tether.json").write_text(json.dumps({"store": store}), encoding="utf-8")
    return cli


def test_every_sessions_command_uses_the_store_of_the_user_config(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    url = postgres.database()
    cli = _cli(tmp_path, url)
    project = tmp_path / "proj"
    project.mkdir()
    model = cli.script([{"text": "the answer"}])
    ran = cli.run("run", "the question", "--model", model, "--dir", str(project), "--format", "json")
    assert ran.code == 0, ran.output
    session = json.loads(ran.stdout.splitlines()[0])["session"]

    assert [row["id"] for row in cli.json("sessions", "--dir", str(project), "--json")] == [session]
    shown = cli.json("session", "show", session, "--json")
    assert [i["text"] for i in shown["timeline"] if i["type"] == "user"] == ["the question"]
    exported = cli.json("session", "export", session)
    assert exported["session"]["id"] == session
    import psycopg

    with psycopg.connect(url, autocommit=True) as pg:  # last touched long ago: what prune looks for
        pg.execute("UPDATE sessions SET updated = 1000")
    pruned = cli.run("sessions", "prune", "--older-than", "1d", "--dry-run")
    assert pruned.code == 0, pruned.output
    assert f"would delete {session}" in pruned.stdout
    deleted = cli.run("session", "delete", session, "--yes")
    assert deleted.code == 0, deleted.output
    assert f"deleted {session}" in deleted.stdout
    assert cli.json("sessions", "--all", "--json") == []
    data = sorted(p.name for p in cli.data_dir.iterdir())
    assert not [name for name in data if name.startswith("tether.db")], data  # no SQLite store beside it


def test_an_unreachable_store_in_the_config_is_a_clear_usage_error(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    cli = _cli(tmp_path, postgres.url(password="wrong-" + PASSWORD))
    for args in (
        ("sessions",),
        ("session", "show", "ses_x"),
        ("run", "hi", "--model", cli.script([{"text": "x"}])),
    ):
        result = cli.run(*args)
        assert result.code == 2, result.output
        assert "password authentication failed" in result.stderr
        assert f'the store is set by "store" in {tmp_path / "config" / "tether.json"}' in result.stderr
        assert "Traceback" not in result.output and "wrong-" not in result.output
    assert not (cli.data_dir / "tether.db").exists()

"""A broken ``store`` is a clear usage error for every command that opens the store (issue 34, item 9).

Exit code 2, one line naming where the store was chosen (the config file, or ``$TETHER_STORE_URL``), never the
password, never a traceback, and no SQLite file created in its place. (With a real server: tests/postgres/
test_store_in_user_config.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.conftest import Cli


def _cli(tmp_path: Path, config: dict[str, object]) -> Cli:
    cli = Cli(tmp_path)
    cli.env.pop("TETHER_STORE_URL", None)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tether.json").write_text(json.dumps(config), encoding="utf-8")
    return cli


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://someone:s3cret@[::1/db",  # a host that does not parse
        "postgresql://someone:s3cret@127.0.0.1:1/db",  # nothing listens there
    ],
)
def test_a_broken_store_url_in_the_user_config_is_a_usage_error(tmp_path: Path, url: str) -> None:
    cli = _cli(tmp_path, {"store": url})
    project = tmp_path / "proj"
    project.mkdir()
    commands = [
        ("sessions", "--dir", str(project)),
        ("session", "show", "ses_x"),
        ("session", "export", "ses_x"),
        ("session", "delete", "ses_x", "--yes"),
        ("sessions", "prune", "--older-than", "1d", "--dry-run"),
        ("run", "hi", "--model", cli.script([{"text": "x"}]), "--dir", str(project)),
    ]
    for args in commands:
        result = cli.run(*args, cwd=project)
        assert result.code == 2, (args, result.output)
        # one error (libpq's own message may take a second line)
        assert result.stderr.startswith("error: Cannot open session store postgresql://someone:***@")
        assert f'(the store is set by "store" in {tmp_path / "config" / "tether.json"})' in result.stderr
        assert result.stderr.count("error:") == 1 and "Traceback" not in result.output
        assert "s3cret" not in result.output
    assert not (cli.data_dir / "tether.db").exists()


def test_a_store_that_is_not_postgresql_is_refused_where_it_is_written(tmp_path: Path) -> None:
    cli = _cli(tmp_path, {"store": "mysql://someone:s3cret@host/db"})
    result = cli.run("sessions")
    assert result.code == 2, result.output
    assert "expected a postgresql:// URL" in result.stderr and "tether.json" in result.stderr
    assert "s3cret" not in result.output
    cli.env["TETHER_STORE_URL"] = "sqlite:///elsewhere.db"
    (tmp_path / "config" / "tether.json").write_text("{}", encoding="utf-8")
    result = cli.run("session", "show", "ses_x")
    assert result.code == 2, result.output
    assert result.stderr == (
        "error: TETHER_STORE_URL must be a postgresql:// URL (unset it for the default SQLite file)\n"
    )
    assert not (cli.data_dir / "tether.db").exists()


def test_every_command_opens_its_runtime_through_the_one_opener() -> None:
    # _common.opened builds the one Runtime of every command from the resolved config; a command that built its own
    # (as the sessions commands did, without the config) would open another store
    import ast

    import tether.cli

    cli = Path(tether.cli.__file__).parent
    builders = [
        f"{path.name}:{node.lineno}"
        for path in sorted(cli.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Runtime"
    ]
    assert [where.split(":")[0] for where in builders] == ["_common.py"], builders

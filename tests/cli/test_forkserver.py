"""The tests' fork server (``_forkserver.py``) runs a command as a fresh ``python -m tether.cli`` would: the same
output, exit code, environment and directory; and whatever it cannot reproduce goes to a fresh interpreter."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from . import _forkserver
from .conftest import Cli


def _both(tmp_path: Path, *args: str, cwd: Path | None = None) -> tuple[Any, Any]:
    forked = Cli(tmp_path / "forked").run(*args, cwd=cwd)
    fresh = Cli(tmp_path / "fresh", fresh=True).run(*args, cwd=cwd)
    return forked, fresh


def test_a_forked_command_answers_as_a_fresh_one(tmp_path: Path, project: Path) -> None:
    for args in (("--version",), ("sessions", "--all", "--json"), ("no-such-command",), ("run", "--help")):
        forked, fresh = _both(tmp_path, *args)
        assert (forked.code, forked.stdout, forked.stderr) == (fresh.code, fresh.stdout, fresh.stderr), args
    assert _forkserver.SERVER._proc is not None  # the fork server ran them, not a fresh interpreter


def test_a_forked_command_takes_the_requests_environment_and_directory(tmp_path: Path, project: Path) -> None:
    cli = Cli(tmp_path)
    model = cli.script([{"text": "done"}])
    cli.env["TMPDIR"] = str(tmp_path)
    ran = cli.run(
        "run", "go", "--model", model, cwd=project
    )  # no --dir: the working directory is the project
    assert ran.code == 0, ran.output
    (session,) = cli.json("sessions", "--all", "--json")
    assert Path(session["directory"]).resolve() == project.resolve()
    assert (cli.data_dir / "tether.db").is_file()  # TETHER_DATA_DIR: the request's, not the zygote's


def test_a_startup_setting_sends_the_command_to_a_fresh_interpreter(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.env["PYTHONPATH"] = str(tmp_path / "elsewhere")
    assert not _forkserver.SERVER.serves(cli.env)
    assert _forkserver.SERVER.serves(Cli(tmp_path).env)
    assert cli.run("--version").code == 0


def test_a_command_past_its_timeout_is_killed(tmp_path: Path, project: Path) -> None:
    cli = Cli(tmp_path)
    cli.configure(project, {"permission": {"bash": "allow"}})
    model = cli.script(
        [{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 600"}}]}, {"text": "x"}]
    )
    with pytest.raises(subprocess.TimeoutExpired):
        cli.run("run", "wait", "--model", model, "--dir", str(project), timeout=3)
    assert cli.run("--version").code == 0  # the server serves the next command

"""``python -m tether.cli`` in a cloned repository never imports the repository's modules (issue 34, item 10).

``python -m`` puts the current directory first on ``sys.path``; a repository with a ``typer.py`` (or ``rich.py``,
``anyio.py``, ``typing.py``, ``__future__.py``) at its root ran it as tether started. Each planted module writes a
canary; the attack is ``python -m tether.cli ...`` (and ``python -m tether.server.openapi``) run from that directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Cli

PLANTED = ("typer", "rich", "anyio", "pydantic", "typing", "__future__")


def _plant(directory: Path) -> Path:
    canaries = directory / "canaries"
    canaries.mkdir()
    for name in PLANTED:
        (directory / f"{name}.py").write_text(
            f"open({str(canaries / name)!r}, 'w').write('ran')\nraise SystemExit(99)\n", encoding="utf-8"
        )
    return canaries


def test_python_m_tether_cli_in_a_repository_never_runs_its_modules(tmp_path: Path) -> None:
    repository = tmp_path / "repository"
    repository.mkdir()
    canaries = _plant(repository)
    cli = Cli(tmp_path, fresh=True)  # the attack is on a fresh interpreter's start-up: no fork server
    version = cli.run("--version", cwd=repository)
    assert (version.code, version.stdout) == (0, "tether 0.1.0\n"), version.output
    listed = cli.run("sessions", "--all", "--json", cwd=repository)  # typer, rich, anyio, pydantic, the store
    assert (listed.code, json.loads(listed.stdout)) == (0, []), listed.output
    document = _python(repository, cli.env, "-m", "tether.server.openapi")
    assert document.returncode == 0, document.stderr
    assert json.loads(document.stdout)["openapi"].startswith("3.")
    spellings = (
        ("-mtether.cli", "--version"),
        ("-m", "tether", "--version"),  # the package's own __main__
        ("-mtether", "--version"),
        ("-P", "-m", "tether.cli", "--version"),
        # short flags cluster as CPython reads them: -m after -B, -OO, -s; -W takes a value
        ("-Bm", "tether.cli", "--version"),
        ("-OOsmtether.cli", "--version"),
        ("-W", "ignore", "-Xdev", "-bm", "tether.cli", "--version"),
        ("--check-hash-based-pycs", "never", "-qm", "tether.cli", "--version"),
    )
    for spelling in spellings:
        done = _python(repository, cli.env, *spelling)
        assert (done.returncode, done.stdout) == (0, "tether 0.1.0\n"), (spelling, done.stderr)
    assert sorted(p.name for p in canaries.iterdir()) == []


def _python(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_only_tethers_own_entry_points_leave_the_path_alone(tmp_path: Path) -> None:
    # `import tether` from a program, or another `python -m` program that imports tether, keeps its sys.path
    (tmp_path / "host.py").write_text("import sys\nimport tether\nprint(sys.path[0])\n", encoding="utf-8")
    for args in (("-m", "host"), ("-c", "import sys, tether; print(sys.path[0])")):
        done = _python(tmp_path, dict(os.environ), *args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() in (str(tmp_path), ""), done.stdout

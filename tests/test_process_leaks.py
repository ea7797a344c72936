"""The suite's own guard (``tests/conftest.py``): a process a test leaves running fails the run and is killed.

The guard runs in a pytest of its own here, over a test that leaks two ``sleep`` processes: a direct child, and a
grandchild whose parent shell has exited (reparented away from pytest, found by the environment mark it inherited).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
import tests.conftest as guard
from tests.conftest import _no_process_survives, anyio_backend, pytest_configure

guard.GRACE = 0.5
"""

LEAKING = """
import subprocess
from pathlib import Path

def test_leaks(tmp_path):
    child = subprocess.Popen(["sleep", "300"])
    shell = subprocess.run(["sh", "-c", "sleep 301 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True, check=True)
    Path({pids!r}).write_text(f"{{child.pid}} {{shell.stdout.strip()}}")
"""

CLEAN = """
import subprocess

def test_waits_for_its_child():
    subprocess.run(["sleep", "0"], check=True)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _pytest(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_body.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_a_process_left_running_by_a_test_fails_the_run_and_is_killed(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    run = _pytest(tmp_path, LEAKING.format(pids=str(pids_file)))
    child, orphan = (int(p) for p in pids_file.read_text().split())
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 process(es) started by the tests outlived them (now killed)" in run.stdout
    assert f"{child}: sleep 300" in run.stdout
    assert f"{orphan}: sleep 301" in run.stdout
    assert not _alive(child) and not _alive(orphan)


def test_a_run_whose_processes_all_ended_passes(tmp_path: Path) -> None:
    run = _pytest(tmp_path, CLEAN)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "outlived" not in run.stdout

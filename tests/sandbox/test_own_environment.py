"""The Python running tether stays visible inside the sandbox when it lies under the real /tmp (a checkout or a venv
there, as CI and throwaway clones have): the session's temp directory covers /tmp inside."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_PROBE = """
import json, sys
sys.prefix = sys.argv[1]
from tether.sandbox._policy import build_policy
shown = build_policy(mechanism="landlock", root=sys.argv[2], tmp=sys.argv[3]).visible
hidden = build_policy(mechanism="landlock", root=sys.argv[2], tmp=None).visible
print(json.dumps([shown, hidden]))
"""


def _visible(prefix: Path, root: Path, tmp: Path) -> list[list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(prefix), str(root), str(tmp)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return json.loads(out)


def test_a_python_under_tmp_is_shown_read_only_when_tmp_is_the_sessions(tmp_path: Path) -> None:
    shown, hidden = _visible(tmp_path / "venv", tmp_path, tmp_path / "session")
    real = str((tmp_path / "venv").resolve())
    if real.startswith("/tmp/"):
        assert real in shown
    else:  # pragma: no cover - a temp directory elsewhere is visible inside already
        assert real not in shown
    assert real not in hidden


def test_a_python_elsewhere_adds_nothing(tmp_path: Path) -> None:
    shown, _ = _visible(Path("/usr/local/lib/some-venv"), tmp_path, tmp_path / "session")
    assert "/usr/local/lib/some-venv" not in shown

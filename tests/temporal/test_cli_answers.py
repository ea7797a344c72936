"""``tether run --temporal`` reads a permission answer whole, as the in-process prompt does (issue 34, item 1).

The follower's prompt read the first letter of the line: ``absolutely not`` answered **always**, saved the approval
and ran the command on the worker. A real worker and a real follower on a pty, with a scripted model whose bash call
would create a canary file.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from .test_cli import env, queue, script, tether  # noqa: F401  (fixtures; ``queue`` takes this module's project)

TOUCH = {"name": "bash", "arguments": {"command": "touch canary", "description": "make the canary"}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose config asks before bash (a project may tighten without trust): read by the worker at start."""
    path = tmp_path / "project"
    (path / ".tether").mkdir(parents=True)
    (path / ".tether" / "tether.json").write_text(json.dumps({"permission": {"bash": "ask"}}))
    return path


def test_a_line_that_is_not_an_answer_is_asked_again_and_an_empty_line_rejects(
    temporal_server: str,
    queue: str,  # noqa: F811
    env: dict[str, str],  # noqa: F811
    project: Path,
    tmp_path: Path,
) -> None:
    from tests.cli.conftest import Pty

    model = script(tmp_path, [{"text": "Touching.", "tool_calls": [TOUCH]}, {"text": "Finished."}])
    term = Pty(
        tether("run", "--temporal", temporal_server, "--task-queue", queue, "--model", model,
               "--dir", str(project), "touch it"),
        env=env,
        cwd=None,
    )  # fmt: skip
    term.expect(r"\? bash touch canary", timeout=60)
    term.expect(r"(choice \[o/always/r/f\]|Allow\?.*): ")  # the second: the follower's prompt before the fix
    for typo in ("absolutely not", "a", "fix the failing test"):
        term.send(typo + "\n")
        term.expect(re.escape(f"'{typo}' is not "))
    term.send("\n")  # an empty line rejects
    assert term.wait(timeout=60) == 1, term.text
    assert not (project / "canary").exists()
    listed = subprocess.run(
        tether("permissions", "--dir", str(project)), env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert "touch" not in listed.stdout

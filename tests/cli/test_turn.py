"""A second Ctrl-C exits at once, but never leaves a bash command's process group behind."""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.builtins import _shell_run  # pyright: ignore[reportPrivateUsage]
from tether.cli._turn import SHELL_RUN_MODULE, kill_live_shells  # pyright: ignore[reportPrivateUsage]


def _exited_within(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` (not necessarily our child) ends within ``seconds`` (a pidfd wait, no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], seconds)
        return bool(readable)
    finally:
        os.close(fd)


def test_kill_live_shells_sigkills_every_registered_group(monkeypatch: pytest.MonkeyPatch) -> None:
    assert sys.modules[SHELL_RUN_MODULE] is _shell_run
    # A group that ignores SIGTERM, as a bash call can be between SIGTERM and SIGKILL.
    shell = subprocess.Popen(["/bin/sh", "-c", "trap '' TERM; sleep 60"], start_new_session=True)
    try:
        monkeypatch.setattr(_shell_run, "live_groups", lambda: frozenset({shell.pid}), raising=False)
        assert kill_live_shells() == 1
        assert shell.wait(timeout=5) == -9
    finally:
        shell.kill()
        shell.wait()


def test_kill_live_shells_without_a_registry_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, SHELL_RUN_MODULE)
    assert kill_live_shells() == 0


def test_second_ctrl_c_kills_a_bash_command_still_in_its_grace_period(cli: Any, project: Path) -> None:
    command = "trap '' TERM; echo pgid $$; sleep 60"  # ignores SIGTERM: only SIGKILL ends it
    model = cli.script([{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "x"}])
    # --yes: the command is not read-only, so the built-in defaults would ask for it first.
    term = cli.pty("run", "wait", "--model", model, "--dir", str(project), "--yes")
    term.expect(r"│ pgid \d+")
    match = re.search(r"│ pgid (\d+)", term.text)
    assert match is not None
    pgid = int(match.group(1))
    try:
        term.send("\x03")
        term.expect(r"cancelling the turn")
        term.send("\x03")
        assert term.wait() == 130, term.text
        assert _exited_within(pgid, 5), "the bash command outlived tether"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)  # never leave it behind, whatever the outcome

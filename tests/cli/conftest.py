"""Drive the real ``tether`` command: in a subprocess (pipes) and in a pseudo-terminal (approvals, Ctrl-C).

Every run gets its own data directory and user config directory, so nothing leaks between tests or from the machine.
Waiting is always on output (with a deadline), never on a sleep.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from . import _forkserver

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class Cli:
    """Runs ``python -m tether.cli`` with an isolated environment.

    :meth:`run` forks each command from the tests' fork server (``_forkserver.py``: a process of its own, without a
    fresh interpreter's start-up) unless ``fresh`` is set or the environment asks for a fresh interpreter; :meth:`argv`
    (for ``Popen`` and :meth:`pty`) is always the real ``python -m tether.cli``.
    """

    def __init__(self, tmp: Path, *, fresh: bool = False) -> None:
        self.tmp = tmp
        self.fresh = fresh
        self.data_dir = tmp / "data"
        self.env = {
            **os.environ,
            "TETHER_DATA_DIR": str(self.data_dir),
            "TETHER_CONFIG_DIR": str(tmp / "config"),
            "XDG_CONFIG_HOME": str(tmp / "xdg-config"),
            "NO_COLOR": "1",
            "COLUMNS": "160",
        }
        # FORCE_COLOR / TTY_COMPATIBLE in a developer's shell would draw the pipes the tests read as a terminal
        for name in (
            "TETHER_PERMISSION",
            "TETHER_TRUST",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "FORCE_COLOR",
            "TTY_COMPATIBLE",
        ):
            self.env.pop(name, None)

    def argv(self, args: Sequence[str]) -> list[str]:
        return [sys.executable, "-m", "tether.cli", *args]

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 60) -> Result:
        if not self.fresh and _forkserver.SERVER.serves(self.env):
            forked = _forkserver.SERVER.run(args, env=self.env, cwd=cwd, timeout=timeout)
            return Result(forked.code, forked.stdout, forked.stderr)
        done = subprocess.run(
            self.argv(args),
            env=self.env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def json(self, *args: str) -> Any:
        result = self.run(*args)
        assert result.code == 0, result.output
        return json.loads(result.stdout)

    def pty(self, *args: str, cwd: Path | None = None, typed: str = "") -> Pty:
        server = None if self.fresh else _forkserver.SERVER
        return Pty(self.argv(args), env=self.env, cwd=cwd, typed=typed, server=server)

    def script(self, steps: list[dict[str, Any]], name: str = "script.json") -> str:
        """Write a JSON model script (the OpenCode peer's format); return the ``--model`` value that plays it."""
        path = self.tmp / name
        path.write_text(json.dumps(steps), encoding="utf-8")
        return f"scripted:{path}"

    @staticmethod
    def configure(project: Path, config: dict[str, Any]) -> None:
        """Write the project's ``.tether/tether.json``."""
        path = project / ".tether" / "tether.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config), encoding="utf-8")


class Pty:
    """A child process on a pseudo-terminal: read what it shows, type into it."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path | None,
        typed: str = "",
        server: _forkserver.ForkServer | None = None,
    ) -> None:
        """Run ``argv`` on a new terminal; with ``server``, a ``python -m tether.cli ARGS`` command is forked by the
        tests' fork server instead (when the environment allows)."""
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self.master = master
        if typed:  # keys typed before the program starts: waiting in the terminal when it first reads
            os.write(master, typed.encode())
        env = {**env, "TERM": "xterm"}
        self.proc: subprocess.Popen[bytes] | _forkserver.Forked
        # A new session whose controlling terminal is this pty, so that ^C typed into it becomes SIGINT.
        if server is not None and argv[1:3] == ["-m", "tether.cli"] and server.serves(env):
            self.proc = server.spawn(argv[3:], env=env, cwd=cwd, fds=(slave, slave, slave), terminal=True)
        else:
            self.proc = subprocess.Popen(
                argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
            )
        os.close(slave)
        self.raw = ""

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw)

    def _pump(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not chunk:
            return False
        self.raw += chunk.decode(errors="replace")
        return True

    def expect(self, pattern: str, timeout: float = 30) -> None:
        """Wait until ``pattern`` (a regex) appears in the text shown so far."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            left = deadline - time.monotonic()
            if left <= 0 or not self._pump(min(left, 0.5)):
                if re.search(pattern, self.text):
                    return
                raise AssertionError(f"{pattern!r} not shown; the terminal shows:\n{self.text}")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            if not self._pump(0.2):
                break
        code = self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        while self._pump(0):
            if not select.select([self.master], [], [], 0)[0]:
                break
        os.close(self.master)
        return code


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # FORCE_COLOR / TTY_COMPATIBLE in a developer's shell would make the in-process tests' streams terminals
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    return root

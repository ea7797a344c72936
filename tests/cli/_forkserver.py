"""A fork server for the tests' ``tether`` commands: each command still runs in a process of its own, without paying
a fresh interpreter's start-up.

Why: the suite runs ~1,000 short ``tether`` commands (``session show``, ``permissions --explain``, a scripted ``run``).
Started as ``python -m tether.cli`` under coverage each costs ~0.5 s of CPU, of which ~0.35 s is the interpreter,
importing ~580 modules and starting coverage: most of the suite's CPU went to starting processes (issue 39).

How: each test process (an xdist worker) starts one *zygote* the first time a test runs a command: a Python process
with the test process's environment (coverage starts in it as in any child) that imports the command's modules and
then waits on a unix socket. A command is one request: its arguments, environment and working directory, with the
test's pipes for standard input, output and error passed as file descriptors. The zygote forks; the child takes the
pipes as fds 0-2, the request's environment and directory, and runs :func:`tether.cli.main`, which ends the process
as it always does (``atexit`` handlers, coverage's data file among them, then ``os._exit``). The zygote reports the
child's pid, then its exit status (``subprocess``'s convention: ``-N`` for a signal).

What a forked command does not share with a fresh one, and so goes the long way (``python -m tether.cli``, as before):
a request whose environment differs from the zygote's in what Python reads only at start-up (``PYTHON*``, coverage's
variables, the locale), and any test that asks for it (``Cli(..., fresh=True)``: the module entry's own tests). The
zygote imports only; it never runs a command, so no cache a command fills is shared. What Python caches from the
environment at first use is reset in the child (``tempfile``'s directory, the time zone).

``TETHER_TEST_FORK=0`` turns the server off (every command a fresh interpreter).
"""

from __future__ import annotations

import json
import locale
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

STARTUP_ONLY = ("PYTHON", "COVERAGE_", "LANG", "LC_", "TETHER_TEST_FORK")
"""Environment variables read when an interpreter starts (or that steer this module): a request whose values differ
from the zygote's runs in a fresh interpreter."""

WARM = (
    "tether.cli._app",
    "tether.cli._commands",
    "tether.cli._run",
    "tether.cli._turn",
    "tether.cli._sessions",
    "tether.cli._permissions",
    "tether.cli._tools",
    "tether.cli._config",
    "tether.cli._trust",
    "tether._runtime",
    "tether.store",
    "tether.builtins",
)
"""What the zygote imports before it serves (each command still imports whatever else it needs, in the child)."""

_ZYGOTE = Path(__file__).with_name("_zygote.py")
_LENGTH = struct.Struct("!I")


def enabled() -> bool:
    return os.environ.get("TETHER_TEST_FORK", "1") != "0"


def startup_environment(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP_ONLY)}


class Finished:
    """A command's end: exit code, and what it wrote."""

    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code, self.stdout, self.stderr = code, stdout, stderr


class ForkServer:
    """One zygote for this process (started on first use, stopped by :meth:`close`)."""

    def __init__(self) -> None:
        self._directory: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def serves(self, env: Mapping[str, str]) -> bool:
        """Whether a command with ``env`` can be forked (else it needs a fresh interpreter)."""
        return enabled() and startup_environment(env) == startup_environment(os.environ)

    @property
    def _address(self) -> str:
        assert self._directory is not None
        return os.path.join(self._directory, "zygote.sock")

    def _start(self) -> None:
        if self._directory is None:
            self._directory = tempfile.mkdtemp(
                prefix="tether-zygote-"
            )  # short: a socket's path has 107 bytes
        proc = subprocess.Popen(
            [sys.executable, str(_ZYGOTE), self._address, *WARM],
            stdin=subprocess.PIPE,  # the zygote ends when this pipe closes: with this process, however it ends
            stdout=subprocess.PIPE,
            stderr=None,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "ready" once it listens (a hang guard: the test's own timeout)
        if line.strip() != b"ready":
            proc.kill()
            proc.wait()
            proc.stdout.close()
            raise RuntimeError(f"the tests' fork server did not start (it said {line!r})")
        self._proc = proc

    def run(
        self, args: Sequence[str], *, env: Mapping[str, str], cwd: Path | None, timeout: float
    ) -> Finished:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        request = json.dumps(
            {"args": list(args), "env": dict(env), "cwd": str(cwd) if cwd is not None else os.getcwd()}
        ).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self._address)
            socket.send_fds(conn, [_LENGTH.pack(len(request))], [null, out_w, err_w])
            conn.sendall(request)
        finally:
            for fd in (null, out_w, err_w):
                os.close(fd)
        try:
            return self._collect(conn, out_r, err_r, time.monotonic() + timeout, args, timeout)
        finally:
            conn.close()
            os.close(out_r)
            os.close(err_r)

    def _collect(
        self,
        conn: socket.socket,
        out_r: int,
        err_r: int,
        deadline: float,
        args: Sequence[str],
        timeout: float,
    ) -> Finished:
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        reply = b""
        open_fds = {out_r, err_r, conn.fileno()}
        pid = None
        while open_fds:
            left = deadline - time.monotonic()
            ready = select.select(list(open_fds), [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                if pid is not None:
                    _kill(pid)
                raise subprocess.TimeoutExpired(["tether", *args], timeout)
            for fd in ready:
                data = os.read(fd, 65536) if fd != conn.fileno() else conn.recv(65536)
                if not data:
                    open_fds.discard(fd)
                elif fd == conn.fileno():
                    reply += data
                    if pid is None and b"\n" in reply:
                        pid = int(reply.split(b"\n", 1)[0])
                else:
                    chunks[fd].append(data)
        lines = reply.split(b"\n")
        if len(lines) < 3:
            raise RuntimeError(f"the tests' fork server ended a command without its status ({reply!r})")
        return Finished(int(lines[1]), _text(chunks[out_r]), _text(chunks[err_r]))

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()  # the zygote's signal to end
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


SERVER = ForkServer()
"""This test process's fork server; the root conftest closes it before looking for processes left running."""


def close() -> None:
    SERVER.close()


def _text(chunks: list[bytes]) -> str:
    """What ``subprocess.run(..., text=True)`` makes of a pipe's bytes: the locale's encoding, universal newlines."""
    text = b"".join(chunks).decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

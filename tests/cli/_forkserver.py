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
    "tether.cli._commands.*",
    "tether.cli._run",
    "tether.cli._turn",
    "tether.cli._sessions",
    "tether.cli._permissions",
    "tether.cli._tools",
    "tether.cli._config",
    "tether.cli._trust",
    "tether.cli._repl",
    "tether._runtime",
    "tether.store",
    "tether.store._sqlite",
    "tether.builtins",
    "tether.builtins.read",
    "tether.builtins.edit",
    "tether.builtins.bash",
)
"""What the zygote imports before it serves (``package.*``: with its modules); each command imports whatever else it
needs in its own process."""

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


class Forked:
    """A command forked by the server: as much of ``Popen`` as the tests use (``pid``, ``poll``, ``wait``, signals).

    The server writes the child's pid, then its exit status, on the request's connection."""

    def __init__(self, conn: socket.socket, args: Sequence[str]) -> None:
        self._conn = conn
        self.args = ["tether", *args]
        self._reply = b""
        self.returncode: int | None = None
        self.pid = int(self._line(time.monotonic() + 60))

    def _line(self, deadline: float) -> bytes:
        while b"\n" not in self._reply:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._conn], [], [], left)[0]:
                raise subprocess.TimeoutExpired(self.args, 0)
            data = self._conn.recv(4096)
            if not data:
                raise RuntimeError(
                    f"the tests' fork server ended a command without its status ({self._reply!r})"
                )
            self._reply += data
        line, _, self._reply = self._reply.partition(b"\n")
        return line

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            return self.wait(0.001)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            deadline = time.monotonic() + (timeout if timeout is not None else 3600.0)
            try:
                self.returncode = int(self._line(deadline))
            except subprocess.TimeoutExpired:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
            self._conn.close()  # nothing more comes on it
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def close(self) -> None:
        self._conn.close()


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

    def spawn(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None,
        fds: tuple[int, int, int],
        terminal: bool = False,
    ) -> Forked:
        """Fork a command with ``fds`` as its stdin, stdout and stderr (``terminal``: a new session whose controlling
        terminal is stdin, as ``Popen(start_new_session=True)`` plus ``TIOCSCTTY``)."""
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        request = {"args": list(args), "env": dict(env), "cwd": str(cwd) if cwd is not None else os.getcwd()}
        body = json.dumps({**request, "terminal": terminal}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self._address)
            socket.send_fds(conn, [_LENGTH.pack(len(body))], list(fds))
            conn.sendall(body)
            return Forked(conn, args)
        except BaseException:
            conn.close()
            raise

    def run(
        self, args: Sequence[str], *, env: Mapping[str, str], cwd: Path | None, timeout: float
    ) -> Finished:
        """Run a command to its end, its output captured (``subprocess.run(..., capture_output=True, text=True)``)."""
        deadline = time.monotonic() + timeout
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            forked = self.spawn(args, env=env, cwd=cwd, fds=(null, out_w, err_w))
        finally:
            for fd in (null, out_w, err_w):
                os.close(fd)
        try:
            chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
            reading = {out_r, err_r}
            while reading:  # until every writer closed them, as subprocess.run reads
                left = deadline - time.monotonic()
                ready = select.select(list(reading), [], [], left)[0] if left > 0 else []
                if not ready:
                    forked.kill()
                    raise subprocess.TimeoutExpired(["tether", *args], timeout)
                for fd in ready:
                    data = os.read(fd, 65536)
                    if data:
                        chunks[fd].append(data)
                    else:
                        reading.discard(fd)
            code = forked.wait(max(deadline - time.monotonic(), 0.1))
            return Finished(code, _text(chunks[out_r]), _text(chunks[err_r]))
        finally:
            forked.close()
            os.close(out_r)
            os.close(err_r)

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


def tether(
    *args: str, env: Mapping[str, str], cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([python, -m, tether.cli, *args], stdin=DEVNULL, capture_output=True, text=True)``, forked by
    :data:`SERVER` when the environment allows."""
    if SERVER.serves(env):
        done = SERVER.run(args, env=env, cwd=cwd, timeout=timeout)
        return subprocess.CompletedProcess(["tether", *args], done.code, done.stdout, done.stderr)
    return subprocess.run(
        [sys.executable, "-m", "tether.cli", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _text(chunks: list[bytes]) -> str:
    """What ``subprocess.run(..., text=True)`` makes of a pipe's bytes: the locale's encoding, universal newlines."""
    text = b"".join(chunks).decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")

"""Running one shell command: a guard process, one pipe, a spill file, a deadline, and no survivors.

- The command runs as ``<shell> -c <command>`` (``/bin/bash`` if present, else ``/bin/sh``, or the configured one) in
  a new session, with stdin on ``/dev/null`` and the environment inherited plus ``TETHER=1``, under a **guard**
  (:mod:`._shell_guard`): a small supervisor process, one per call, forked by a guard server that this module starts
  once per process with this Python (so a call pays a fork, not Python's start-up). The guard is a child subreaper,
  so every process the command starts stays below it even when it leaves the shell's session and group (``setsid
  CMD &``, a double fork, a daemon). When the shell exits, the call times out or is cancelled, or tether itself dies
  (even by SIGKILL: the guard sees the end of its control pipe), the guard sends SIGTERM to every process of the
  call, SIGKILL after the grace period, reaps them all, reports the shell's status and exits. Background jobs
  (``sleep 1000 &``) end with the call too. The shell has ``PR_SET_PDEATHSIG(SIGKILL)``: if the guard is killed, so
  is the shell.
- tether itself is not a subreaper and has no per-call child: orphans from its other children (MCP servers,
  ripgrep) still go to init, and tether never reaps a process it did not start, so asyncio's child watchers keep
  every status they wait for. The guards are the server's children; the server reaps them.
- stdout and stderr share one pipe, so the stream keeps arrival order. A worker thread moves the pipe into the
  managed spill file as it arrives (``os.splice`` where the platform has it: the bytes never enter Python), so memory
  stays flat for any output size. At the end at most ``capture_limit`` bytes are read back: the whole output, or its
  head and tail around an explicit omission marker; the spill file is kept only when something was left out.
- While it runs, the thread publishes the tail of the output through ``progress`` at most every 100 ms, and once
  more at the end of the stream (also when the call was cancelled: the session keeps that tail on the aborted part).

This module knows nothing about permissions or the model: :mod:`tether.builtins.bash` owns those.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .._record import record
from ..errors import OutputStoreError
from ._bash_text import default_shell

if TYPE_CHECKING:
    from ..sandbox import Sandbox, SandboxPolicy

__all__ = ["CAPTURE_LIMIT", "KILL_GRACE", "ShellRun", "default_shell", "live_groups", "run_shell"]

CAPTURE_LIMIT = 1 << 20
"""Bytes of output the producer keeps in memory (the rest stays in the spill file)."""
KILL_GRACE = 3.0
"""Seconds between SIGTERM and SIGKILL."""
PROGRESS_INTERVAL = 0.1
PROGRESS_TAIL = 30_000
_CHUNK = 1 << 20
_PIPE_SIZE = 1 << 20
_DRAIN_WAIT = 2.0
_POLL_MS = 100
_F_SETPIPE_SZ = 1031
_GUARD = Path(__file__).with_name("_shell_guard.py")
_GUARD_SLACK = 5.0
_HEADER = 8

Progress = Callable[[Mapping[str, Any]], None]
Spill = Callable[[], tuple[Path, IO[bytes]]]


@record
class ShellRun:
    """What one run produced.

    Attributes:
        exit_code: the shell's exit status (``128 + n`` when a signal ``n`` ended it), ``None`` when it timed out.
        timed_out: the deadline passed and the group was killed.
        output: the decoded capture (complete unless ``truncated``); invalid UTF-8 is replaced.
        total_bytes: bytes the command wrote in all.
        captured_bytes: bytes of it kept in ``output``.
        output_path: the spill file with the full output, kept only when ``truncated``.
        duration: seconds from spawn to the end of cleanup.
    """

    exit_code: int | None
    timed_out: bool
    output: str
    total_bytes: int
    captured_bytes: int
    output_path: Path | None
    duration: float

    @property
    def truncated(self) -> bool:
        return self.captured_bytes < self.total_bytes


async def run_shell(
    command: str,
    *,
    cwd: Path,
    time_limit: float,
    spill: Spill,
    shell: str | None = None,
    env: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    capture_limit: int = CAPTURE_LIMIT,
    kill_grace: float = KILL_GRACE,
    sandbox: Sandbox | None = None,
    policy: SandboxPolicy | None = None,
) -> ShellRun:
    """Run ``command`` through the shell in ``cwd`` until it exits or ``time_limit`` seconds pass.

    With ``sandbox`` and ``policy``, the shell starts inside the sandbox (``Sandbox.wrap``: under bubblewrap, or with
    Landlock applied by the guard before ``execve``); the guard's guarantees hold the same way (bubblewrap is the
    guard's child, ``--die-with-parent``, and every process inside is one of the guard's descendants).

    Cancellation ends every process of the call and propagates; the spill file is removed then.

    Raises:
        OSError: the shell could not be started (``FileNotFoundError``/``NotADirectoryError`` for a missing ``cwd``).
        OutputStoreError: the spill file could not be created or written.
    """
    environment = dict(os.environ if env is None else env)
    environment["TETHER"] = "1"
    environment["PWD"] = str(cwd)
    argv = [default_shell(shell), "-c", command]
    landlock: Mapping[str, Any] | None = None
    seccomp: str | None = None
    if sandbox is not None and policy is not None:
        launch = sandbox.wrap(policy, argv, str(cwd))
        argv, landlock, seccomp = launch.argv, launch.landlock, launch.seccomp
        environment.update(launch.env)
    request = _request(argv, cwd, environment, kill_grace, landlock, seccomp)
    started = time.monotonic()
    # Shielded: a process started by a worker thread whose result is lost would be an orphan.
    call: _Call | None = None
    with anyio.CancelScope(shield=True):
        call = await anyio.to_thread.run_sync(_start_call, request)
    assert call is not None
    pump = _Pump(source=call.source, spill=spill, progress=progress, limit=capture_limit)
    finished = False
    try:
        _register_group(call.shell)
        timed_out = False
        try:
            async with anyio.create_task_group() as tg:
                drained = anyio.Event()

                async def run_pump() -> None:
                    try:
                        await anyio.to_thread.run_sync(pump.run, limiter=anyio.CapacityLimiter(1))
                    finally:
                        drained.set()

                tg.start_soon(run_pump)
                try:
                    with anyio.move_on_after(time_limit) as deadline:
                        await call.wait()
                    timed_out = deadline.cancelled_caught
                finally:
                    with anyio.CancelScope(shield=True):
                        await _end_call(call, kill_grace)
                        # The guard ended every process of the call, so EOF is near; a process it could not end
                        # (another user's, through a setuid program) may still hold the pipe: stop waiting then.
                        with anyio.move_on_after(_DRAIN_WAIT):
                            await drained.wait()
                        pump.stop.set()
        finally:
            _unregister_group(call.shell)
        if pump.error is not None:
            raise OutputStoreError(f"Failed to write tool output: {pump.error}") from pump.error
        head, tail = await pump.capture()
        duration = time.monotonic() - started
        exit_code = None if timed_out else call.status
        path = pump.path
        captured = len(head) + len(tail)
        if path is not None and captured < pump.total:
            omitted = pump.total - captured
            marker = f"\n\n[... {omitted} bytes omitted from the in-memory capture; full output saved to {path} ...]\n\n"
            text = _decode(head) + marker + _decode(tail)
        else:
            text = _decode(head + tail)
        finished = True
        return ShellRun(
            exit_code=exit_code,
            timed_out=timed_out,
            output=text,
            total_bytes=pump.total,
            captured_bytes=captured,
            output_path=path if captured < pump.total else None,
            duration=duration,
        )
    finally:
        call.close()
        pump.close(remove=not finished)


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# --- the process group ---------------------------------------------------------------------------------------------

_live_lock = threading.Lock()
_live: set[int] = set()


def live_groups() -> frozenset[int]:
    """Process groups of the shells started by :func:`run_shell` whose end is not yet confirmed (thread-safe).

    A process that must exit at once (the CLI's second Ctrl-C) SIGKILLs these first. The guards are not in them: a
    guard sees its shell die (or tether exit) and ends the rest of the call, escaped processes included.
    """
    with _live_lock:
        return frozenset(_live)


def _register_group(pgid: int) -> None:
    with _live_lock:
        _live.add(pgid)


def _unregister_group(pgid: int) -> None:
    with _live_lock:
        _live.discard(pgid)


# --- the guards (see ._shell_guard) ----------------------------------------------------------------------------------


class _Server:
    """The guard server of this process (one Python start-up, then a fork per call)."""

    def __init__(self) -> None:
        if not sys.executable:
            raise OSError("cannot start the shell's guard: no Python executable (sys.executable is empty)")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-S", "-I", str(_GUARD), str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.socket = ours

    def send(self, request: bytes, fds: list[int]) -> None:
        """Hand a request and its descriptors to the server (the caller holds the lock)."""
        socket.send_fds(self.socket, [len(request).to_bytes(_HEADER, "big")], fds)
        self.socket.sendall(request)

    def close(self) -> None:
        """Close the socket: the server exits (its running guards go on). Blocking."""
        self.socket.close()
        try:
            self.process.wait(_GUARD_SLACK)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_server_lock = threading.Lock()
_server: _Server | None = None


def _send(request: bytes, fds: list[int]) -> None:
    """Hand a call to the guard server, starting it (again) when there is none or it died. Blocking."""
    global _server
    with _server_lock:
        for attempt in range(2):
            if _server is not None and _server.process.poll() is not None:
                _server.close()
                _server = None
            if _server is None:
                _server = _Server()
            try:
                _server.send(request, fds)
                return
            except OSError:
                # It died meanwhile (someone killed it): one fresh server. A request cut in two is dropped by the
                # dead one; the fresh one gets it whole.
                _server.close()
                _server = None
                if attempt:
                    raise


def _forget_server() -> None:
    # In a forked child of this process: the socket is shared with the parent, whose requests would interleave with
    # ours. The child starts its own server; the parent's keeps running (the child only drops its copy).
    global _server, _server_lock
    _server_lock = threading.Lock()
    if _server is not None:
        _server.socket.close()
        _inherited.append(_server)  # kept: its process is the parent's child, never ours to wait for
        _server = None


_inherited: list[_Server] = []


os.register_at_fork(after_in_child=_forget_server)


@atexit.register
def _stop_server() -> None:
    global _server
    with _server_lock:
        server, _server = _server, None
    if server is not None:
        server.close()


def _request(
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str],
    grace: float,
    landlock: Mapping[str, Any] | None = None,
    seccomp: str | None = None,
) -> bytes:
    # ensure_ascii: a name or value that is not valid UTF-8 (a surrogate escape) travels as \udcXX and comes back.
    data: dict[str, Any] = {"argv": argv, "cwd": str(cwd), "env": dict(env), "grace": grace}
    if landlock is not None:
        data["landlock"] = dict(landlock)
    if seccomp is not None:
        data["seccomp"] = seccomp
    return json.dumps(data, ensure_ascii=True).encode("ascii")


class _Call:
    """One call's guard, seen from tether: the pipes it keeps, the pids, and the guard's reports."""

    def __init__(self, *, source: int, control: int, report: int) -> None:
        self.source = source  # the output pipe (the guard's stdout and stderr, then the shell's)
        self.control = control  # a byte or EOF ends the call
        self.report = report  # G<guard pid>, P<shell pid> | C<errno> | E<errno>, X<status>
        self.guard = 0
        self.shell = 0
        self.status: int | None = None
        self.ended = False
        self._buffer = b""

    def lines(self, data: bytes) -> list[bytes]:
        self._buffer += data
        *complete, self._buffer = self._buffer.split(b"\n")
        return complete

    def start(self, request: dict[str, Any]) -> None:
        """Read the guard's first reports until the shell runs. Blocking.

        Raises:
            OSError: the shell could not be started (naming the shell or the working directory), or the guard failed.
        """
        while not self.shell:
            data = os.read(self.report, 256)
            if not data:
                raise OSError("the shell's guard ended before starting the shell")
            for line in self.lines(data):
                kind, value = line[:1], line[1:]
                if not value.isdigit():
                    raise OSError(f"the shell's guard reported {line!r}")
                if kind == b"G":
                    self.guard = int(value)
                elif kind == b"P":
                    self.shell = int(value)
                elif kind == b"X":
                    self.status, self.ended = int(value), True
                elif kind in (b"C", b"E"):
                    number = int(value)
                    raise OSError(
                        number, os.strerror(number), request["cwd"] if kind == b"C" else request["argv"][0]
                    )

    async def wait(self) -> None:
        """Return when the guard has ended the call (it reported the shell's status, or died)."""
        while not self.ended:
            await anyio.wait_readable(self.report)
            try:
                data = os.read(self.report, 256)
            except BlockingIOError:
                continue
            if not data:
                # The guard died without reporting (SIGKILLed): PR_SET_PDEATHSIG killed the shell.
                self.status = self.status if self.status is not None else 128 + signal.SIGKILL
                self.ended = True
                return
            for line in self.lines(data):
                if line[:1] == b"X" and line[1:].isdigit():
                    self.status, self.ended = int(line[1:]), True

    def close(self) -> None:
        for fd in (self.source, self.control, self.report):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.source = self.control = self.report = -1


def _start_call(raw: bytes) -> _Call:
    """Hand a request to a new guard; return once the shell runs. Blocking (a worker thread).

    Raises:
        OSError: the shell could not be started (the guard's errno, naming the shell or the working directory), or
            the guard server could not be started or reached.
    """
    source, sink = os.pipe()
    control_r, control = os.pipe()
    report, report_w = os.pipe()
    call = _Call(source=source, control=control, report=report)
    try:
        with contextlib.suppress(OSError):
            if sys.platform == "linux":
                import fcntl

                fcntl.fcntl(source, _F_SETPIPE_SZ, _PIPE_SIZE)
        os.set_blocking(source, False)
        try:
            _send(raw, [sink, control_r, report_w])
        finally:
            for fd in (sink, control_r, report_w):
                os.close(fd)
        call.start(json.loads(raw))
        os.set_blocking(report, False)
    except BaseException:
        call.close()  # the guard, if one runs, reads EOF on its control pipe and ends what it started
        raise
    return call


async def _end_call(call: _Call, grace: float) -> None:
    """Have the guard end every process of the call (at once on timeout/cancel), then wait for it to report."""
    if not call.ended:
        # The guard may be ending already: a byte it does not read is harmless.
        with contextlib.suppress(OSError):
            os.write(call.control, b"e")
    # The guard takes at most twice the grace period to end the call; more means it is stuck (or was stopped).
    with anyio.move_on_after(2 * grace + _GUARD_SLACK):
        await call.wait()
        return
    for pgid in (call.guard, call.shell):
        if pgid > 0:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
    await call.wait()


# --- the output pump -----------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Throttle:
    """At most one progress update per ``interval`` seconds (the first one is due at once)."""

    interval: float
    last: float | None = None

    def due(self, now: float) -> bool:
        """Whether an update may go out at ``now``; if so, the next one waits a full interval."""
        if self.last is not None and now - self.last < self.interval:
            return False
        self.last = now
        return True

    def wait(self, now: float) -> float:
        """Seconds until an update is due."""
        return 0.0 if self.last is None else max(0.0, self.last + self.interval - now)


class _Pump:
    """Moves the pipe's bytes, in a worker thread: into memory up to the limit, then into the spill file.

    Below the limit nothing touches the disk. Past it, the spill file is created, the buffered bytes are written,
    and the rest of the stream moves straight from the pipe into the file (``os.splice``), so memory stays flat.
    """

    def __init__(self, *, source: int, spill: Spill, progress: Progress | None, limit: int) -> None:
        self.source = source
        self.spill = spill
        self.progress = progress
        self.limit = limit
        self.buffer = bytearray()
        self.path: Path | None = None
        self.handle: IO[bytes] | None = None
        self.reader = -1
        self.total = 0
        self.error: Exception | None = None
        self.stop = threading.Event()
        self.throttle = _Throttle(interval=PROGRESS_INTERVAL)
        self._published = 0

    def run(self) -> None:
        try:
            self._copy()
        except (OSError, OutputStoreError) as exc:
            self.error = exc
            self._discard()

    def _copy(self) -> None:
        splice = getattr(os, "splice", None)
        poller = select.poll()
        poller.register(self.source, select.POLLIN)
        throttle = self.throttle
        while not self.stop.is_set():
            try:
                if self.handle is None:
                    data = os.read(self.source, self.limit + 1 - len(self.buffer))
                    moved = len(data)
                    self.buffer += data
                    if len(self.buffer) > self.limit:
                        self._open_spill()
                elif splice is not None:
                    try:
                        moved = splice(
                            self.source,
                            self.handle.fileno(),
                            _CHUNK,
                            flags=os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK,
                        )
                    except OSError as exc:
                        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                            raise
                        splice = None
                        continue
                else:
                    data = os.read(self.source, _CHUNK)
                    moved = len(data)
                    _write_all(self.handle.fileno(), data)
            except BlockingIOError:
                # Nothing to read: wait, but wake up in time to publish a tail that arrived too soon to publish.
                pending = self.total != self._published
                wait = throttle.wait(time.monotonic()) * 1000 if pending else _POLL_MS
                poller.poll(max(0, min(_POLL_MS, int(wait) + 1)))
                if pending and throttle.due(time.monotonic()):
                    self._publish()
                continue
            if moved == 0:
                self._publish()  # the last of it: what a cancelled call's part keeps
                return
            self.total += moved
            if throttle.due(time.monotonic()):
                self._publish()

    def _open_spill(self) -> None:
        self.path, self.handle = self.spill()
        self.reader = os.open(self.path, os.O_RDONLY)
        _write_all(self.handle.fileno(), self.buffer)
        self.buffer = bytearray()

    def _discard(self) -> None:
        # The spill failed: keep draining so the command is not blocked on a full pipe; the call will fail.
        self.buffer = bytearray()
        while not self.stop.is_set():
            try:
                if not os.read(self.source, _CHUNK):
                    return
            except BlockingIOError:
                select.select([self.source], [], [], _POLL_MS / 1000)
            except OSError:
                return

    def _tail(self, size: int) -> bytes:
        if self.handle is None:
            return bytes(self.buffer[-size:])
        return os.pread(self.reader, size, self.total - size)

    def _publish(self) -> None:
        if self.progress is None or self.total == self._published:
            return
        self._published = total = self.total
        size = min(total, PROGRESS_TAIL)
        try:
            tail = self._tail(size)
        except OSError:
            return
        if size < total:
            tail = tail.lstrip(bytes(range(0x80, 0xC0)))
        try:
            self.progress({"output": _decode(tail), "bytes": total})
        except Exception:  # a UI callback must not break the command's output stream
            self.progress = None

    async def capture(self) -> tuple[bytes, bytes]:
        """``(whole, b"")`` when the output fit in memory, else ``(head, tail)`` read back from the spill file."""
        if self.handle is None:
            return bytes(self.buffer), b""
        return await anyio.to_thread.run_sync(_read_capture, self.reader, self.total, self.limit)

    def close(self, *, remove: bool) -> None:
        if self.reader >= 0:
            os.close(self.reader)
            self.reader = -1
        if self.handle is not None:
            self.handle.close()
            if remove and self.path is not None:
                with contextlib.suppress(OSError):
                    self.path.unlink()


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_capture(reader: int, total: int, limit: int) -> tuple[bytes, bytes]:
    """``(head, tail)`` of a spilled stream, cut at line boundaries, ``limit`` bytes at most together."""
    half = limit // 2
    head = _pread_all(reader, half, 0)
    tail = _pread_all(reader, half, total - half)
    newline = head.rfind(b"\n", half // 2)
    if newline >= 0:
        head = head[: newline + 1]
    newline = tail.find(b"\n", 0, half // 2)
    if newline >= 0:
        tail = tail[newline + 1 :]
    return head, tail


def _pread_all(fd: int, size: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        data = os.pread(fd, size, offset)
        if not data:
            break
        chunks.append(data)
        size -= len(data)
        offset += len(data)
    return b"".join(chunks)

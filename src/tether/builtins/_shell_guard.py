"""The guard: a small supervisor process between tether and one shell command, so that nothing of the call survives.

Run as a script (``python -S -I _shell_guard.py <control fd> <report fd>``, stdlib only; never imported by tether)
by :mod:`tether.builtins._shell_run`, one guard per bash call, started before the call comes (Python's start-up is
most of a call's overhead). It

- marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux): every process the command starts that
  is orphaned (``setsid CMD &``, a double fork, a daemon) is re-parented to the guard, not to init, so the call's
  processes are exactly the guard's descendants, whatever sessions and groups they moved to;
- reads its request from the control pipe: one JSON line ``{"argv", "cwd", "env", "grace"}`` (end of file first: it
  was a spare nobody needed, it exits);
- starts the shell in ``cwd``, in a new session, with the request's environment and ``PR_SET_PDEATHSIG(SIGKILL)``
  (the guard is single-threaded, so the guard's death, not some thread's exit, is what that signal follows), and
  reports ``P<pid>`` on the report pipe, or ``C<errno>`` (the working directory) / ``E<errno>`` (the shell) when it
  could not;
- waits until the shell exits, tether asks it to end the call (a byte on the control pipe: timeout, cancellation), or
  tether is gone (end of file on the control pipe: tether exited or was killed, even with SIGKILL);
- then ends every descendant: SIGTERM, SIGKILL to what is left after the grace period, until none is alive, reaping
  each (it is the parent of the orphans, and has no other children), and exits with the shell's status (``128 + n``
  for a signal ``n``).

Descriptors: 0 is ``/dev/null``, 1 and 2 the output pipe, which the shell inherits; the control pipe's write end is
held by tether alone. Without ``prctl`` (not Linux) the guard is no subreaper: an orphan then goes to init and only
the processes still below the guard are ended.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.01


def _prctl() -> object:
    """libc's ``prctl`` where there is one, else ``None``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def main(argv: list[str]) -> int:
    control, report = int(argv[0]), int(argv[1])
    os.set_inheritable(control, False)
    os.set_inheritable(report, False)
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # type: ignore[operator]
    request = _read_request(control)
    if request is None:
        return 0
    command: list[str] = request["argv"]
    env: dict[str, str] = request["env"]
    grace = float(request["grace"])
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        os.write(report, f"C{exc.errno or 0}\n".encode())
        return 127
    guard = os.getpid()
    errors, errors_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the shell
        try:
            os.close(errors)
            os.setsid()
            if prctl is not None:
                prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # type: ignore[operator]
                if os.getppid() != guard:  # the guard died before the signal was armed
                    os._exit(137)
            # Python ignores these; a shell started by any other program has them at their defaults.
            for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
            os.execve(command[0], command, env)
        except OSError as exc:
            os.write(errors_w, str(exc.errno or 0).encode())
        finally:
            os._exit(127)
    os.close(errors_w)
    failure = os.read(errors, 32)
    os.close(errors)
    if failure:
        os.waitpid(pid, 0)
        os.write(report, b"E" + failure + b"\n")
        return 127
    os.write(report, f"P{pid}\n".encode())
    os.close(report)
    status = _wait(pid, control)
    status = _end(pid, grace, status)
    if status is None:
        return 137
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _read_request(control: int) -> dict[str, Any] | None:
    import json

    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(control, 1 << 16)
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


def _wait(shell: int, control: int) -> int | None:
    """Wait for the shell to exit (its status) or for tether to end the call or go away (``None``)."""
    pidfd: int | None = None
    try:
        pidfd = os.pidfd_open(shell)
    except (AttributeError, OSError):
        pass
    # poll, not select: the control fd keeps its number from tether, which may be past FD_SETSIZE.
    poller = select.poll()
    poller.register(control, select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    while True:
        ready = poller.poll(None if pidfd is not None else 50)
        done, status = os.waitpid(shell, os.WNOHANG)
        if done:
            return status
        if any(fd == control for fd, _ in ready):
            return None


def _end(shell: int, grace: float, status: int | None) -> int | None:
    """End every descendant (TERM, then KILL after ``grace``), reaping them; return the shell's status.

    A process the guard may not signal (one that changed its user through a setuid program such as ``sudo``) cannot
    be ended: the guard stops trying ``grace`` seconds after SIGKILL and leaves it (to init).
    """
    deadline = time.monotonic() + grace
    give_up = deadline + grace
    termed: set[int] = set()
    while time.monotonic() < give_up:
        status = _reap(shell, status)
        if not _has_children():
            return status  # a subreaper without children has no descendants
        alive = _descendants(os.getpid())
        if not alive:
            return status
        kill = time.monotonic() >= deadline
        for pid in alive:
            if kill or pid not in termed:
                termed.add(pid)
                try:
                    os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
                except OSError:
                    pass
        time.sleep(_POLL)
    return _reap(shell, status)


def _reap(shell: int, status: int | None) -> int | None:
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == shell:
            status = code


def _has_children() -> bool:
    """Whether the guard has a child (cheap on Linux: the guard is single-threaded, one ``children`` file)."""
    pid = os.getpid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as fh:
            return bool(fh.read().strip())
    except OSError:
        return True  # unknown: look


def _descendants(root: int) -> list[int]:
    """Live (non-zombie) descendants of ``root``, parents before children."""
    children = _children_map()
    found: list[int] = []
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return [pid for pid in found if _alive(pid)]


def _children_map() -> dict[int, list[int]]:
    """``ppid -> [pid]`` for every process, from ``/proc`` (``ps`` where there is no ``/proc``)."""
    children: dict[int, list[int]] = {}
    if os.path.isdir("/proc/self"):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            stat = _stat(int(name))
            if stat is not None:
                children.setdefault(int(stat[1]), []).append(int(name))
        return children
    import subprocess  # only where there is no /proc: its import is not paid by every call on Linux

    listing = subprocess.run(
        ["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True, text=True, check=False
    )
    for line in listing.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append(int(fields[0]))
    return children


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, ..."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].split()


def _alive(pid: int) -> bool:
    if not os.path.isdir("/proc/self"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    stat = _stat(pid)
    return stat is not None and stat[0] not in (b"Z", b"X")


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # no interpreter teardown: the call waits for this exit

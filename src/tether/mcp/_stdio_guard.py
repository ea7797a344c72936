"""The guard of one stdio MCP server: a small parent process so that nothing the server starts outlives tether.

Run as a script by :mod:`._connection` (``python -S -I _stdio_guard.py EXECUTABLE ARG0 ARGS...``; stdlib only, never
imported by tether) in place of the server's command; the server keeps the guard's stdin, stdout and stderr. The
guard

- marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux): a process the server starts that is
  orphaned (``setsid cmd &``, a double fork, a daemon) is re-parented to the guard, not to init, so the server's
  processes are exactly the guard's descendants, whatever sessions and groups they moved to;
- asks for ``SIGTERM`` when tether dies (``PR_SET_PDEATHSIG``; even a SIGKILLed tether), and starts the server with
  ``PR_SET_PDEATHSIG(SIGKILL)`` so the guard's own death takes the server with it;
- waits until the server exits or the guard is told to end (``SIGTERM``, ``SIGINT``, ``SIGHUP``: tether's close
  terminates the process group, or tether died), then ends every descendant: ``SIGTERM``, ``SIGKILL`` to what is
  left after a second, until none is alive, and exits with the server's status (``128 + n`` for a signal ``n``).

Without ``prctl`` (not Linux) the guard is no subreaper: an orphan then goes to init and only the processes still
below the guard are ended. This mirrors the bash tool's guard (``builtins/_shell_guard.py``), which serves one call
per fork over a socket; a server is one long-lived process, so it gets one guard of its own, started directly.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_GRACE = 1.0
_POLL = 0.02
_ENDING = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _prctl() -> Callable[[int, int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _descendants(root: int) -> list[int]:
    """The live descendants of ``root`` (from ``/proc``; none where there is no ``/proc``)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def _reap() -> dict[int, int]:
    ended: dict[int, int] = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended[pid] = status


def _end_all(me: int) -> None:
    """SIGTERM every descendant, SIGKILL what is left after the grace period, until none is alive."""
    deadline = time.monotonic() + _GRACE
    sent = signal.SIGTERM
    while True:
        _reap()
        alive = _descendants(me)
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, sent)
            except OSError:
                pass
        time.sleep(_POLL)
        if time.monotonic() > deadline:
            sent = signal.SIGKILL


def main(argv: list[str]) -> int:
    me, parent = os.getpid(), os.getppid()
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # tether died before the signal was armed
            return 143
    waited = {signal.SIGCHLD, *_ENDING}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    server = os.fork()
    if server == 0:
        try:
            if prctl is not None:
                prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                if os.getppid() != me:
                    os._exit(137)
            for name in (
                "SIGPIPE",
                "SIGXFZ",
                "SIGXFSZ",
            ):  # Python ignores these; a server expects its defaults
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, set())
            os.execv(argv[0], argv[1:])
        except OSError as exc:
            os.write(2, f"cannot run {argv[0]}: {exc.strerror}\n".encode(errors="replace"))
        finally:
            os._exit(127)
    status: int | None = None
    signo = 0
    while status is None and not signo:
        info = signal.sigwaitinfo(waited)
        if info.si_signo == signal.SIGCHLD:
            status = _reap().get(server)
        else:
            signo = info.si_signo
    _end_all(me)
    if status is None:
        return 128 + signo
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

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
  left after a second, until none is alive (giving up a second later on one it may not signal), and exits with the server's status (``128 + n`` for a signal ``n``).

Without ``prctl`` (not Linux) the guard is no subreaper: an orphan then goes to init and only the processes still
below the guard are ended. This mirrors the bash tool's guard (``builtins/_shell_guard.py``), which serves one call
per fork over a socket; a server is one long-lived process, so it gets one guard of its own, started directly.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from typing import Any

_GRACE = 1.0
_ENDING = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def _shell_guard() -> Any:
    """The bash tool's guard script (``builtins/_shell_guard.py``, stdlib only), loaded from its file: its way of
    finding and ending a subreaper's descendants (``_end``, ``_reap``) and of reaching ``prctl`` is this guard's too.
    """
    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "builtins", "_shell_guard.py"
    )
    spec = importlib.util.spec_from_file_location("_shell_guard", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    shared = _shell_guard()
    me, parent = os.getpid(), os.getppid()
    prctl = shared._prctl()
    if prctl is not None:
        prctl(shared._PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        prctl(shared._PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # tether died before the signal was armed
            return 143
    waited = {signal.SIGCHLD, *_ENDING}
    signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    server = os.fork()
    if server == 0:
        try:
            if prctl is not None:
                prctl(shared._PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
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
            status = shared._reap(server, None)
        else:
            signo = info.si_signo
    status = shared._end(server, _GRACE, status)
    if status is None:
        return 128 + signo
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

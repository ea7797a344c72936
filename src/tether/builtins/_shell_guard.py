"""The guards: one small supervisor process per shell command, so that nothing of the call survives.

Run as a script by :mod:`tether.builtins._shell_run` (``python -S -I _shell_guard.py <socket fd>``; stdlib only, never
imported by tether), once per tether process: the **server**. It waits for requests on its socket and forks one
**guard** per bash call (a fork of this small single-threaded process costs about a millisecond; starting Python
costs ~15 ms). It ends when tether closes the socket or dies. It reaps the guards it forked.

A request is an 8-byte length, then a JSON object ``{"argv", "cwd", "env", "grace"}`` (and ``"landlock"`` when the
sandbox falls back to Landlock: ``{"module", "writable", "network"}``; the guard loads that stdlib-only module by path,
once, and confines the shell with it just before ``execve``, so a failure is reported like a failed ``execve``; and
``"seccomp"``, the path of ``sandbox/_seccomp.py``, whose filter refusing unix sockets the guard installs the same
way, after Landlock), with three descriptors
attached (``SCM_RIGHTS``): the output pipe's write end, the control pipe's read end (tether alone holds the write
end), and the report pipe's write end. The guard

- reports ``G<pid>`` (its own pid), leaves the server's session, puts the output pipe on its stdout and stderr, and
  marks itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux): every process the command starts that
  is orphaned (``setsid CMD &``, a double fork, a daemon) is re-parented to the guard, not to init, so the call's
  processes are exactly the guard's descendants, whatever sessions and groups they moved to;
- starts the shell in ``cwd``, in a new session, with the request's environment and ``PR_SET_PDEATHSIG(SIGKILL)``
  (the guard is single-threaded, so the guard's death, not some thread's exit, is what that signal follows), and
  reports ``P<pid>``, or ``C<errno>`` (the working directory) / ``E<errno>`` (the shell) when it could not;
- waits until the shell exits, tether asks it to end the call (a byte on the control pipe: timeout, cancellation), or
  tether is gone (end of file on the control pipe: tether exited or was killed, even with SIGKILL);
- then ends every descendant: SIGTERM, SIGKILL to what is left after the grace period, until none is alive, reaping
  each (it is the parent of the orphans, and has no other children), reports ``X<status>`` (the shell's exit status,
  ``128 + n`` for a signal ``n``) and exits.

The server is a child subreaper too: a guard that dies before its call is over (a command that runs
``kill -9 $PPID``) leaves its orphans to the server, which forks nothing but guards, so every other child it finds is
an orphan of a dead guard and is killed with its descendants when the server reaps.

Without ``prctl`` (not Linux) a guard is no subreaper: an orphan then goes to init and only the processes still
below the guard are ended.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.01
_HEADER = 8

Prctl = Callable[[int, int, int, int, int], int]


def _prctl() -> Prctl | None:
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
    """The server: fork a guard for each request until the socket ends."""
    sock = socket.socket(fileno=int(argv[0]))
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGCHLD, _reap_guards)
    while True:
        try:
            received = _receive(sock)
        except OSError:
            return 0
        if received is None:
            return 0
        request, fds = received
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            continue
        landlock = request.get("landlock")
        for module in (landlock["module"] if landlock is not None else None, request.get("seccomp")):
            if module is not None:
                try:
                    _loaded(module)  # loaded once here, so each guard's fork has it
                except Exception:  # the shell's child reports the same failure as a failed execve
                    pass
        # SIGCHLD is blocked until the new guard is in _GUARDS, so the handler never takes it for an orphan.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            code = 127
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
                sock.close()
                code = guard(request, fds, prctl)
            finally:
                os._exit(code)
        _GUARDS.add(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for fd in fds:
            os.close(fd)


_GUARDS: set[int] = set()
"""The guards the server forked and has not reaped yet; any other child of the server is an orphan of a dead guard."""


def _reap_guards(signum: int, frame: object) -> None:
    """Reap ended children; kill the orphans a dead guard left to the server (its subreaper) with their descendants."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
        _GUARDS.discard(pid)
    # Only this process's own children file is read per reap; the whole /proc is walked only when an orphan is found.
    for orphan in _children():
        if orphan in _GUARDS:
            continue
        for pid in [orphan, *_descendants(orphan)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _receive(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    header, fds, _, _ = socket.recv_fds(sock, _HEADER, 3)
    if not header:
        return None
    header += _exactly(sock, _HEADER - len(header))
    payload = _exactly(sock, int.from_bytes(header, "big"))
    return json.loads(payload), fds


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    while size > 0:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise OSError("the request was cut short")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def guard(request: dict[str, Any], fds: list[int], prctl: Prctl | None) -> int:
    """Run one call (see the module docstring); the exit status of the guard process."""
    sink, control, report = fds
    os.set_inheritable(control, False)
    os.set_inheritable(report, False)
    me = os.getpid()
    _say(report, f"G{me}")
    os.setsid()
    os.dup2(sink, 1)
    os.dup2(sink, 2)
    os.close(sink)
    if prctl is not None:
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    command: list[str] = request["argv"]
    env: dict[str, str] = request["env"]
    grace = float(request["grace"])
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        _say(report, f"C{exc.errno or 0}")
        return 127
    errors, errors_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the shell
        try:
            os.close(errors)
            os.setsid()
            if prctl is not None:
                prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                if os.getppid() != me:  # the guard died before the signal was armed
                    os._exit(137)
            # Python ignores these; a shell started by any other program has them at their defaults.
            for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
            landlock = request.get("landlock")
            if landlock is not None:
                _loaded(landlock["module"]).restrict(
                    list(landlock["writable"]), network=bool(landlock["network"])
                )
            seccomp = request.get("seccomp")
            if (
                seccomp is not None
            ):  # after Landlock: the filter refuses unix sockets, not the calls Landlock makes
                _loaded(seccomp).deny_unix_sockets()
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
        _say(report, "E" + failure.decode())
        return 127
    _say(report, f"P{pid}")
    status = _wait(pid, control)
    status = _end(pid, grace, status)
    if status is None:
        code = 137
    elif os.WIFSIGNALED(status):
        code = 128 + os.WTERMSIG(status)
    else:
        code = os.WEXITSTATUS(status)
    _say(report, f"X{code}")
    return code


_MODULES: dict[str, Any] = {}


def _loaded(path: str) -> Any:
    """The stdlib-only module at ``path`` (tether's ``sandbox/_landlock.py`` or ``sandbox/_seccomp.py``), loaded once
    per server.

    Raises:
        OSError: it cannot be loaded.
    """
    module = _MODULES.get(path)
    if module is None:
        import importlib.util

        name = "_tether_" + os.path.basename(path).removesuffix(".py").lstrip("_")
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise OSError(2, "cannot load the sandbox module", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[path] = module
    return module


def _say(report: int, line: str) -> None:
    """Report a line; if tether is gone (a broken pipe), the guard still does its job."""
    try:
        os.write(report, (line + "\n").encode())
    except OSError:
        pass


def _wait(shell: int, control: int) -> int | None:
    """Wait for the shell to exit (its status) or for tether to end the call or go away (``None``)."""
    pidfd: int | None = None
    try:
        pidfd = os.pidfd_open(shell)
    except (AttributeError, OSError):
        pass
    # poll, not select: no FD_SETSIZE limit on the descriptors.
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


def _children() -> list[int]:
    """This process's children (cheap on Linux: single-threaded, one ``children`` file; else the whole table)."""
    pid = os.getpid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as fh:
            return [int(child) for child in fh.read().split()]
    except OSError:
        return _children_map().get(pid, [])


def _has_children() -> bool:
    """Whether the guard has a child."""
    return bool(_children())


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
    os._exit(main(sys.argv[1:]))  # no interpreter teardown

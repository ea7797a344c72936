"""The tests' fork server process (see ``_forkserver.py``): ``python _zygote.py ADDRESS MODULE...``.

Imports the modules, listens on the unix socket ``ADDRESS``, says ``ready`` on stdout, then serves commands (any number
at once) until its stdin closes. Each command is forked from here and runs ``tether.cli.main`` in the child; the reply on
the request's connection is ``PID\\n`` once the child runs, then ``EXIT_CODE\\n`` once it has ended.
"""

import sys

del sys.path[
    0
]  # this script's folder (tests/cli): the commands see the path a fresh ``python -m tether.cli`` has

import fcntl  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pkgutil  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import tempfile  # noqa: E402
import termios  # noqa: E402
import time  # noqa: E402

_LENGTH = struct.Struct("!I")


def _warm(names: list[str]) -> None:
    for name in names:
        package, star, _ = name.partition(".*")
        module = importlib.import_module(package)
        if star:  # "package.*": its modules too (the command groups)
            for found in pkgutil.iter_modules(module.__path__):
                importlib.import_module(f"{package}.{found.name}")


def _child(listening: list[int], fds: list[int], request: dict) -> None:  # type: ignore[type-arg]
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in listening:  # the server's sockets and pipes: the command gets none of them
        os.close(fd)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    if request.get(
        "terminal"
    ):  # a new session whose controlling terminal is fd 0, so ^C typed there is SIGINT
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    tempfile.tempdir = None  # the request's TMPDIR, not a directory found before
    time.tzset()  # the request's TZ
    from tether.cli import main

    sys.argv = [sys.argv[0], *request["args"]]
    main(request["args"])


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:  # type: ignore[type-arg]
    head, fds, _, _ = socket.recv_fds(conn, _LENGTH.size, 3)
    while len(head) < _LENGTH.size:
        more = conn.recv(_LENGTH.size - len(head))
        if not more:
            raise EOFError("the request ended early")
        head += more
    (length,) = _LENGTH.unpack(head)
    body = b""
    while len(body) < length:
        more = conn.recv(length - len(body))
        if not more:
            raise EOFError("the request ended early")
        body += more
    return json.loads(body), fds


def _send(conn: socket.socket, line: str) -> None:
    try:
        conn.sendall(f"{line}\n".encode())
    except OSError:  # the test gave up on the command already (its timeout: it kills the child itself)
        pass


def main() -> None:
    address, *warm = sys.argv[1:]
    _warm(warm)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a child's end wakes the loop through the wakeup fd
    running: dict[int, socket.socket] = {}  # pid -> the connection its status goes to
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        try:
            ready = select.select([server, sys.stdin, wake_r], [], [])[0]
        except InterruptedError:
            continue
        if wake_r in ready:
            os.read(wake_r, 4096)
        while running:  # reap whatever ended (one wake-up may stand for several children)
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = running.pop(pid, None)
            if conn is not None:
                _send(conn, str(os.waitstatus_to_exitcode(status)))
                conn.close()
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            return  # the test process closed our stdin (or ended)
        if server in ready:
            conn, _ = server.accept()
            try:
                request, fds = _receive(conn)
            except (OSError, EOFError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    listening = [server.fileno(), conn.fileno(), wake_r, wake_w, sys.stdin.fileno()]
                    listening += [c.fileno() for c in running.values()]
                    _child(listening, fds, request)
                finally:
                    os._exit(70)  # main() ends the process itself; reaching here is a failure the test sees
            for fd in fds:
                os.close(fd)
            running[pid] = conn
            _send(conn, str(pid))


main()

"""The tests' fork server process (see ``_forkserver.py``): ``python _zygote.py ADDRESS MODULE...``.

Imports the modules, listens on the unix socket ``ADDRESS``, says ``ready`` on stdout, then serves one command at a
time until its stdin closes. Each command is forked from here and runs ``tether.cli.main`` in the child; the reply on
the request's connection is ``PID\\n`` once the child runs, then ``EXIT_CODE\\n`` once it has ended.
"""

import sys

del sys.path[
    0
]  # this script's folder (tests/cli): the commands see the path a fresh ``python -m tether.cli`` has

import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pkgutil  # noqa: E402
import select  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

_LENGTH = struct.Struct("!I")


def _warm(names: list[str]) -> None:
    for name in names:
        module = importlib.import_module(name)
        if hasattr(module, "__path__"):  # a package: its modules too (the command groups)
            for found in pkgutil.iter_modules(module.__path__):
                importlib.import_module(f"{name}.{found.name}")


def _child(server: socket.socket, conn: socket.socket, fds: list[int], request: dict) -> None:  # type: ignore[type-arg]
    server.close()
    conn.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    tempfile.tempdir = None  # the request's TMPDIR, not a directory found before
    time.tzset()  # the request's TZ
    from tether.cli import main

    sys.argv = [sys.argv[0], *request["args"]]
    main(request["args"])


def _serve(server: socket.socket, conn: socket.socket) -> None:
    head, fds, _, _ = socket.recv_fds(conn, _LENGTH.size, 3)
    while len(head) < _LENGTH.size:
        head += conn.recv(_LENGTH.size - len(head))
    (length,) = _LENGTH.unpack(head)
    body = b""
    while len(body) < length:
        more = conn.recv(length - len(body))
        if not more:
            raise EOFError("the request ended early")
        body += more
    request = json.loads(body)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            _child(server, conn, fds, request)
        finally:
            os._exit(70)  # main() ends the process itself; reaching here is a failure the test sees
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(f"{pid}\n".encode())
    except OSError:  # the test gave up on the command already (its timeout): it kills the child
        pass
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
    except OSError:
        pass


def main() -> None:
    address, *warm = sys.argv[1:]
    _warm(warm)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(16)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        ready = select.select([server, sys.stdin], [], [])[0]
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            return  # the test process closed our stdin (or ended)
        if server in ready:
            conn, _ = server.accept()
            with conn:
                _serve(server, conn)


main()

"""The bridge inside a sandbox: a loopback TCP port in the sandbox's network namespace, forwarded to tether's proxy.

Run as ``python -S -I _bridge.py SOCKET [--seccomp MODULE] -- ARGV...`` inside bubblewrap (network ``proxy``), in front of the command.
Processes in the sandbox's network namespace reach nothing by TCP but its loopback; tether's proxy listens on a unix
socket bound into the sandbox (``SOCKET``). This script:

1. listens on ``127.0.0.1:<port>`` (a port the kernel picks, so it never collides with what the command binds);
2. forks: the child ``execve``\\ s ``ARGV`` with the proxy variables (:data:`VARIABLES`, each pointing at that port)
   and the default signal dispositions, after installing the seccomp filter of ``MODULE`` (``sandbox/_seccomp.py``:
   no unix sockets) when one is named, since the bridge itself must still open one to the proxy (a filter fails
   closed: the command does not run, exit 126); the parent forwards each connection to ``SOCKET`` byte for byte (the proxy
   reads the protocol) until the child exits, then exits with its status (``128 + n`` for a signal ``n``).

The port listens before the command starts (connections made at once wait in the backlog). The bridge never
outlives the command: it exits as soon as the command (its child) does, so bubblewrap, and the guard's wait, end
with the command as before (a bridge left behind would cost the guard a round of SIGTERM and polling), and the guard
ends it with every other process of the call on a timeout or a cancellation. It writes nothing: its standard streams
are ``/dev/null``.

Standard library only, imported at start-up as little as possible (``_socket``, ``_thread``, ``_signal``): its
time until ``fork`` is what every sandboxed command that may use the network waits for. Not imported by tether
itself.
"""

import _signal  # pyright: ignore[reportMissingImports] (the builtin behind signal, without its enum import)
import _socket
import _thread
import posix  # os without its imports (a millisecond of the start-up every bridged command waits for)
import sys

NO_PROXY = "localhost,127.0.0.1,::1"
"""The sandbox's own loopback (a server the command started) is reached directly, never through the proxy."""

VARIABLES = {
    "HTTP_PROXY": "http://127.0.0.1:{port}",
    "HTTPS_PROXY": "http://127.0.0.1:{port}",
    "ALL_PROXY": "http://127.0.0.1:{port}",
    "http_proxy": "http://127.0.0.1:{port}",
    "https_proxy": "http://127.0.0.1:{port}",
    "all_proxy": "http://127.0.0.1:{port}",
    "GRPC_PROXY": "http://127.0.0.1:{port}",
    "NO_PROXY": NO_PROXY,
    "no_proxy": NO_PROXY,
    "NODE_USE_ENV_PROXY": "1",
    "TETHER_PROXY": "127.0.0.1:{port}",
}
"""What the command gets. ``ALL_PROXY`` is an ``http://`` URL: the port speaks SOCKS5 too (``socks5h://`` + the
address in ``TETHER_PROXY``), but clients such as httpx refuse to start when ``ALL_PROXY`` names SOCKS and their SOCKS
extra is missing. curl reads the lowercase ``http_proxy`` only; Node's fetch reads the variables with
``NODE_USE_ENV_PROXY=1``; gRPC reads ``GRPC_PROXY``."""

_CHUNK = 1 << 16


def main(argv: list[str]) -> None:
    seccomp = argv[3] if len(argv) > 4 and argv[2] == "--seccomp" else None
    rest = 4 if seccomp is not None else 2
    if len(argv) < rest + 2 or argv[rest] != "--":
        sys.stderr.write("usage: _bridge.py SOCKET [--seccomp MODULE] -- ARGV...\n")
        posix._exit(2)
    target, command = argv[1], argv[rest + 1 :]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    env = dict(posix.environ)
    for name, value in VARIABLES.items():
        env[name.encode()] = value.format(port=listener.getsockname()[1]).encode()
    child = posix.fork()
    if child == 0:
        listener.close()
        # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across execve, and `yes | head` would
        # then print "Broken pipe" instead of ending quietly: give the command the defaults (as subprocess does).
        for name in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
            if hasattr(_signal, name):
                _signal.signal(getattr(_signal, name), _signal.SIG_DFL)
        if seccomp is not None:
            _filter(seccomp)
        _exec(command, env)
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    null = posix.open("/dev/null", posix.O_RDWR)
    for fd in (0, 1, 2):  # let go of the call's output pipe
        posix.dup2(null, fd)
    posix.close(null)
    _thread.start_new_thread(_serve, (listener, target))
    _, status = posix.waitpid(child, 0)
    code = posix.waitstatus_to_exitcode(status)
    posix._exit(code if code >= 0 else 128 - code)  # the command's status, as bubblewrap reports a signal's


def _filter(module: str) -> None:
    """Install ``module``'s seccomp filter in this process (the command's child), or end it with 126."""
    try:
        sys.path.insert(0, module.rpartition("/")[0])
        import _seccomp  # pyright: ignore[reportMissingImports] (sandbox/_seccomp.py, by path)

        _seccomp.deny_unix_sockets()
    except (ImportError, OSError) as exc:
        sys.stderr.write(f"tether sandbox: cannot refuse unix sockets: {exc}\n")
        posix._exit(126)


def _exec(command: list[str], env: dict[bytes, bytes]) -> None:
    """``execvpe`` without the os module: the first ``PATH`` entry that runs ``command[0]``."""
    name = command[0]
    found: list[str] = [name] if "/" in name else []
    if not found:
        path = env.get(b"PATH", b"/usr/local/bin:/usr/bin:/bin").decode("utf-8", "surrogateescape")
        found = [f"{directory or '.'}/{name}" for directory in path.split(":")]
    error: OSError = FileNotFoundError(2, "No such file or directory")
    for candidate in found:
        try:
            posix.execve(candidate, command, env)
        except OSError as exc:
            error = (
                exc
                if not isinstance(exc, FileNotFoundError) or isinstance(error, FileNotFoundError)
                else error
            )
    sys.stderr.write(f"tether sandbox: cannot run {name}: {error.strerror}\n")
    posix._exit(127)


def _serve(listener: _socket.socket, target: str) -> None:
    while True:
        try:
            fd, _ = listener._accept()  # pyright: ignore[reportAttributeAccessIssue] (the C socket's accept)
        except OSError:
            return
        client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
        _thread.start_new_thread(_connect, (client, target))


def _connect(client: _socket.socket, target: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(target)
    except OSError:
        client.close()
        upstream.close()
        return
    done = _thread.allocate_lock()
    ends = [2]

    def finish() -> None:
        with done:
            ends[0] -= 1
            last = ends[0] == 0
        if last:
            client.close()
            upstream.close()

    def pump(source: _socket.socket, sink: _socket.socket) -> None:
        # One direction until its end; a sink that stopped taking data (the proxy refused and closed) makes the rest
        # of the source read and dropped, so the other direction still delivers the refusal before the close.
        sinking = True
        try:
            while True:
                data = source.recv(_CHUNK)
                if not data:
                    break
                if sinking:
                    try:
                        sink.sendall(data)
                    except OSError:
                        sinking = False
            sink.shutdown(_socket.SHUT_WR)
        except OSError:
            for sock in (source, sink):
                try:
                    sock.shutdown(_socket.SHUT_RDWR)
                except OSError:
                    pass
        finish()

    _thread.start_new_thread(pump, (upstream, client))
    pump(client, upstream)


if __name__ == "__main__":
    main(sys.argv)

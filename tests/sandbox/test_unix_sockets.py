"""A sandboxed command cannot reach a unix socket it can see: the attack is the host's ``/run/docker.sock``.

A read-only bind mount does not stop ``connect()`` on a unix socket, so under bubblewrap alone a command could ask
the host's Docker daemon for a root container (``docker run -v /:/host``). Each test puts a listening unix socket
where the sandboxed command can see it (in the project: any visible path serves, ``/run`` is one of them) and runs a
real command through the bash tool's guard (or an MCP server's trampoline) that tries to connect to it. The
listener counts what reaches it. ``sandbox.unix_sockets: true`` is the control: the same probe then connects, so
each test fails without the filter.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.builtins._shell_run import run_shell
from tether.output import OutputStore
from tether.sandbox import Sandbox, SandboxSettings, detect
from tether.sandbox._landlock import abi_version
from tether.sandbox._seccomp import ARCHITECTURES, program, supported

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not supported(), reason="the seccomp filter does not know this machine's architecture"
    ),
]

TMP = Path(os.path.realpath(tempfile.gettempdir()))
PROBE = (
    "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect('{path}'); "
    "print('CONNECTED', s.recv(10))\""
)
needs_bwrap = pytest.mark.skipif(detect("bwrap").mechanism != "bwrap", reason="needs bubblewrap")


class Daemon:
    """A unix socket server standing in for ``docker.sock``: it greets and counts each connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connections = 0
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            conn.sendall(b"root")
            conn.close()

    def close(self) -> None:
        self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self.thread.join()


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Daemon]]:
    root = tmp_path / "project"
    root.mkdir()
    daemon = Daemon(root / "docker.sock")
    yield root, daemon
    daemon.close()


async def _bash(sandbox: Sandbox, root: Path, out: Path, command: str) -> str:
    policy = sandbox.policy(str(root), "ses_unix")
    store = OutputStore(out)
    run = await run_shell(
        command,
        cwd=root,
        time_limit=60,
        spill=lambda: store.open_managed("s"),
        sandbox=sandbox,
        policy=policy,
    )
    return run.output


def _sandbox(tmp_path: Path, **settings: object) -> Sandbox:
    mode = settings.get("mode", "bwrap")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    base = TMP if mode == "bwrap" else tmp_path / "tmp"
    return Sandbox.make(SandboxSettings(**settings), detect(mode), base, ())  # type: ignore[arg-type]


@needs_bwrap
@pytest.mark.parametrize("network", ["none", "proxy", "host"])
async def test_under_bubblewrap_a_visible_socket_cannot_be_connected(
    project: tuple[Path, Daemon], tmp_path: Path, network: str
) -> None:
    root, daemon = project
    sandbox = _sandbox(tmp_path, mode="bwrap", network=network)
    output = await _bash(sandbox, root, tmp_path / "out", PROBE.format(path=root / "docker.sock"))
    assert "Operation not permitted" in output and "CONNECTED" not in output, output
    assert daemon.connections == 0
    # The program's own pipes between its processes still work (socketpair), as does the network it was given.
    pair = await _bash(
        sandbox, root, tmp_path / "out", "python3 -c 'import socket; print(len(socket.socketpair()))'"
    )
    assert pair.strip() == "2", pair


@needs_bwrap
async def test_unix_sockets_true_lets_the_same_probe_connect(
    project: tuple[Path, Daemon], tmp_path: Path
) -> None:
    root, daemon = project
    sandbox = _sandbox(tmp_path, mode="bwrap", network="none", unix_sockets=True)
    output = await _bash(sandbox, root, tmp_path / "out", PROBE.format(path=root / "docker.sock"))
    assert "CONNECTED b'root'" in output and daemon.connections == 1, output
    assert sandbox.policy(str(root), "ses_unix").describe()["unixSockets"] is True


@pytest.mark.skipif(abi_version() < 1, reason="the kernel has no Landlock")
async def test_under_landlock_the_guard_installs_the_filter_too(
    project: tuple[Path, Daemon], tmp_path: Path
) -> None:
    root, daemon = project
    sandbox = _sandbox(tmp_path, mode="landlock")
    assert sandbox.policy(str(root), "ses_unix").describe()["unixSockets"] is False
    output = await _bash(sandbox, root, tmp_path / "out", PROBE.format(path=root / "docker.sock"))
    assert "Operation not permitted" in output and daemon.connections == 0, output


@needs_bwrap
def test_a_sandboxed_mcp_server_starts_behind_the_filter(
    project: tuple[Path, Daemon], tmp_path: Path
) -> None:
    root, daemon = project
    sandbox = _sandbox(tmp_path, mode="bwrap", network="none")
    probe = PROBE.format(path=root / "docker.sock").removeprefix("python3 -c ").strip('"')
    launch = sandbox.wrap_server("probe", ["python3", "-c", probe], str(root), str(root))
    assert launch is not None and launch.argv[:2] == [sys.executable, "-S"]
    done = subprocess.run(
        launch.argv,
        env={**os.environ, **launch.env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Operation not permitted" in done.stderr and daemon.connections == 0, done.stderr


def test_the_program_is_built_for_each_known_machine_and_refuses_the_rest() -> None:
    for machine in ARCHITECTURES:
        code = program(machine)
        assert len(code) % 8 == 0 and len(code) // 8 == 11
    assert program("x86_64") != program("aarch64")
    with pytest.raises(OSError, match="no seccomp filter for the sparc64 architecture"):
        program("sparc64")
    assert not supported("sparc64")

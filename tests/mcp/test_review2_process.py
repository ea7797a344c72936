"""Attack (review 2, hole 3): an MCP server's processes must not outlive tether, neither a daemon it detached
(``setsid`` and a double fork) when tether closes, nor the server itself when tether is SIGKILLed."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import opened
from .test_review2_workdir import tools_file

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("review2_server.py")


def ends(pid: int, timeout: float = 30) -> bool:
    """Whether process ``pid`` ends within ``timeout`` seconds (waited on its pidfd: no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def command(tmp_path: Path) -> list[str]:
    return [sys.executable, str(SERVER), str(tmp_path / "state"), str(tools_file(tmp_path)), "daemon"]


async def test_a_detached_daemon_of_a_server_ends_when_tether_closes(tmp_path: Path, project: Path) -> None:
    async with opened(tmp_path, project, {"s": {"command": command(tmp_path)}}) as (_, location):
        assert location.mcp is not None and location.mcp.statuses()[0].state == "connected"
        daemon = int((tmp_path / "state" / "daemon").read_text())
        server = json.loads((tmp_path / "state" / "start.json").read_text())["pid"]
        assert not ends(daemon, timeout=0)
    try:
        assert ends(server, timeout=0)
        assert ends(daemon, timeout=0), "the setsid daemon outlived tether"
    finally:
        for pid in (server, daemon):
            if not ends(pid, timeout=0):
                os.kill(pid, signal.SIGKILL)


def test_a_sigkilled_tether_takes_its_servers_down(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = textwrap.dedent(
        f"""
        import anyio, sys
        from pathlib import Path
        from tether import Runtime
        from tether.config import Config

        async def main():
            config = Config(data={{"mcp": {{"s": {{"command": {command(tmp_path)!r}}}}}}})
            async with Runtime(data_dir={str(tmp_path / "data")!r}, config=config) as rt:
                location = await rt.location(Path({str(project)!r}))
                print(location.mcp.statuses()[0].state, flush=True)
                sys.stdin.read()

        anyio.run(main)
        """
    )
    tether = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert tether.stdout is not None
        assert tether.stdout.readline().strip() == "connected"
        daemon = int((tmp_path / "state" / "daemon").read_text())
        server = json.loads((tmp_path / "state" / "start.json").read_text())["pid"]
        tether.kill()
        tether.wait()
        try:
            assert ends(server), "the server outlived a SIGKILLed tether"
            assert ends(daemon), "the server's daemon outlived a SIGKILLed tether"
        finally:
            for pid in (server, daemon):
                if not ends(pid, timeout=0):
                    os.kill(pid, signal.SIGKILL)
    finally:
        tether.kill()
        tether.wait()
        assert tether.stdin is not None and tether.stdout is not None
        tether.stdin.close()
        tether.stdout.close()

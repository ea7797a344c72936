"""grep never hands ripgrep a socket as its path (as for a FIFO or a device, tests/builtins/test_search_limits.py):
the call fails at once naming what the path is."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.anyio
async def test_a_socket_as_the_search_path_fails_naming_it(project: Any, root: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(root / "s.sock"))
        failed = await project.fail("grep", pattern="x", path="s.sock")
    finally:
        server.close()
    assert "Search path is a socket, not a regular file or a directory: s.sock" in failed.error

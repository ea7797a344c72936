"""What tether's two local HTTP servers share (``tether serve`` and ``tether mcp serve --http``): loopback checks,
the ``Host`` allow-list, the listening socket and the private token file.

Both serve the user's project with the user's rights to whoever holds a token, so both are guarded the same way
(docs/security.md); the guards themselves live with each server (``server/_security.py``, ``mcp_server/_http.py``).
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
from collections.abc import Sequence
from pathlib import Path

from .errors import UsageError

__all__ = ["LOOPBACK_NAMES", "allowed_hosts", "bind", "is_loopback", "write_token"]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, brackets allowed) only reaches this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` header values served: each loopback name and ``host``, with ``port``; then ``extra`` as given."""
    named = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = dict.fromkeys((*LOOPBACK_NAMES, named))
    return [f"{name}:{port}" for name in names] + list(extra)


def bind(host: str, port: int) -> socket.socket:
    """A listening, non-blocking socket on ``host``:``port`` (``0``: any free port).

    Raises:
        UsageError: the address cannot be bound.
    """
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.setblocking(False)
    return sock


def write_token(data_dir: Path, name: str) -> str:
    """A new random token (256 bits), written with mode 0600 to ``data_dir/name``. Blocking.

    What was at that path (an older token, a planted file or symlink) is replaced, never written through.
    """
    token = secrets.token_urlsafe(32)
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = data_dir / name
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    return token

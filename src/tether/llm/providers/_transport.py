"""The HTTP client the SDK clients are built with: the SDK's defaults, plus prompt ACKs on Linux.

Why: a server that writes one response in several small ``send`` calls without ``TCP_NODELAY`` (Python's
``http.server``, many small proxies and test servers) holds its second write until the client ACKs the first
(Nagle). A keep-alive client that has just sent a request is in Linux's delayed-ACK ("pingpong") mode and ACKs only
after about 40 ms, so every response after the first on a connection waits ~40 ms for nothing. A fresh connection
starts in quick-ACK mode, which is why the first request never shows it. ``TCP_QUICKACK`` is not sticky (the kernel
re-enters delayed-ACK mode as soon as the client sends again), so it is re-armed before every read: one
``setsockopt`` per read, and nothing else changes (keep-alive, HTTP/1.1, ``Content-Length`` bodies, timeouts,
proxies from the environment all stay the SDK's).

Measured against ``opencode-peer/scripted_openai_server.py`` on 127.0.0.1: 44 ms per keep-alive request without it,
0.25 ms with it (``bench/peer.py`` prints both every run).

The backend is installed on the pools of the SDK's default ``httpx2.AsyncClient`` (its transport and the proxy
mounts it made from the environment). That reaches into ``httpx2``/``httpcore2`` internals; when they change shape
the client is used unchanged (the optimization is skipped, never an error).
"""

# ruff: noqa: ASYNC109  (httpcore2 defines these signatures, timeout parameters included)

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any, Protocol

import httpcore2
from httpcore2 import AsyncNetworkBackend, AsyncNetworkStream

__all__ = ["QUICK_ACK", "QuickAckBackend", "install_quick_ack"]


class _Settable(Protocol):
    def setsockopt(self, level: int, optname: int, value: int, /) -> None: ...


QUICK_ACK: int | None = getattr(socket, "TCP_QUICKACK", None)
"""The socket option (Linux only); ``None`` where the platform has no such knob."""


class QuickAckStream(AsyncNetworkStream):
    """A network stream that re-arms ``TCP_QUICKACK`` before each read (see the module docstring)."""

    __slots__ = ("_inner", "_sock")

    def __init__(self, inner: AsyncNetworkStream) -> None:
        self._inner = inner
        # On asyncio, anyio gives the transport's socket wrapper (``asyncio.trsock.TransportSocket``), not a
        # ``socket.socket``; both have ``setsockopt``, which is all that is used.
        sock = inner.get_extra_info("socket")
        self._sock: _Settable | None = sock if callable(getattr(sock, "setsockopt", None)) else None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        sock = self._sock
        if sock is not None and QUICK_ACK is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, QUICK_ACK, 1)
            except OSError:
                self._sock = None  # not a TCP socket after all (or closed): stop trying
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> AsyncNetworkStream:
        return QuickAckStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class QuickAckBackend(AsyncNetworkBackend):
    """Wraps a network backend so its TCP streams ACK promptly."""

    __slots__ = ("_inner",)

    def __init__(self, inner: AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncNetworkStream:
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return QuickAckStream(stream)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> AsyncNetworkStream:
        return await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def install_quick_ack(http_client: Any) -> int:
    """Wrap the network backend of every connection pool of ``http_client``; returns how many were wrapped.

    Does nothing where the platform has no ``TCP_QUICKACK`` or the client does not have the expected shape.
    """
    if QUICK_ACK is None:
        return 0
    transports: list[Any] = [getattr(http_client, "_transport", None)]
    mounts = getattr(http_client, "_mounts", None)
    if isinstance(mounts, dict):
        transports.extend(mounts.values())  # pyright: ignore[reportUnknownArgumentType]
    wrapped = 0
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if not isinstance(pool, httpcore2.AsyncConnectionPool):
            continue
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, AsyncNetworkBackend) and not isinstance(backend, QuickAckBackend):
            pool._network_backend = QuickAckBackend(backend)  # pyright: ignore[reportAttributeAccessIssue]
            wrapped += 1
    return wrapped

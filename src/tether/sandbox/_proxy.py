"""tether's network proxy: the only way out of a sandbox whose network is ``proxy``.

One proxy per sandboxed call, in tether's process (anyio): :func:`open_proxy` listens on a fresh unix socket (mode
0600, :func:`proxy_socket`: in a private directory beside the sessions' temp directories, never inside one) for as
long as the call runs; the call's :class:`~tether.sandbox.ProxySeam` names it, bubblewrap binds it into the sandbox,
and there the bridge (``_bridge.py``) forwards a loopback port to it. One socket per call, so each connection's decisions are the call's own (parallel calls of a
session never share one), and the proxy ends with the call: its connections are closed when the command has ended.

Each connection speaks, told apart by its first byte:

- SOCKS5 (``0x05``): no authentication, ``CONNECT`` to an IPv4 or IPv6 address or a domain name (``socks5h``);
  ``BIND`` and ``UDP ASSOCIATE`` are refused (reply 7). SOCKS4 (``0x04``) is refused (reply 91).
- HTTP: ``CONNECT host:port`` opens a tunnel (HTTPS, or anything else over TCP); a request with an absolute
  ``http://`` URI is forwarded to its origin in origin form, ``Connection: close``, without the ``Proxy-*`` headers,
  and the connection ends with that exchange.

Every destination goes through the call's :class:`~tether.sandbox.NetworkGate` (the ``network`` permission, a DNS
answer checked once and connected to). A refusal is clean: HTTP ``403`` (``400``, ``502`` for a bad request or a
destination that does not answer) whose reason phrase and one-line body say why, or the SOCKS5 reply (2: not allowed,
4: host unreachable, 5: refused). A request head larger than :data:`MAX_HEAD` gets ``431``, one that does not arrive
within :data:`HEAD_TIMEOUT` seconds or is not HTTP gets ``400`` or a bare close; none of it reaches tether's own work.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from ._network import NetworkGate, Refusal

__all__ = ["HEAD_TIMEOUT", "MAX_HEAD", "open_proxy", "proxy_socket"]

MAX_HEAD = 32 * 1024
"""Bytes of an HTTP request head (request line and headers) the proxy reads at most."""
HEAD_TIMEOUT = 30.0
"""Seconds a client has to send its request head (or SOCKS5 greeting and request)."""

_CHUNK = 1 << 16
_HOP_HEADERS = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"proxy-authenticate", b"te"}
)
_SOCKS_REPLY = {"denied": 2, "invalid": 8, "unresolved": 4, "unreachable": 5}
_HTTP_STATUS = {"denied": 403, "invalid": 400, "unresolved": 502, "unreachable": 502}
_EXPECTED = (
    OSError,
    anyio.EndOfStream,
    anyio.IncompleteRead,
    anyio.DelimiterNotFound,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    TimeoutError,
)


class _BadRequest(Exception):
    """The client's request is not one the proxy serves: answered with ``status`` and ``reason``, then closed."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def proxy_socket(parent: Path) -> Path:
    """A new socket path for one call's proxy: ``<parent>/.net/<random>.sock``, where ``parent`` is the private
    directory of the session temp directories; ``.net`` (0700) is made when missing (the ``.`` keeps it apart from the
    session directories, whose names are letters, digits, ``_`` and ``-``, and from their sweep). Blocking.

    Raises:
        OSError: ``.net`` is not this user's private directory, or cannot be made.
    """
    directory = parent / ".net"
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = directory.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"refusing the proxy directory {directory}: not a private directory of this user")
    return directory / f"{os.urandom(8).hex()}.sock"


@asynccontextmanager
async def open_proxy(path: str, gate: NetworkGate) -> AsyncGenerator[None]:
    """Serve a proxy for one call on a new unix socket at ``path`` (:func:`proxy_socket`) until the context ends;
    the socket is removed then.

    Raises:
        OSError: the socket cannot be made (its path is too long, its directory is gone, it exists).
    """
    listener = await anyio.create_unix_listener(path, mode=0o600)
    try:
        async with listener, anyio.create_task_group() as group:
            group.start_soon(_accept, listener, group, gate)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.Path(path).unlink(missing_ok=True)


async def _accept(listener: anyio.abc.SocketListener, group: anyio.abc.TaskGroup, gate: NetworkGate) -> None:
    while True:  # until the call's task group is cancelled (the listener is closed only after that)
        group.start_soon(_serve_one, await listener.accept(), gate)


async def _serve_one(client: anyio.abc.SocketStream, gate: NetworkGate) -> None:
    async with client:
        try:
            reader = BufferedByteReceiveStream(client)
            with anyio.fail_after(HEAD_TIMEOUT):
                first = await reader.receive_exactly(1)
            if first == b"\x05":
                opened = await _socks5(client, reader, gate)
            elif first == b"\x04":
                await client.send(b"\x00\x5b\x00\x00\x00\x00\x00\x00")  # SOCKS4: request rejected
                return
            elif first.isupper():
                opened = await _http(client, reader, first, gate)
            else:
                await _refuse(client, 400, "not a request tether's proxy understands (HTTP or SOCKS5)")
                return
            if opened is None:
                return
            upstream, head = opened
            async with upstream:
                await _pipe(client, head + reader.buffer, upstream)
        except _EXPECTED:
            return  # the client went away, sent too much, too slowly, or nothing a proxy understands


# --- SOCKS5 (RFC 1928) ---------------------------------------------------------------------------------------------


async def _socks5(
    client: anyio.abc.SocketStream, reader: BufferedByteReceiveStream, gate: NetworkGate
) -> tuple[anyio.abc.SocketStream, bytes] | None:
    with anyio.fail_after(HEAD_TIMEOUT):
        count = (await reader.receive_exactly(1))[0]
        methods = await reader.receive_exactly(count)
        if 0 not in methods:
            await client.send(b"\x05\xff")
            return None
        await client.send(b"\x05\x00")
        version, command, _, kind = await reader.receive_exactly(4)
        if kind == 1:
            host = str(_ip_text(await reader.receive_exactly(4)))
        elif kind == 4:
            host = str(_ip_text(await reader.receive_exactly(16)))
        elif kind == 3:
            size = (await reader.receive_exactly(1))[0]
            host = (await reader.receive_exactly(size)).decode("ascii", "replace")
        else:
            await client.send(_socks_reply(8))
            return None
        port = int.from_bytes(await reader.receive_exactly(2), "big")
    if version != 5 or command != 1:
        await client.send(_socks_reply(7 if version == 5 else 1))
        return None
    opened = await gate.connect(host, port, via="socks5")
    if isinstance(opened, Refusal):
        await client.send(_socks_reply(_SOCKS_REPLY[opened.kind]))
        return None
    await client.send(_socks_reply(0))
    return opened, b""


def _ip_text(packed: bytes) -> str:
    """A packed IPv4 or IPv6 address as text."""
    import ipaddress

    return str(ipaddress.ip_address(packed))


def _socks_reply(code: int) -> bytes:
    return bytes((5, code, 0, 1, 0, 0, 0, 0, 0, 0))


# --- HTTP ----------------------------------------------------------------------------------------------------------


async def _http(
    client: anyio.abc.SocketStream, reader: BufferedByteReceiveStream, first: bytes, gate: NetworkGate
) -> tuple[anyio.abc.SocketStream, bytes] | None:
    """The upstream connection and the bytes to send it first, or ``None`` when the client was answered."""
    try:
        with anyio.fail_after(HEAD_TIMEOUT):
            try:
                head = first + await reader.receive_until(b"\r\n\r\n", MAX_HEAD)
            except anyio.DelimiterNotFound:
                head = b""
            if (
                not head or len(head) > MAX_HEAD
            ):  # (one chunk may bring more than the limit, delimiter included)
                raise _BadRequest(431, "the request head is larger than 32 KiB")
        method, target, headers = _parse_head(head)
        if method == b"CONNECT":
            host, port = _authority(target.decode("ascii"), default=None)
            via, forward = "http-connect", b""
        else:
            host, port, forward = _origin_form(method, target.decode("ascii"), headers)
            via = "http"
    except (_BadRequest, UnicodeError, ValueError) as exc:
        status, reason = (
            (exc.status, exc.reason) if isinstance(exc, _BadRequest) else (400, "a malformed request")
        )
        await _refuse(client, status, reason)
        return None
    opened = await gate.connect(host, port, via=via)
    if isinstance(opened, Refusal):
        await _refuse(client, _HTTP_STATUS[opened.kind], opened.reason)
        return None
    if method == b"CONNECT":
        try:
            await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
        except _EXPECTED:
            await opened.aclose()
            raise
    return opened, forward


def _origin_form(
    method: bytes, target: str, headers: list[tuple[bytes, bytes, bytes]]
) -> tuple[str, int, bytes]:
    """The origin's host and port, and the request head to send it: origin form, no hop-by-hop or ``Proxy-*``
    headers, ``Connection: close``.

    Raises:
        _BadRequest: not an absolute ``http://`` URI, or one with credentials.
    """
    url = urlsplit(target)
    if url.scheme.lower() != "http" or not url.netloc:
        raise _BadRequest(
            400, "tether's proxy takes absolute http:// URIs, and CONNECT host:port for anything else"
        )
    if "@" in url.netloc:
        raise _BadRequest(400, "credentials in a proxied URL are refused")
    host, port = _authority(url.netloc, default=80)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    listed = {
        token.strip().lower()
        for _, name, value in headers
        if name == b"connection"
        for token in value.split(b",")
    }
    dropped = _HOP_HEADERS | listed
    lines = [method + b" " + path.encode("ascii") + b" HTTP/1.1"]
    lines += [raw + b": " + value for raw, name, value in headers if name not in dropped]
    lines.append(b"Connection: close")
    return host, port, b"\r\n".join(lines) + b"\r\n\r\n"


def _parse_head(head: bytes) -> tuple[bytes, bytes, list[tuple[bytes, bytes, bytes]]]:
    """``(method, target, [(name, lowercase name, value)])`` of a request head.

    Raises:
        _BadRequest: not an HTTP/1.x request line with a method and a target.
    """
    line = head.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith(b"HTTP/1.") or not parts[1]:
        raise _BadRequest(400, "not an HTTP/1.1 proxy request")
    return parts[0], parts[1], _raw_headers(head)


def _raw_headers(head: bytes) -> list[tuple[bytes, bytes, bytes]]:
    found: list[tuple[bytes, bytes, bytes]] = []
    for line in head.split(b"\r\n")[1:]:
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            raise _BadRequest(400, "a malformed header line")
        found.append((name, name.lower(), value.strip()))
    return found


def _authority(text: str, *, default: int | None) -> tuple[str, int]:
    """``host`` and ``port`` of ``host:port`` (``[v6]:port``); ``default`` when the port is left out.

    Raises:
        _BadRequest: no port where one is required, or not a number.
    """
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise _BadRequest(400, "a malformed IPv6 authority")
        port_text = rest[1:] if rest else None
        host = f"[{host}]"
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, None
    if port_text is None or port_text == "":
        if default is None:
            raise _BadRequest(400, "CONNECT needs host:port")
        return host, default
    if not port_text.isdigit() or len(port_text) > 5:
        raise _BadRequest(400, "the port is not a number")
    return host, int(port_text)


async def _refuse(client: anyio.abc.SocketStream, status: int, reason: str) -> None:
    line = " ".join(f"tether: {reason}".split())
    phrase = line.encode("ascii", "replace")[:400]
    body = phrase + b"\n"
    await client.send(
        b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
        % (status, phrase, len(body), body)
    )


# --- the tunnel ----------------------------------------------------------------------------------------------------


async def _pipe(client: anyio.abc.SocketStream, early: bytes, upstream: anyio.abc.SocketStream) -> None:
    """Copy both ways until both sides have finished sending (a half-close is passed on)."""
    if early:
        await upstream.send(early)

    async def copy(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
        try:
            async for chunk in source:
                await sink.send(chunk)
            await sink.send_eof()
        except _EXPECTED:
            group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(copy, upstream, client)
        await copy(client, upstream)

"""A small HTTP/1.1 client for a provider at a plain ``http://`` root: a server on this machine or the local network
(Ollama, vLLM, llama.cpp, LM Studio, a gateway), where a step takes milliseconds and the client's own cost shows.

It does exactly what an adapter's request needs and nothing else: one ``POST`` with a known body (one write of head
and body), the answer's status line and headers, then its body as it arrives, framed by ``Transfer-Encoding:
chunked``, ``Content-Length`` or the end of the connection, ``gzip``/``deflate`` decoded. A connection whose answer
was read to its end is kept and reused by the next request (a sequential turn runs on one connection); one the server
closed meanwhile is dropped before it is used. No redirects (an API root that redirects is reported, so base_url can
name the final one), no proxy (``_clients`` sends through httpx when one applies), no TLS (``https://`` goes through
httpx too), no retries (the session runner is the one retry layer).

Measured against the same loopback server (issue 38, a busy 2-core machine): 0.12 ms of CPU and 0.3 ms of wall
time per streamed request, against 0.72 ms and 1.0 ms through httpx (its request model, h11's parser, the
connection pool's locks); and ``httpx2`` itself (~70 ms of CPU to import, ~40 ms to build a client: the CA bundle)
is never loaded for a local provider.

A failure to connect, a reset, an answer cut short or not HTTP is :class:`HTTPFailure` (``ConnectTimeout`` for the
connect deadline), chained from the ``OSError`` under it: the adapter maps it to a retryable connection error that
names the cause.
"""

from __future__ import annotations

import select
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream

__all__ = ["ConnectTimeout", "HTTPFailure", "Headers", "LocalClient", "LocalResponse"]

MAX_HEAD = 64 * 1024
"""The most bytes of a status line and headers read before the answer is refused as not HTTP."""
_READ = 65536


class HTTPFailure(Exception):
    """The connection failed, or the server's answer is not HTTP/1.1 this client can read."""


class ConnectTimeout(HTTPFailure):
    """No connection within the connect deadline."""


class _Unanswered(Exception):
    """The request went out (or failed to) and not one byte of an answer came back."""


class Headers(dict[str, str]):
    """Response headers by lower-case name (a repeated header's values joined with ``, ``)."""

    def get(self, key: str, default: Any = None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())


class _Connection:
    __slots__ = ("buffer", "socket", "stream")

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.socket: Any = stream.extra(SocketAttribute.raw_socket)
        self.buffer = b""  # bytes received and not yet used

    async def receive(self) -> bytes:
        try:
            return await self.stream.receive(_READ)
        except anyio.EndOfStream:
            return b""
        except (OSError, anyio.BrokenResourceError) as exc:
            raise HTTPFailure(f"the connection was lost ({_cause(exc)})") from exc

    def closed_by_peer(self) -> bool:
        """Whether the server closed (or wrote to) this idle connection: it cannot carry a new request."""
        try:
            readable, _, _ = select.select([self.socket], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self.stream.aclose()


def _cause(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class LocalClient:
    """Connections to one ``host:port``, kept alive between requests (see the module docstring)."""

    def __init__(self, host: str, port: int, *, connect_timeout: float) -> None:
        self.host = host
        self.port = port
        self._connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self.is_closed = False

    async def _connection(self) -> tuple[_Connection, bool]:
        """A connection for the next request, and whether it is a kept one (reused)."""
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed_by_peer():
                return connection, True
            await connection.aclose()
        try:
            with anyio.fail_after(self._connect_timeout):
                stream = await anyio.connect_tcp(self.host, self.port)
        except TimeoutError as exc:
            raise ConnectTimeout(f"no connection within {self._connect_timeout:g} s") from exc
        except OSError as exc:
            raise HTTPFailure(f"cannot connect to {self.host}:{self.port} ({_cause(exc)})") from exc
        return _Connection(stream), False

    async def post(self, target: str, headers: Mapping[str, str], body: bytes) -> LocalResponse:
        """Send ``POST target`` with ``body``; the answer's head is read, its body streams from the result.

        Raises:
            HTTPFailure: the connection failed or the answer is not HTTP.
        """
        if self.is_closed:
            raise HTTPFailure("the client is closed")
        lines = [f"POST {target} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        while True:
            connection, kept = await self._connection()
            try:
                try:
                    await connection.stream.send(request)
                except (OSError, anyio.BrokenResourceError) as exc:
                    raise _Unanswered(f"the connection was lost ({_cause(exc)})") from exc
                return await self._answer(connection)
            except _Unanswered as exc:
                await connection.aclose()
                if kept:
                    # A kept connection the server closed as this request went out (its keep-alive timeout): it
                    # never answered, so the request goes once more on a new connection, as HTTP clients do.
                    continue
                raise HTTPFailure(str(exc)) from exc.__cause__
            except BaseException:
                await connection.aclose()
                raise

    async def _answer(self, connection: _Connection) -> LocalResponse:
        informational = False
        while True:  # informational answers (1xx) come before the real one
            data = connection.buffer
            end = data.find(b"\r\n\r\n")
            while end < 0:
                if len(data) > MAX_HEAD:
                    raise HTTPFailure(f"the answer's headers exceed {MAX_HEAD} bytes")
                try:
                    chunk = await connection.receive()
                except HTTPFailure as exc:
                    if data or informational:
                        raise
                    raise _Unanswered(str(exc)) from exc.__cause__
                if not chunk:
                    if not data and not informational:
                        raise _Unanswered("the server closed the connection without an answer")
                    raise HTTPFailure(
                        "the server closed the connection in the middle of the answer's headers"
                    )
                data += chunk
                end = data.find(b"\r\n\r\n", max(0, len(data) - len(chunk) - 3))
            if end > MAX_HEAD:
                raise HTTPFailure(f"the answer's headers exceed {MAX_HEAD} bytes")
            connection.buffer = data[end + 4 :]
            status, version, headers = _head(data[:end])
            if not 100 <= status < 200:
                return LocalResponse(self, connection, status, version, headers)
            informational = True

    def _release(self, connection: _Connection) -> None:
        if self.is_closed:
            return
        self._idle.append(connection)

    async def aclose(self) -> None:
        self.is_closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    if not text or text.strip(b"0123456789abcdefABCDEF"):
        raise HTTPFailure(f"a chunk of the answer has no size: {bytes(text[:40])!r}")
    return int(text, 16)


def _head(raw: bytes) -> tuple[int, str, Headers]:
    try:
        text = raw.decode("latin-1")
        status_line, *fields = text.split("\r\n")
        version, _, rest = status_line.partition(" ")
        code = rest.partition(" ")[0]
        if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ValueError(status_line[:80])
    except ValueError as exc:
        raise HTTPFailure(f"the answer is not HTTP/1.x: {str(exc)!r}") from None
    headers = Headers()
    for field in fields:
        name, sep, value = field.partition(":")
        if not sep or not name or name != name.strip():
            raise HTTPFailure(f"a header of the answer is malformed: {field[:80]!r}")
        key, value = name.lower(), value.strip()
        headers[key] = f"{dict.get(headers, key)}, {value}" if key in headers else value
    return int(code), version, headers


class _Body:
    """The answer's body as it arrives, framed as its headers say; the connection is released once it is read to
    its end (and the answer allows keeping it)."""

    __slots__ = ("_client", "_connection", "_done", "_framing", "_keep", "_left")

    def __init__(self, client: LocalClient, connection: _Connection, response: LocalResponse) -> None:
        headers = response.headers
        self._client = client
        self._connection: _Connection | None = connection
        self._done = False
        coding = headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        if response.status_code in (204, 304):
            self._framing, self._left = "length", 0
        elif coding:
            if coding.rsplit(",", 1)[-1].strip() != "chunked":
                raise HTTPFailure(f"the answer's Transfer-Encoding {coding!r} is not supported")
            self._framing, self._left = "chunked", 0
        elif length is not None:
            if not length.strip().isdigit():
                raise HTTPFailure(f"the answer's Content-Length {length!r} is not a number")
            self._framing, self._left = "length", int(length)
        else:
            self._framing, self._left = "close", 0
        self._keep = (
            response.http_version == "HTTP/1.1"
            and "close" not in headers.get("connection", "").lower()
            and self._framing != "close"
        )

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None or self._done:
            return
        if self._framing == "length":
            async for chunk in self._fixed(connection):
                yield chunk
        elif self._framing == "chunked":
            async for chunk in self._chunked(connection):
                yield chunk
        else:
            if connection.buffer:
                yield connection.buffer
                connection.buffer = b""
            while chunk := await connection.receive():
                yield chunk
        self._done = True
        self._connection = None
        if self._keep:
            self._client._release(connection)  # pyright: ignore[reportPrivateUsage]
        else:
            await connection.aclose()

    async def _fixed(self, connection: _Connection) -> AsyncIterator[bytes]:
        left = self._left
        while left:
            data = connection.buffer or await connection.receive()
            if not data:
                raise HTTPFailure(f"the answer ended {left} bytes before its Content-Length")
            piece, connection.buffer = data[:left], data[left:]
            left -= len(piece)
            yield piece

    async def _chunked(self, connection: _Connection) -> AsyncIterator[bytes]:
        """The payload of the chunks, one piece per network read (what arrived of each chunk, joined): a stream
        of many small chunks costs one step here per read, and a chunk that arrives slowly streams as it comes."""
        data = connection.buffer
        connection.buffer = b""
        pos = 0
        left = 0  # payload bytes of the current chunk still to come
        crlf = False  # the current chunk's payload is read: its CRLF comes next
        while True:
            out: list[bytes] = []
            while True:
                if left:
                    take = min(left, len(data) - pos)
                    if take:
                        out.append(data[pos : pos + take])
                        pos += take
                        left -= take
                    if left:
                        break
                    crlf = True
                if crlf:
                    if len(data) - pos < 2:
                        break
                    if data[pos : pos + 2] != b"\r\n":
                        raise HTTPFailure("a chunk of the answer does not end where its size says")
                    pos += 2
                    crlf = False
                line_end = data.find(b"\r\n", pos)
                if line_end < 0:
                    if len(data) - pos > MAX_HEAD:
                        raise HTTPFailure("a chunk size line of the answer does not end")
                    break
                size = _chunk_size(data[pos:line_end])
                pos = line_end + 2
                if size == 0:
                    if out:
                        yield b"".join(out)
                    await self._trailers(connection, data, pos)
                    return
                left = size
            if out:
                yield b"".join(out)
            chunk = await connection.receive()
            if not chunk:
                raise HTTPFailure("the answer ended in the middle of a chunk")
            data = data[pos:] + chunk
            pos = 0

    @staticmethod
    async def _trailers(connection: _Connection, data: bytes, pos: int) -> None:
        """Read past the trailer fields and the empty line that end a chunked body; keep what follows."""
        while True:
            end = data.find(b"\r\n", pos)
            if end == pos:
                connection.buffer = data[pos + 2 :]
                return
            if end > 0:
                pos = end + 2
                continue
            if len(data) - pos > MAX_HEAD:
                raise HTTPFailure("the answer's trailer fields do not end")
            chunk = await connection.receive()
            if not chunk:
                raise HTTPFailure("the answer ended in its trailer fields")
            data = data[pos:] + chunk
            pos = 0

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.aclose()


class LocalResponse:
    """An answer: its status, version and headers, and its body (:meth:`aiter_bytes`, :meth:`aread`)."""

    def __init__(
        self, client: LocalClient, connection: _Connection, status: int, version: str, headers: Headers
    ) -> None:
        self.status_code = status
        self.http_version = version
        self.headers = headers
        self.stream: Any = _Body(client, connection, self)
        """The body's chunks as framed (``_deadlines.watch`` wraps it); decoded by :meth:`aiter_bytes`."""
        self._body = self.stream
        self.content = b""

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, ``gzip``/``deflate`` decoded.

        Raises:
            HTTPFailure: the body was cut short, or its framing or encoding is broken.
        """
        coding = self.headers.get("content-encoding", "identity").lower().strip()
        if coding in ("identity", ""):
            async for chunk in self.stream:
                yield chunk
            return
        if coding not in ("gzip", "deflate", "x-gzip"):
            raise HTTPFailure(f"the answer's Content-Encoding {coding!r} is not supported")
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib, by its header
        try:
            async for chunk in self.stream:
                if out := decoder.decompress(chunk):
                    yield out
            if tail := decoder.flush():
                yield tail
        except zlib.error as exc:
            raise HTTPFailure(f"the answer's {coding} body cannot be decoded ({exc})") from exc

    async def aread(self) -> bytes:
        """The whole body (an error answer's)."""
        self.content = b"".join([chunk async for chunk in self.aiter_bytes()])
        return self.content

    @property
    def text(self) -> str:
        """The body read by :meth:`aread`, as text (its charset, else UTF-8; undecodable bytes replaced)."""
        charset = "utf-8"
        for param in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = param.strip().partition("=")
            if name.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.content.decode(charset, errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    async def aclose(self) -> None:
        """Release the connection: kept for the next request when the body was read to its end, else closed."""
        await self._body.aclose()

"""The local HTTP/1.1 client (``_http11``) reads what real servers send, keeps connections it may keep, and reports
what it cannot read as a retryable connection error (issue 38). Each answer is written byte for byte by a real server
on 127.0.0.1."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx2
import pytest

from tether.errors import ProviderBadRequestError, ProviderConnectionError, ProviderError
from tether.llm import ModelRequest, ProviderErrorEvent, StepFinish, TextDelta, UserMessage
from tether.llm.providers import ClientSettings, OpenAIChatModel
from tether.llm.providers._http11 import HTTPFailure, LocalClient
from tether.tools import Text

from ._broken import Behaviour, BrokenServer, broken_server, chat_chunk, sse

REQUEST = ModelRequest(messages=[UserMessage(content=(Text("hi"),))])
EVENTS = sse(chat_chunk({"role": "assistant", "content": "hello"}), chat_chunk({}, "stop"), b"[DONE]")


def raw(answer: bytes, *, close: bool = False) -> Behaviour:
    """Write ``answer`` as it is (status line, headers and body), then close the connection when ``close``."""

    def play(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
        handler.wfile.write(answer)
        handler.wfile.flush()
        handler.close_connection = close

    return play


def chunked(body: bytes, *, size: int = 7, extension: bytes = b"", trailer: bytes = b"") -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    out = b"".join(f"{len(p):x}".encode() + extension + b"\r\n" + p + b"\r\n" for p in pieces)
    return out + b"0\r\n" + trailer + b"\r\n"


def head(*lines: str) -> bytes:
    return ("\r\n".join(["HTTP/1.1 200 OK", "Content-Type: text/event-stream", *lines]) + "\r\n\r\n").encode()


async def _text(server: BrokenServer, steps: int = 1) -> list[str]:
    texts: list[str] = []
    settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
    async with OpenAIChatModel("m", settings=settings) as model:
        for _ in range(steps):
            events = [e async for e in model.stream(REQUEST)]
            failed = [e for e in events if isinstance(e, ProviderErrorEvent)]
            assert not failed, failed[0].message
            assert any(isinstance(e, StepFinish) for e in events)
            texts.append("".join(e.text for e in events if isinstance(e, TextDelta)))
        assert isinstance(model.client, LocalClient)
    return texts


@pytest.mark.anyio
async def test_a_content_length_answer_is_read_and_its_connection_kept() -> None:
    with broken_server(raw(head(f"Content-Length: {len(EVENTS)}") + EVENTS)) as server:
        assert await _text(server, steps=3) == ["hello"] * 3
    assert server.connections == 1


@pytest.mark.anyio
@pytest.mark.parametrize("size", [1, 7, 4096])
async def test_chunk_extensions_and_trailers_are_read_past_and_the_connection_kept(size: int) -> None:
    body = chunked(EVENTS, size=size, extension=b";name=value", trailer=b"X-Checksum: abc\r\n")
    with broken_server(raw(head("Transfer-Encoding: chunked") + body)) as server:
        assert await _text(server, steps=2) == ["hello"] * 2
    assert server.connections == 1


@pytest.mark.anyio
async def test_an_answer_that_ends_with_its_connection_is_read_and_the_next_step_reconnects() -> None:
    answer = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + EVENTS
    with broken_server(raw(answer, close=True)) as server:
        assert await _text(server, steps=2) == ["hello"] * 2
    assert server.connections == 2


@pytest.mark.anyio
async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    # Kept alive by the answer (HTTP/1.1, framed), closed by the server right after: the next step must not use it.
    answer = head(f"Content-Length: {len(EVENTS)}") + EVENTS
    with broken_server(raw(answer, close=True)) as server:
        assert await _text(server, steps=3) == ["hello"] * 3
    assert server.connections == 3


@pytest.mark.anyio
async def test_a_gzip_body_and_informational_answers_before_it_are_read() -> None:
    packed = gzip.compress(EVENTS)
    answer = (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
        + head("Content-Encoding: gzip", "Transfer-Encoding: chunked")
        + chunked(packed, size=5)
    )
    with broken_server(raw(answer)) as server:
        assert await _text(server) == ["hello"]


@pytest.mark.anyio
async def test_a_redirect_is_reported_with_where_it_points_and_is_not_retried() -> None:
    answer = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://elsewhere/v1\r\nContent-Length: 0\r\n\r\n"
    with broken_server(raw(answer)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with OpenAIChatModel("m", settings=settings) as model:
            with pytest.raises(ProviderBadRequestError) as info:
                [e async for e in model.stream(REQUEST)]
    assert "http://elsewhere/v1" in info.value.message and not info.value.retryable
    assert server.url in info.value.message


@pytest.mark.anyio
@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
    ],
    ids=["not-http", "bad-status", "bad-header", "unknown-transfer-coding", "bad-length", "huge-head"],
)
async def test_an_answer_that_is_not_readable_http_is_a_retryable_connection_error(answer: bytes) -> None:
    with broken_server(raw(answer, close=True)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with OpenAIChatModel("m", settings=settings) as model:
            with pytest.raises(ProviderConnectionError) as info:
                [e async for e in model.stream(REQUEST)]
    assert info.value.retryable and server.url in info.value.message


@pytest.mark.anyio
@pytest.mark.parametrize(
    "body",
    [
        b"5\r\nshort",  # the connection ends inside a chunk
        b"zz\r\n",  # a chunk with no size
        b"1_0\r\n",  # not hexadecimal digits alone
        b"3\r\nabcde\r\n",  # a chunk longer than its size
    ],
)
async def test_a_broken_chunked_body_ends_the_stream_with_a_connection_error(body: bytes) -> None:
    answer = head("Transfer-Encoding: chunked") + chunked(EVENTS[:40]).removesuffix(b"0\r\n\r\n") + body
    with broken_server(raw(answer, close=True)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with OpenAIChatModel("m", settings=settings) as model:
            events = [e async for e in model.stream(REQUEST)]
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent) and isinstance(last.error, ProviderConnectionError)


@pytest.mark.anyio
async def test_a_content_length_answer_cut_short_is_a_connection_error() -> None:
    answer = head(f"Content-Length: {len(EVENTS) + 100}") + EVENTS[:-20]
    with broken_server(raw(answer, close=True)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with OpenAIChatModel("m", settings=settings) as model:
            events = [e async for e in model.stream(REQUEST)]
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent) and isinstance(last.error, ProviderConnectionError)


@pytest.mark.anyio
async def test_an_error_answer_in_a_charset_is_decoded_for_its_message() -> None:
    text = "überlastet".encode("latin-1")
    answer = (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=latin-1\r\n"
        + f"Content-Length: {len(text)}\r\n\r\n".encode()
        + text
    )
    with broken_server(raw(answer)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with OpenAIChatModel("m", settings=settings) as model:
            with pytest.raises(ProviderError) as info:
                [e async for e in model.stream(REQUEST)]
    assert info.value.status == 503 and "überlastet" in info.value.message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("base", "proxy"),
    [("http://127.0.0.1:9/v1", "http://proxy.invalid:3128"), ("https://127.0.0.1:9/v1", None)],
    ids=["proxy-variable", "tls"],
)
async def test_tls_or_a_proxy_variable_goes_through_httpx(
    monkeypatch: pytest.MonkeyPatch, base: str, proxy: str | None
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    if proxy is not None:
        monkeypatch.setenv("HTTP_PROXY", proxy)
    async with OpenAIChatModel("m", settings=ClientSettings(base_url=base)) as model:
        client: Any = model.client
        assert isinstance(client, httpx2.AsyncClient)


@pytest.mark.anyio
async def test_an_unknown_content_encoding_or_charset_is_handled() -> None:
    brotli = head("Content-Encoding: br", f"Content-Length: {len(EVENTS)}") + EVENTS
    with broken_server(raw(brotli, close=True)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with OpenAIChatModel("m", settings=settings) as model:
            events = [e async for e in model.stream(REQUEST)]
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent) and isinstance(last.error, ProviderConnectionError)
    assert "Content-Encoding 'br'" in last.error.message
    odd = b'{"error": {"message": "gone"}}'
    answer = (
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=no-such-charset\r\n"
        + f"Content-Length: {len(odd)}\r\n\r\n".encode()
        + odd
    )
    with broken_server(raw(answer)) as server:
        settings = ClientSettings(base_url=f"{server.url}/v1", api_key="k")
        async with OpenAIChatModel("m", settings=settings) as model:
            with pytest.raises(ProviderError) as info:
                [e async for e in model.stream(REQUEST)]
    assert info.value.status == 404 and "gone" in info.value.message


@pytest.mark.anyio
async def test_a_closed_model_client_refuses_to_send() -> None:
    client = LocalClient("127.0.0.1", 9, connect_timeout=1)
    await client.aclose()
    with pytest.raises(HTTPFailure, match="closed"):
        await client.post("/v1/x", {}, b"")

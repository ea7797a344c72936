"""The SDK clients are built on the SDK's default HTTP client with prompt ACKs (Linux's ``TCP_QUICKACK``)."""

from __future__ import annotations

import socket

import pytest

from tether.llm.providers import ClientSettings
from tether.llm.providers._clients import load_anthropic, load_openai
from tether.llm.providers._transport import QUICK_ACK, QuickAckBackend, QuickAckStream, install_quick_ack

pytestmark = pytest.mark.skipif(QUICK_ACK is None, reason="TCP_QUICKACK is Linux-only")


def test_openai_and_anthropic_clients_use_the_quick_ack_backend() -> None:
    for loaded in (
        load_openai(ClientSettings(base_url="http://127.0.0.1:9/v1")),
        load_anthropic(ClientSettings()),
    ):
        pool = loaded.client._client._transport._pool
        assert isinstance(pool._network_backend, QuickAckBackend)


def test_installing_twice_wraps_once() -> None:
    loaded = load_openai(ClientSettings(base_url="http://127.0.0.1:9/v1"))
    assert install_quick_ack(loaded.client._client) == 0


def test_a_client_of_another_shape_is_left_alone() -> None:
    assert install_quick_ack(object()) == 0


@pytest.mark.anyio
async def test_a_quick_ack_stream_reads_through_and_keeps_tcp_nodelay() -> None:
    import httpcore2

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        stream = await QuickAckBackend(httpcore2.AnyIOBackend()).connect_tcp("127.0.0.1", port)
        peer, _ = server.accept()
        with peer:
            peer.sendall(b"hello")
            assert await stream.read(5, timeout=5) == b"hello"
            sock = stream.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        await stream.aclose()


@pytest.mark.anyio
async def test_the_stream_re_arms_the_socket_the_anyio_backend_gives() -> None:
    # On asyncio, anyio hands out the transport's socket wrapper (not a socket.socket): it must still be armed.
    import httpcore2

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        stream = await QuickAckBackend(httpcore2.AnyIOBackend()).connect_tcp("127.0.0.1", port)
        peer, _ = server.accept()
        with peer:
            peer.sendall(b"hi")
            assert await stream.read(2, timeout=5) == b"hi"
            assert isinstance(stream, QuickAckStream)
            assert stream._sock is not None  # pyright: ignore[reportPrivateUsage]
        await stream.aclose()

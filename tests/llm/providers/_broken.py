"""A real HTTP server on 127.0.0.1 that misbehaves the way broken providers do.

Each request is answered by the next scripted :data:`Behaviour` (the last one repeats): a stream body, an HTTP error
with headers, keep-alive comments forever, headers then silence, or a connection closed without a response. The
server counts the connections it accepted and the requests it read, so tests assert attempts, never time.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from ._replay import LocalServer

Behaviour = Callable[[BaseHTTPRequestHandler, threading.Event], None]


def _headers(handler: BaseHTTPRequestHandler, status: int, content_type: str, extra: dict[str, str]) -> None:
    handler.send_response(status)
    handler.send_header("content-type", content_type)
    for key, value in extra.items():
        handler.send_header(key, value)


def body(
    data: bytes, *, status: int = 200, content_type: str = "text/event-stream", **headers: str
) -> Behaviour:
    """Answer with ``data`` (Content-Length) and keep the connection."""

    def play(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
        _headers(handler, status, content_type, {k.replace("_", "-"): v for k, v in headers.items()})
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()

    return play


def error(status: int, payload: Any, **headers: str) -> Behaviour:
    return body(json.dumps(payload).encode(), status=status, content_type="application/json", **headers)


def then_forever(first: bytes, *, every: float = 0.01, comment: bytes = b": keep-alive\n\n") -> Behaviour:
    """Send ``first`` (may be empty), then an SSE comment every ``every`` seconds until the client goes away."""

    def play(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
        _headers(handler, 200, "text/event-stream", {"transfer-encoding": "chunked"})
        handler.end_headers()
        try:
            for piece in itertools.chain([first], itertools.repeat(comment)):
                if piece:
                    handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    handler.wfile.flush()
                if stop.wait(every):  # pacing of the keep-alives, not waiting for a state
                    return
        except OSError:  # the client gave up: what the test wants
            handler.close_connection = True

    return play


def silence(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """Send the headers, then nothing until the server stops."""
    _headers(handler, 200, "text/event-stream", {"transfer-encoding": "chunked"})
    handler.end_headers()
    handler.wfile.flush()
    stop.wait()
    handler.close_connection = True


def hang_up(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """Close the connection without answering."""
    handler.close_connection = True


class BrokenServer(LocalServer):
    def __init__(self, *script: Behaviour) -> None:
        self.script = list(script)
        self.requests = 0
        self.connections = 0
        self.stopping = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                outer.connections += 1
                super().setup()

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                index = min(outer.requests, len(outer.script) - 1)
                outer.requests += 1
                outer.script[index](self, outer.stopping)

        self._serve(Handler)

    def stop(self) -> None:
        self.stopping.set()
        super().stop()

    def close(self) -> None:
        """Close a server that was never started."""
        self._server.server_close()


@contextmanager
def broken_server(*script: Behaviour) -> Iterator[BrokenServer]:
    server = BrokenServer(*script)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def chat_chunk(delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with one choice, as the server sends it (and the chat assembler reads it)."""
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def sse(*events: Any, named: bool = False) -> bytes:
    """``data:`` lines for JSON events (``event:`` lines too when ``named``, as Anthropic and Responses send)."""
    out = []
    for event in events:
        data = event if isinstance(event, bytes) else json.dumps(event).encode()
        name = f"event: {event['type']}\n".encode() if named and isinstance(event, dict) else b""
        out.append(name + b"data: " + data + b"\n\n")
    return b"".join(out)

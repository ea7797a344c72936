"""Test helpers: a real HTTP server on 127.0.0.1 that serves recorded bytes, and the recorded streams themselves.

The server answers each request with the next scripted :class:`Reply`, sending the body as HTTP/1.1 chunks cut at
the reply's split points (so the SDK's decoder sees a stream cut inside lines and inside UTF-8 sequences), or
resetting the connection after ``reset_after`` bytes. Every request body is recorded for snapshot assertions.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "streams"


@dataclass
class Reply:
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict[str, str])
    splits: Sequence[int] = ()
    reset_after: int | None = None
    content_type: str = "text/event-stream; charset=utf-8"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class LocalServer:
    """A threading HTTP server on 127.0.0.1 (an ephemeral port) serving one handler class, shared by the test servers."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class ReplayServer(LocalServer):
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.connections = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY, as real API servers set it: each chunk is its own small write, which Nagle's algorithm would
            # hold back until the client's (delayed) ACK of the one before.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                outer.connections += 1  # once per accepted connection
                super().setup()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                outer.requests.append(
                    Recorded(
                        "POST",
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw) if raw else None,
                    )
                )
                reply = outer.replies.popleft() if outer.replies else Reply(b"no reply scripted", status=599)
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("transfer-encoding", "chunked")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                body = reply.body
                if reply.reset_after is not None:
                    self._chunk(body[: reply.reset_after])
                    # SO_LINGER 0 makes close() send a TCP RST: a connection reset mid-stream.
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return
                cuts = [0, *sorted(c for c in reply.splits if 0 < c < len(body)), len(body)]
                for start, end in itertools.pairwise(cuts):
                    self._chunk(body[start:end])
                    if len(cuts) > 2:
                        # Pacing, not waiting for state: give the client a chance to read each piece on its own
                        # so its decoder really sees the cut.
                        time.sleep(0.0005)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _chunk(self, data: bytes) -> None:
                if data:
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()

        self._serve(Handler)


@contextmanager
def replay_server(*replies: Reply) -> Iterator[ReplayServer]:
    server = ReplayServer()
    server.replies.extend(replies)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def api_of(name: str) -> str:
    """``openai_chat`` / ``openai_responses`` / ``anthropic``: the fixture's folder."""
    return name.split("/", 1)[0]


def stream_names() -> list[str]:
    """Every replayable stream: ``folder/file`` and, for cassettes, ``folder/file#turn``."""
    names: list[str] = []
    for path in sorted(FIXTURES.rglob("*")):
        rel = path.relative_to(FIXTURES).as_posix()
        if rel.startswith("sse_parser_cases") or not path.is_file():
            continue
        if path.name.endswith(".cassette.json"):
            count = len(json.loads(path.read_text())["interactions"])
            names.extend(f"{rel}#{i}" for i in range(count))
        elif path.suffix in (".sse", ".jsonl"):
            names.append(rel)
    return names


def stream_bytes(name: str) -> bytes:
    """The HTTP body for a recorded stream, rebuilt as the README describes for ``.jsonl`` payload files."""
    rel, _, turn = name.partition("#")
    path = FIXTURES / rel
    if turn:
        return json.loads(path.read_text())["interactions"][int(turn)]["response"]["body"].encode()
    raw = path.read_bytes()
    if path.suffix == ".sse":
        return raw
    lines = [line for line in raw.decode().splitlines() if line.strip()]
    if api_of(rel) == "openai_chat":
        return "".join(f"data: {line}\n\n" for line in lines).encode() + b"data: [DONE]\n\n"
    return "".join(f"event: {json.loads(line)['type']}\ndata: {line}\n\n" for line in lines).encode()


def cassette_request(name: str, turn: int) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())["interactions"][turn]["request"]["body"]

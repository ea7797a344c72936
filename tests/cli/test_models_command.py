"""``tether --version`` and ``tether models``: configured providers, and what real 127.0.0.1 servers list."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from tether.cli._models import _is_local, provider_rows


class ModelServer:
    """``GET /<path>/models`` answers with what ``routes`` says; every request's headers are kept."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.routes: dict[str, tuple[int, bytes]] = {}
        self.seen: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
                status, body = outer.routes.get(self.path, (404, b"{}"))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[ModelServer]:
    running = ModelServer()
    yield running
    running.stop()


def _user_config(cli: Any, config: dict[str, Any]) -> None:
    path = cli.tmp / "config" / "tether.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config), encoding="utf-8")


def test_version_prints_the_package_version(cli: Any) -> None:
    result = cli.run("--version")
    assert result.code == 0
    assert result.stdout == f"tether {version('tether')}\n"


def test_models_lists_configured_providers_and_what_a_local_server_reports(
    cli: Any, project: Path, server: ModelServer
) -> None:
    closed = ModelServer()
    closed_url = closed.url
    closed.stop()  # nothing listens there any more
    server.routes["/v1/models"] = (200, json.dumps({"data": [{"id": "qwen3:8b"}, {"id": "llama3"}]}).encode())
    server.routes["/broken/models"] = (500, b"{}")
    server.routes["/html/models"] = (200, b"<html>")
    server.routes["/shape/models"] = (200, b'{"models": []}')
    _user_config(
        cli,
        {
            "model": "local/qwen3:8b",
            "provider": {
                "local": {"base_url": f"{server.url}/v1", "models": {"big": {"limit": {"context": 1000}}}},
                "broken": {"base_url": f"{server.url}/broken"},
                "html": {"base_url": f"{server.url}/html"},
                "shape": {"base_url": f"{server.url}/shape"},
                "gone": {"base_url": f"{closed_url}/v1"},
            },
        },
    )
    result = cli.run("models", "--dir", str(project))
    assert result.code == 0, result.output
    out = result.stdout
    assert "local/qwen3:8b  (default)" in out and "local/big" in out
    assert f"server {server.url}/v1/models lists 2 models:" in out and "local/llama3" in out
    assert f"server {server.url}/broken/models: HTTP 500" in out
    assert "not an OpenAI-compatible model list" in out
    assert f"server {closed_url}/v1/models: unreachable (ConnectError)" in out
    assert "Traceback" not in result.output
    assert "openai/gpt-5" in out and "key missing (OPENAI_API_KEY)" in out
    rows = {row["id"]: row for row in cli.json("models", "--dir", str(project), "--json")}
    assert rows["local"]["remote"]["models"] == ["llama3", "qwen3:8b"]
    assert rows["local"]["models"] == ["big", "qwen3:8b"] and rows["local"]["default"] == "local/qwen3:8b"
    assert rows["local"]["key"] == "not needed"
    assert rows["gone"]["remote"]["error"].startswith("unreachable")
    assert rows["openai"]["remote"] is None  # hosted: asked only with --remote


def test_remote_asks_a_hosted_provider_with_its_key_and_never_without(cli: Any, project: Path) -> None:
    hosted = ModelServer("127.0.0.2")  # not a local address: asked only with --remote
    try:
        hosted.routes["/v1/models"] = (200, json.dumps({"data": [{"id": "m1"}]}).encode())
        _user_config(
            cli,
            {
                "provider": {
                    "corp": {"base_url": f"{hosted.url}/v1", "api_key_env": "CORP_KEY"},
                    "nokey": {"base_url": f"{hosted.url}/v1", "api_key_env": "NOKEY_KEY"},
                }
            },
        )
        cli.env["CORP_KEY"] = "sk-test-123"
        cli.env.pop("NOKEY_KEY", None)
        plain = {row["id"]: row for row in cli.json("models", "--dir", str(project), "--json")}
        assert plain["corp"]["remote"] is None and hosted.seen == []
        asked = {row["id"]: row for row in cli.json("models", "--dir", str(project), "--json", "--remote")}
        assert asked["corp"]["remote"]["models"] == ["m1"] and asked["corp"]["key"] == "set"
        assert asked["nokey"]["remote"] is None and asked["nokey"]["key"] == "missing"
        assert [seen["authorization"] for seen in hosted.seen] == ["Bearer sk-test-123"]
        assert "sk-test-123" not in json.dumps(asked)
    finally:
        hosted.stop()


def test_a_broken_provider_entry_is_a_config_error(cli: Any, project: Path) -> None:
    _user_config(cli, {"provider": {"nowhere": {"api": "openai-chat"}}})
    result = cli.run("models", "--dir", str(project))
    assert result.code == 2 and "base_url" in result.stderr


def test_local_addresses_and_key_states() -> None:
    assert _is_local("http://127.0.0.1:11434/v1") and _is_local("http://localhost/v1")
    assert _is_local("http://user@[::1]:8000/v1")
    assert not _is_local("https://api.openai.com/v1") and not _is_local("http://127.0.0.2:1/v1")
    assert not _is_local("http://[bad")
    rows = {
        r["id"]: r
        for r in provider_rows({"provider": {"x": {"base_url": "http://h/v1", "api_key": "k"}}}, {})
    }
    assert (
        rows["x"]["key"] == "set"
        and rows["openai"]["key"] == "missing"
        and rows["ollama"]["key"] == "not needed"
    )
    assert rows["anthropic"]["base_url"] is None
    assert provider_rows(None, {})[0]["id"] == "anthropic"


class RawServer:
    """A 127.0.0.1 server that answers every connection with ``answer(connection)`` (a hostile server's bytes)."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.answer = answer
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(connection,), daemon=True).start()

    def _one(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)  # the request
            try:
                self.answer(connection)
            except OSError:  # the client went away
                pass

    def stop(self) -> None:
        self.closed.set()
        self.listener.close()


def _trickle(closed: threading.Event) -> Callable[[socket.socket], None]:
    def answer(connection: socket.socket) -> None:
        connection.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n"
        )
        while not closed.is_set():  # a byte well within each read's timeout, forever
            connection.sendall(b" ")
            time.sleep(0.2)

    return answer


def _flood(connection: socket.socket) -> None:
    connection.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n"
    )  # no length: until closed
    chunk = b" " * 65536
    for _ in range(16384):  # 1 GiB, unless the client stops reading first
        connection.sendall(chunk)


def test_a_trickling_or_flooding_local_server_cannot_hold_tether_models(cli: Any, project: Path) -> None:
    closed = threading.Event()
    trickle = RawServer(_trickle(closed))
    flood = RawServer(_flood)
    try:
        _user_config(
            cli,
            {"provider": {"slow": {"base_url": f"{trickle.url}/v1"}, "big": {"base_url": f"{flood.url}/v1"}}},
        )
        result = cli.run("models", "--dir", str(project), timeout=60)  # before: never returned
        assert result.code == 0, result.output
        assert f"server {trickle.url}/v1/models: no answer within 1.5s" in result.stdout
        assert f"server {flood.url}/v1/models: answered with more than 1 MiB" in result.stdout
    finally:
        closed.set()
        trickle.stop()
        flood.stop()


def test_a_large_model_list_under_the_cap_is_listed(cli: Any, project: Path, server: ModelServer) -> None:
    ids = [f"model-{n:06d}-{'x' * 20}" for n in range(20000)]  # about 0.9 MiB
    body = json.dumps({"data": [{"id": i} for i in ids]}).encode()
    assert 900_000 < len(body) < 1 << 20
    server.routes["/v1/models"] = (200, body)
    _user_config(cli, {"provider": {"local": {"base_url": f"{server.url}/v1"}}})
    rows = {row["id"]: row for row in cli.json("models", "--dir", str(project), "--json")}
    assert rows["local"]["remote"]["models"] == ids

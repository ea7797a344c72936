"""``tether mcp serve --http``: the official ``mcp`` client over streamable HTTP, and the attacks the guard refuses.

The server is a real subprocess on 127.0.0.1; every request without the bearer token, with another one, with a Host
header of another name (DNS rebinding), from another origin, or with an oversized body is refused before a tool runs.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp import Client
from tether.mcp_server._http import allowed_hosts, is_loopback

from .serve_fixtures.served import HttpServer, Served

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def served(tmp_path: Path) -> Served:
    served = Served(tmp_path)
    (served.project / "notes.txt").write_text("secret plans\n")
    return served


@pytest.fixture
def server(served: Served) -> Iterator[HttpServer]:
    served.user_config({"permission": {"edit": "ask"}})
    running = HttpServer(served)
    try:
        yield running
    finally:
        running.close()


def _post(server: HttpServer, body: object, **headers: str) -> httpx2.Response:
    return httpx2.post(server.url, content=json.dumps(body), headers={**HEADERS, **headers}, timeout=30)


@pytest.mark.anyio
async def test_the_official_client_lists_and_calls_tools_with_the_token(
    served: Served, server: HttpServer
) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "once"})

    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {server.token}"}) as http,
        Client(
            streamable_http_client(server.url, http_client=http),
            mode="legacy",
            client_info=types.Implementation(name="http client", version="1"),
            elicitation_callback=elicit,
        ) as client,
    ):
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("read", {"path": "notes.txt"})
        written = await client.call_tool("write", {"path": "approved.txt", "content": "ok"})
    assert {"read", "grep", "edit"} <= names
    assert not result.is_error
    assert "secret plans" in "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    assert not written.is_error and (served.project / "approved.txt").read_text() == "ok"
    assert len(asked) == 1 and "approved.txt" in asked[0]  # the ask reached the user over the call's stream
    [session] = served.sessions()
    assert session["title"] == "mcp: http client"
    assert [p["tool"] for p in served.timeline(session["id"])] == ["read", "write"]


def test_a_request_without_the_token_or_with_another_is_refused(served: Served, server: HttpServer) -> None:
    missing = _post(server, INIT)
    wrong = _post(server, INIT, Authorization=f"Bearer {server.token[:-1]}x")
    basic = _post(server, INIT, Authorization=f"Basic {server.token}")
    for response in (missing, wrong, basic):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "secret" not in response.text
    assert served.sessions() == []


def test_a_rebinding_host_header_is_refused_even_with_the_token(server: HttpServer) -> None:
    port = server.url.rsplit(":", 1)[1].split("/")[0]
    auth = f"Bearer {server.token}"
    rebound = _post(server, INIT, Authorization=auth, Host=f"evil.example:{port}")
    other_port = _post(server, INIT, Authorization=auth, Host="127.0.0.1:1")
    foreign_origin = _post(server, INIT, Authorization=auth, Origin="http://evil.example")
    served = _post(server, INIT, Authorization=auth, Host=f"localhost:{port}")
    assert rebound.status_code in (403, 421) and other_port.status_code in (403, 421)
    assert foreign_origin.status_code == 403
    assert served.status_code == 200


def test_no_cors_header_is_ever_sent(server: HttpServer) -> None:
    auth = f"Bearer {server.token}"
    preflight = httpx2.options(
        server.url,
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
        timeout=30,
    )
    page = _post(server, INIT, Authorization=auth, Origin="http://evil.example")
    for response in (preflight, page):
        assert not any(h.lower().startswith("access-control-") for h in response.headers)


def test_an_oversized_body_is_refused(server: HttpServer) -> None:
    big = {**INIT, "params": {**INIT["params"], "padding": "x" * (5 * 1024 * 1024)}}  # type: ignore[dict-item]
    response = _post(server, big, Authorization=f"Bearer {server.token}")
    assert response.status_code == 413


def test_the_token_is_printed_once_and_stored_for_the_user_only(served: Served, server: HttpServer) -> None:
    path = served.cli.data_dir / "mcp-serve.token"
    assert path.read_text().strip() == server.token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    printed = server.close()
    assert printed.count(server.token) == 1


def test_a_configured_token_comes_from_its_variable(served: Served) -> None:
    served.user_config({"mcp_serve": {"token_env": "MY_MCP_TOKEN"}})
    env = {**served.cli.env, "MY_MCP_TOKEN": "a-long-configured-token-value"}
    running = HttpServer(served, env=env, token_line=False)
    try:
        ok = _post(running, INIT, Authorization="Bearer a-long-configured-token-value")
        made = _post(running, INIT)
    finally:
        printed = running.close()
    assert ok.status_code == 200 and made.status_code == 401
    assert "a-long-configured-token-value" not in printed
    assert not (served.cli.data_dir / "mcp-serve.token").exists()


def test_a_short_or_unset_configured_token_is_refused(served: Served) -> None:
    served.user_config({"mcp_serve": {"token_env": "MY_MCP_TOKEN"}})
    result = served.cli.run("mcp", "serve", "--http", "--dir", str(served.project))
    assert result.code == 2 and "MY_MCP_TOKEN" in result.stderr


def test_loopback_hosts_and_the_allow_list() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("evil.example")
    assert allowed_hosts("127.0.0.1", 8000) == ["127.0.0.1:8000", "localhost:8000", "[::1]:8000"]
    assert allowed_hosts("::1", 9, ["tether.lan:9"]) == [
        "127.0.0.1:9",
        "localhost:9",
        "[::1]:9",
        "tether.lan:9",
    ]

"""Attacks on ``tether serve``: a stranger without the token, a hostile page, DNS rebinding, oversized bodies.

Each test performs the attack against a live server and checks that it was refused and that nothing ran.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tether.errors import UsageError
from tether.server import MAX_BODY_BYTES, TOKEN_FILE, allowed_hosts, is_loopback, server_token
from tether.server._routes import ROUTES
from tether.server._security import check_origins
from tether.testing import tool_call

from .conftest import TOKEN, Live, start

FRIEND = "http://localhost:5173"


@pytest.fixture
def cors(tmp_path: Path) -> Iterator[Live]:
    yield from start(tmp_path, cors_origins=[FRIEND])


def _path(template: str) -> str:
    return template.replace("{session_id}", "ses_x").replace("{request_id}", "per_x")


def _raw(live: Live, request: bytes) -> bytes:
    """Send raw bytes (headers a client library would not send) and read the whole answer."""
    host, port = live.host.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("token", [None, "wrong", TOKEN.upper(), TOKEN + "x", TOKEN[:-1]])
def test_every_route_refuses_a_missing_or_wrong_token(live: Live, token: str | None) -> None:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    with httpx2.Client(base_url=live.url, timeout=10) as http:
        for route in (*ROUTES, *[r for r in ROUTES if r.method == "GET"]):
            response = http.request(route.method, _path(route.path), headers=headers, json={})
            assert response.status_code == 401, (route.path, response.text)
            assert response.headers["www-authenticate"] == 'Bearer realm="tether"'
            assert TOKEN not in response.text
        # the token in a query string or a cookie is not a token
        assert http.get("/api/health", params={"token": TOKEN}).status_code == 401
        assert http.get("/api/health", headers={"cookie": f"token={TOKEN}"}).status_code == 401
        assert http.get("/api/health", headers={"authorization": f"Basic {TOKEN}"}).status_code == 401


def test_a_stranger_cannot_prompt_or_approve_and_nothing_runs(live: Live) -> None:
    with live.client() as api:
        session = api.create_session()
    live.script([tool_call("bash", {"command": "touch canary.txt", "description": "x"}, id="c1")], ["ok"])
    with httpx2.Client(base_url=live.url, timeout=10) as http:
        response = http.post(f"/api/sessions/{session['id']}/prompt", json={"text": "run it"})
        assert response.status_code == 401
        with http.stream("GET", "/api/events") as events:
            assert events.status_code == 401
    with live.client() as api:
        assert api.health()["running"] == 0
        assert live.scripts  # the script was never played
    assert not (live.project / "canary.txt").exists()


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1.evil.example", FRIEND])
def test_a_hostile_page_is_refused_even_with_the_token(live: Live, origin: str) -> None:
    # FRIEND is not configured on this server: it is as hostile as any other origin
    with httpx2.Client(base_url=live.url, timeout=10) as http:
        auth = {"authorization": f"Bearer {TOKEN}", "origin": origin}
        response = http.post("/api/sessions", headers=auth, json={})
        assert response.status_code == 403
        assert "access-control-allow-origin" not in response.headers
        preflight = http.options(
            "/api/sessions", headers={"origin": origin, "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 403
        assert "access-control-allow-origin" not in preflight.headers
    with live.client() as api:
        assert api.sessions() == []


def test_the_servers_own_page_and_a_configured_origin_are_served_without_a_wildcard(cors: Live) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    with httpx2.Client(base_url=cors.url, timeout=10) as http:
        own = http.post("/api/sessions", headers={**auth, "origin": cors.url}, json={})
        assert own.status_code == 201 and "access-control-allow-origin" not in own.headers
        friend = http.get("/api/health", headers={**auth, "origin": FRIEND})
        assert friend.status_code == 200
        assert friend.headers["access-control-allow-origin"] == FRIEND
        preflight = http.options(
            "/api/sessions", headers={"origin": FRIEND, "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == FRIEND
        assert "authorization" in preflight.headers["access-control-allow-headers"]
        # the preflight needs no token, but the request still does
        assert http.get("/api/health", headers={"origin": FRIEND}).status_code == 401
        assert http.get("/api/health", headers={**auth, "origin": "http://evil.example"}).status_code == 403


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost", "0.0.0.0:{port}"]
)
def test_a_rebinding_host_header_is_refused_even_with_the_token(live: Live, host: str) -> None:
    port = live.host.split(":")[1]
    with httpx2.Client(base_url=live.url, timeout=10) as http:
        response = http.get(
            "/api/health", headers={"host": host.format(port=port), "authorization": f"Bearer {TOKEN}"}
        )
        assert response.status_code == 421
        assert http.get("/", headers={"host": "evil.example"}).status_code == 421


def test_a_request_without_a_host_header_is_refused(live: Live) -> None:
    answer = _raw(live, f"GET /api/health HTTP/1.0\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 421")


def test_an_oversized_body_is_refused_before_it_is_parsed(live: Live) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    big = b'{"title": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'
    with httpx2.Client(base_url=live.url, timeout=10) as http:
        declared = http.post("/api/sessions", headers=auth, content=big)
        assert declared.status_code == 413

        def chunks() -> Iterator[bytes]:
            for start in range(0, len(big), 65536):
                yield big[start : start + 65536]

        chunked = http.post("/api/sessions", headers=auth, content=chunks())
        assert chunked.status_code == 413
        lying = _raw(
            live,
            f"POST /api/sessions HTTP/1.1\r\nHost: {live.host}\r\nAuthorization: Bearer {TOKEN}\r\n"
            "Content-Length: abc\r\nConnection: close\r\n\r\n{}".encode(),
        )
        assert lying.split(b"\r\n")[0].split()[1] in (b"400", b"413")
    with live.client() as api:
        assert api.sessions() == []


def test_the_token_file_is_private_and_a_planted_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    canary = tmp_path / "canary.txt"
    canary.write_text("untouched")
    (data / TOKEN_FILE).symlink_to(canary)
    token, made = server_token(data, environ={})
    assert made and len(token) >= 40
    path = data / TOKEN_FILE
    assert not path.is_symlink() and path.read_text().strip() == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert canary.read_text() == "untouched"
    assert server_token(data, environ={})[0] != token  # a new token per server


def test_a_configured_token_must_be_long(tmp_path: Path) -> None:
    assert server_token(tmp_path, environ={"TETHER_SERVER_TOKEN": "s" * 16}) == ("s" * 16, False)
    assert not (tmp_path / TOKEN_FILE).exists()
    for weak in ("", "short", "x" * 15, "tab\there-is-sixteen"):
        with pytest.raises(UsageError):
            server_token(tmp_path, environ={"TETHER_SERVER_TOKEN": weak})


def test_no_wildcard_or_malformed_cors_origin_is_accepted() -> None:
    for origin in (
        "*",
        "http://*",
        "https://*.example.com",
        "evil.example",
        "http://a.example/path",
        "file://x",
    ):
        with pytest.raises(UsageError):
            check_origins([origin])
    check_origins([FRIEND, "https://tools.example.com:8443"])


def test_the_host_allow_list_holds_only_loopback_names_and_the_bound_host() -> None:
    assert allowed_hosts("127.0.0.1", 80) == ["127.0.0.1:80", "localhost:80", "[::1]:80"]
    assert allowed_hosts("::1", 80) == ["127.0.0.1:80", "localhost:80", "[::1]:80"]
    assert "192.168.1.5:80" in allowed_hosts("192.168.1.5", 80)
    assert [is_loopback(h) for h in ("127.0.0.1", "localhost", "[::1]", "127.1.2.3", "0.0.0.0", "example.com")] == [
        True, True, True, True, False, False
    ]  # fmt: skip


def test_the_inspector_page_needs_no_token_and_forbids_framing_and_foreign_scripts(live: Live) -> None:
    with httpx2.Client(base_url=live.url, timeout=10) as http:
        page = http.get("/")
        assert page.status_code == 200 and "<html" in page.text and TOKEN not in page.text
        policy = page.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
        assert http.get("/static/app.js").status_code == 200
        assert http.get("/static/../../etc/passwd").status_code == 404
        assert http.get("/static/%2e%2e%2fserver.token").status_code == 404
    assert os.path.exists(live.data_dir)

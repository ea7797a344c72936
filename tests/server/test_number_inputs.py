"""Numbers a client sends (``Last-Event-ID``, ``?limit=``): anything that is not a plain whole number in range is a
400 that says what to send, never a 500 (a superscript digit passes ``str.isdigit`` but not ``int``; a 19-digit id
passes a length check but not SQLite's 64-bit integer)."""

from __future__ import annotations

import json

import httpx2
import pytest

from .conftest import Live
from .test_security import _raw  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize("value", [b"\xb2", b"1\xb9", b"9999999999999999999", b"9223372036854775808"])
def test_a_last_event_id_that_is_no_event_id_is_a_clear_400(live: Live, value: bytes) -> None:
    # raw bytes: a header is bytes on the wire, read by the server as latin-1 (0xb2 is '²', which isdigit() accepts)
    answer = _raw(
        live,
        b"GET /api/events HTTP/1.1\r\nHost: " + live.host.encode() + b"\r\nAuthorization: Bearer "
        + live.token.encode() + b"\r\nLast-Event-ID: " + value + b"\r\nConnection: close\r\n\r\n",
    )  # fmt: skip
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), answer
    assert "Last-Event-ID" in json.loads(body)["detail"]


def test_the_largest_event_id_is_accepted(live: Live) -> None:
    """The boundary: a 64-bit id is an id (nothing after it yet), streamed, not refused."""
    headers = {"authorization": f"Bearer {live.token}", "last-event-id": str(2**63 - 1)}
    with (
        httpx2.Client(base_url=live.url, headers=headers, timeout=30) as http,
        http.stream("GET", "/api/events") as response,
    ):
        assert response.status_code == 200
        assert next(response.iter_lines()) == "retry: 1000"


@pytest.mark.parametrize("value", ["²", "1²", "١٠"])
def test_a_limit_that_is_no_whole_number_is_a_clear_400(live: Live, value: str) -> None:
    headers = {"authorization": f"Bearer {live.token}"}
    with httpx2.Client(base_url=live.url, headers=headers, timeout=30) as http:
        answer = http.get("/api/sessions", params={"limit": value})
    assert answer.status_code == 400, answer.text
    assert "limit" in answer.json()["detail"]

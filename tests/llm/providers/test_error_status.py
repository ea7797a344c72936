"""An HTTP error status and body become the most specific ProviderError, whatever shape the server's body has."""

from __future__ import annotations

from typing import Any

import pytest

from tether.errors import (
    ContextOverflowError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRateLimitError,
    ProviderServerError,
)
from tether.llm.providers._errors import error_from_status, map_error, retry_after, stream_error


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (401, ProviderAuthError),
        (403, ProviderAuthError),
        (404, ProviderNotFoundError),
        (408, ProviderConnectionError),
        (409, ProviderServerError),
        (503, ProviderServerError),
        (529, ProviderRateLimitError),
        (400, ProviderBadRequestError),
    ],
)
def test_each_status_maps_to_its_error_class(status: int, cls: type[ProviderError]) -> None:
    error = error_from_status(status, "fallback")
    assert type(error) is cls
    assert error.message == "fallback"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("plain text from a proxy", "plain text from a proxy"),
        ({"error": "a bare string error"}, "a bare string error"),
        ({"error": ["not", "a", "mapping"]}, "fallback"),
        ({"type": "error", "message": "top-level message"}, "top-level message"),
        (None, "fallback"),
    ],
)
def test_the_message_comes_from_whatever_error_shape_the_body_has(body: Any, message: str) -> None:
    assert error_from_status(400, "fallback", body=body).message == message


def test_a_streamed_error_code_under_400_maps_by_its_code() -> None:
    error = error_from_status(
        200, "x", body={"error": {"code": "context_length_exceeded", "message": "too long"}}
    )
    assert type(error) is ContextOverflowError


def test_retry_after_ignores_values_it_cannot_read() -> None:
    assert retry_after({"retry-after-ms": "soon", "retry-after": "2"}) == 2.0
    assert retry_after({"retry-after": "-5"}) == 0.0
    assert retry_after({"retry-after-ms": ""}) is None
    assert retry_after(None) is None


def test_an_unknown_exception_becomes_a_plain_provider_error_with_its_text() -> None:
    error = map_error(RuntimeError("something odd"))
    assert type(error) is ProviderError and error.message == "something odd"


def test_an_error_member_of_an_openai_stream_maps_by_its_code_and_says_something() -> None:
    overflow = stream_error({"code": "context_length_exceeded", "message": "too long"})
    assert type(overflow) is ContextOverflowError and overflow.message == "too long"
    assert stream_error({"type": "server_error"}).message == "An error occurred during streaming"

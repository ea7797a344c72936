"""Map what a provider answers, and what the HTTP client raises, to tether's :class:`~tether.errors.ProviderError`
subtree, in one place.

Mapping goes from the most specific signal to the least: a context-overflow message, the error ``type``/``code`` in
the body (streamed errors arrive with HTTP 200), then the HTTP status (:func:`error_from_status`, for an error
answer). Every exception of the HTTP clients (the local client's ``HTTPFailure``; ``httpx2.HTTPError``,
``httpx2.StreamError``: a refused connection, a reset mid-stream, a protocol error) is a retryable
:class:`ProviderConnectionError` (:func:`map_error`; a test walks httpx2's class tree). ``httpx2`` is never imported
here: an httpx exception can only come from a loaded httpx.
"""

from __future__ import annotations

import email.utils
import re
import sys
import time
from collections.abc import Mapping
from typing import Any

from ...errors import (
    ContextOverflowError,
    ProviderAuthError,
    ProviderBadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderNotFoundError,
    ProviderRateLimitError,
    ProviderServerError,
)

__all__ = [
    "StatusAnswer",
    "error_from_code",
    "error_from_status",
    "is_context_overflow",
    "map_error",
    "stream_error",
]

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|input is too long"
    r"|too many (input )?tokens|exceeds? (the )?(available |max(imum)? )?context|reduce the length of the"
    r"|input length .{0,40}exceeds|requested \d+ tokens|token limit|context size|string_above_max_length",
    re.IGNORECASE,
)

_BY_CODE: dict[str, type[ProviderError]] = {
    "context_length_exceeded": ContextOverflowError,
    "rate_limit_exceeded": ProviderRateLimitError,
    "rate_limit_error": ProviderRateLimitError,
    "overloaded_error": ProviderRateLimitError,
    "server_error": ProviderServerError,
    "api_error": ProviderServerError,
    "internal_error": ProviderServerError,
    "timeout_error": ProviderConnectionError,
    "authentication_error": ProviderAuthError,
    "invalid_api_key": ProviderAuthError,
    "permission_error": ProviderAuthError,
    "billing_error": ProviderError,
    "insufficient_quota": ProviderError,  # retrying does not help; the account needs credit
    "not_found_error": ProviderNotFoundError,
    "model_not_found": ProviderNotFoundError,
    "invalid_request_error": ProviderBadRequestError,
    "request_too_large": ProviderBadRequestError,
    "invalid_prompt": ProviderBadRequestError,
}


def is_context_overflow(message: str | None, code: str | None = None) -> bool:
    """Whether an error says the request does not fit the model's context window."""
    if code == "context_length_exceeded":
        return True
    return bool(message) and _OVERFLOW.search(message or "") is not None


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date), when present."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw) if raw else None
        return None if parsed is None else max(parsed.timestamp() - time.time(), 0.0)


def _body_error(body: Any) -> tuple[str | None, str | None]:
    """``(code or type, message)`` from the error shapes OpenAI, Anthropic and compatible servers send."""
    if not isinstance(body, Mapping):
        return None, body if isinstance(body, str) else None
    err: Any = body.get("error", body)
    if isinstance(err, str):
        return None, err
    if not isinstance(err, Mapping):
        return None, None
    code = err.get("code") or err.get("type")
    message = err.get("message")
    return (str(code) if code is not None else None), (str(message) if message is not None else None)


def error_from_code(
    code: str | None, message: str, *, body: Any = None, status: int | None = None
) -> ProviderError:
    """The mapped error for a streamed failure identified by an error ``code``/``type`` (no useful status)."""
    if is_context_overflow(message, code):
        return ContextOverflowError(message, status=status, body=body)
    cls = _BY_CODE.get(code or "", ProviderError)
    if cls is ProviderRateLimitError:
        return ProviderRateLimitError(message, status=status, body=body)
    return cls(message, status=status, body=body)


def error_from_status(
    status: int, message: str, *, body: Any = None, headers: Mapping[str, str] | None = None
) -> ProviderError:
    """The mapped error for an HTTP error response."""
    code, body_message = _body_error(body)
    text = body_message or message
    if status < 400 or code in ("insufficient_quota", "billing_error"):
        return error_from_code(code, text, body=body, status=status)
    if is_context_overflow(text, code):
        return ContextOverflowError(text, status=status, body=body)
    if status in (429, 529):
        return ProviderRateLimitError(text, status=status, body=body, retry_after=retry_after(headers))
    if status in (401, 402, 403):
        return ProviderAuthError(text, status=status, body=body)
    if status == 404:
        return ProviderNotFoundError(text, status=status, body=body)
    # A retryable answer may say when to come back (a 503 during maintenance does): the wait travels with it.
    if status in (408, 499):
        return ProviderConnectionError(text, status=status, body=body, retry_after=retry_after(headers))
    if status == 409 or status >= 500:
        return ProviderServerError(text, status=status, body=body, retry_after=retry_after(headers))
    return ProviderBadRequestError(text, status=status, body=body)


class StatusAnswer(Exception):
    """An HTTP error answer, as the cause of the :class:`ProviderError` it was mapped to."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def stream_error(body: Any) -> ProviderError:
    """The mapped error an OpenAI stream reports in an ``error`` member (``body``: that member), by its code."""
    code, message = _body_error(body)
    return error_from_code(code, message or "An error occurred during streaming", body=body)


def map_error(exc: BaseException) -> ProviderError:
    """Map an exception of the HTTP client (a transport or stream failure) to a :class:`ProviderError`."""
    from ._http11 import HTTPFailure

    if isinstance(exc, HTTPFailure):
        return ProviderConnectionError(f"The connection to the provider failed: {exc}")
    httpx2 = sys.modules.get("httpx2")  # an httpx exception means httpx is loaded: never imported here
    if httpx2 is None:
        return ProviderError(str(exc) or type(exc).__name__)
    if isinstance(exc, httpx2.TimeoutException):
        return ProviderConnectionError(f"The provider timed out: {exc}")
    if isinstance(exc, httpx2.TransportError | httpx2.StreamError):
        return ProviderConnectionError(f"The connection to the provider failed: {exc or type(exc).__name__}")
    return ProviderError(str(exc) or type(exc).__name__)

"""The ``mcp`` SDK's exceptions, mapped in one place to the sentences tether shows (a call's failure, a server's
status).

A call's expected failures are :func:`call_errors`: an error response or a closed connection (``MCPError``), a result
that does not match the protocol (pydantic's ``ValidationError``), or one the SDK refuses (``RuntimeError``: the
declared output schema is missing or not met, the server asked for input tether cannot give). Connecting can fail in
more ways (the program is missing, the URL refuses, a task group wraps the error): :func:`describe` names the
innermost cause. ``tests/mcp/test_errors.py`` checks that every SDK exception class is mapped.
"""

from __future__ import annotations

import functools

from pydantic import ValidationError

__all__ = ["call_errors", "closed", "connect_errors", "describe", "leaf"]

_CLOSED = -32000  # the SDK's CONNECTION_CLOSED


def _mcp_error() -> type[Exception]:
    from mcp.shared.exceptions import MCPError

    return MCPError


@functools.cache
def call_errors() -> tuple[type[Exception], ...]:
    """The expected failures of one request (built on first use: the SDK loads only when a server is configured).

    ``RuntimeError`` covers the SDK's refusals (and ``UnexpectedClaimedResult``, its subclass)."""
    return (_mcp_error(), ValidationError, RuntimeError)


@functools.cache
def connect_errors() -> tuple[type[Exception], ...]:
    """The expected failures of starting and connecting a server."""
    import httpx2
    from mcp.client.streamable_http import StreamableHTTPError

    return (*call_errors(), OSError, ValueError, httpx2.HTTPError, StreamableHTTPError, ExceptionGroup)


def leaf(exc: BaseException) -> BaseException:
    """The first innermost exception of an ``ExceptionGroup`` (a transport's task group wraps its errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def closed(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection closed (the server exited or the stream ended)."""
    return isinstance(exc, _mcp_error()) and getattr(exc, "code", None) == _CLOSED


def describe(exc: BaseException) -> str:
    """One line for ``exc``: what went wrong, in words a person (or the model) can act on."""
    import httpx2

    found = leaf(exc)
    if isinstance(found, _mcp_error()):
        return f"the server answered with an error: {found.error.message}"  # type: ignore[attr-defined]
    if isinstance(found, FileNotFoundError):
        return f"the command was not found: {found.filename or found}"
    if isinstance(found, PermissionError):
        return f"the command cannot be run: {found}"
    if isinstance(found, httpx2.HTTPStatusError):
        return f"the server answered HTTP {found.response.status_code} for {found.request.url}"
    if isinstance(found, httpx2.HTTPError):
        return f"the HTTP request failed: {found or type(found).__name__}"
    if isinstance(found, ValidationError):
        return f"the server sent a result that does not match the MCP protocol: {found.error_count()} problem(s), first: {found.errors()[0]['msg']}"
    text = str(found) or type(found).__name__
    return text[:500]

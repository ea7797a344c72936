"""Connecting to PostgreSQL for the session store: the URL, the connect timeout, errors without the password.

A store URL is a libpq connection URI (``postgresql://user:password@host:port/dbname?...``; ``postgres://`` too).
Opening never hangs on an unreachable server: a ``connect_timeout`` (default :data:`CONNECT_TIMEOUT` seconds) is
added unless the URL names one. Every error and log line made from a URL or from a driver message goes through
:func:`redact`, so the password in the URL never appears in an error, a log or a repr.

This module does not import ``psycopg`` at import time: it is an optional extra (``tether[postgres]``), and the
SQLite default must work without it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import StoreError

if TYPE_CHECKING:
    import psycopg

__all__ = ["CONNECT_TIMEOUT", "connect", "describe", "is_postgres_url", "redact"]

CONNECT_TIMEOUT = 10
"""Seconds libpq waits for a server before opening fails (unless the URL sets ``connect_timeout``)."""

_SCHEMES = ("postgresql://", "postgres://")
_USERINFO = re.compile(r"(?P<head>postgres(?:ql)?://[^:@/?#]*):(?P<password>[^@/?#]*)@")
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)[^&#]*")


def is_postgres_url(value: str) -> bool:
    """Whether ``value`` names a PostgreSQL store (``postgresql://...`` or ``postgres://...``)."""
    return value.startswith(_SCHEMES)


def _passwords(url: str) -> list[str]:
    """Every password ``url`` holds (the userinfo's and a ``password=`` parameter's), as written and decoded."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [parts.password or ""]
    found += [value for key, value in parse_qsl(parts.query, keep_blank_values=True) if key == "password"]
    found += [unquote(value) for value in found]
    return sorted({value for value in found if value}, key=len, reverse=True)


def redact(text: str, url: str) -> str:
    """``text`` with the passwords of ``url`` (as written and decoded) replaced by ``***``."""
    text = _USERINFO.sub(r"\g<head>:***@", text)
    text = _QUERY_PASSWORD.sub(r"\g<head>***", text)
    for password in _passwords(url):
        text = text.replace(password, "***")
    return text


def describe(url: str) -> str:
    """The URL without its password, for errors and logs (``postgresql://user:***@host:5432/db``)."""
    return redact(url, url)


def connect(url: str, *, timeout: int = CONNECT_TIMEOUT, **options: Any) -> psycopg.Connection[Any]:
    """A new autocommit connection to ``url`` (blocking: call it in a worker thread).

    Raises:
        StoreError: ``psycopg`` is not installed, the URL is malformed, or the server cannot be reached or refuses
            the login within the timeout. The message never holds the password.
    """
    try:
        import psycopg
    except ImportError:
        raise StoreError(
            "A postgresql:// store needs the psycopg package: pip install 'tether[postgres]'"
        ) from None
    if "connect_timeout" not in url:
        options.setdefault("connect_timeout", timeout)
    try:
        return psycopg.connect(url, autocommit=True, **options)
    except (psycopg.Error, ValueError) as exc:
        message = redact(str(exc).strip(), url) or type(exc).__name__
        raise StoreError(f"Cannot open session store {describe(url)}: {message}") from None
